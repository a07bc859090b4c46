"""Read-only connections to one SQLite file, so that a process's reads do not queue on its writer.

WAL lets readers run beside each other and beside one writer, each statement on a snapshot of
what was committed when it started: a read on any of these connections sees every commit this
process made before it (autocommit, no transaction held between statements). A server's
concurrent retrievals spent 41% of their wall time waiting for the store's single connection;
SQLite releases the GIL while it steps, so reads on these overlap Python work on other threads.

The erasing checkpoint (``wal_checkpoint(TRUNCATE)``) cannot truncate the WAL while a reader
holds a snapshot of it, so :meth:`ReadPool.paused` holds new reads back and waits for those under
way: this process's own reads never delay an erasure.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = ["ReadPool", "read_only"]

T = TypeVar("T")


def read_only(path: str, busy_timeout_ms: int, cache_kib: int) -> Callable[[], sqlite3.Connection]:
    """What opens one reader: ``query_only`` and the writer's page cache size.

    Not mapped: every commit of the writer (a retrieval logs itself) or of another process makes a
    reader drop its page cache at its next read, and a mapped reader its whole map, after which
    every page faults in again. Eight retrievals at once in one process spent less CPU each with
    unmapped readers, with and without another process committing (7 of 8 alternating runs; ~0.3-0.6
    ms of ~10-14). The writer's connection maps the file while other processes seldom commit
    (:mod:`.mapping`).
    """

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.execute(f"PRAGMA cache_size = -{cache_kib}")
        except BaseException:
            conn.close()
            raise
        return conn

    return connect


class ReadPool:
    """Up to ``size`` connections opened by ``connect`` on first need, one per reading thread at a time."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], size: int) -> None:
        self._connect = connect
        self._size = size
        self._idle: list[sqlite3.Connection] = []
        self._opened = 0
        self._reading = 0
        self._paused = 0  # callers of paused() inside it or waiting to be
        self._closed = False
        self._cond = threading.Condition()

    def run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """``op`` on a connection of its own; waits while all are busy or the pool is paused."""
        conn = self._take()
        try:
            return op(conn)
        finally:
            self._give(conn)

    def _take(self) -> sqlite3.Connection:
        with self._cond:
            while True:
                if self._closed:
                    raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
                if not self._paused and (self._idle or self._opened < self._size):
                    break
                self._cond.wait()
            self._reading += 1
            if self._idle:
                return self._idle.pop()  # the most recently used: its page cache is the warmest
            self._opened += 1
        try:
            return self._connect()
        except BaseException:
            with self._cond:
                self._opened -= 1
                self._reading -= 1
                self._cond.notify_all()
            raise

    def _give(self, conn: sqlite3.Connection) -> None:
        with self._cond:
            self._reading -= 1
            if self._closed:
                self._opened -= 1
                conn.close()
            else:
                self._idle.append(conn)
            if self._paused or self._closed:
                self._cond.notify_all()  # a pause waits for this read: wake it too
            else:
                # One connection came back, so one reader can go on: waking all 40 of a server's
                # waiting threads would have 39 of them take the GIL only to wait again.
                self._cond.notify()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No read runs on this pool inside: new ones wait, those under way are waited for."""
        with self._cond:
            self._paused += 1
            while self._reading:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._paused -= 1
                self._cond.notify_all()

    def close(self) -> None:
        """Close the idle connections now and the busy ones when their read ends."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            conn.close()
