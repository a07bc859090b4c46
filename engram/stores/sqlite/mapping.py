"""Whether the store's own connection reads the file through a memory map: yes, unless other
processes commit often.

A mapped page is no system call and no copy (1,000 users, 100k memories, one process: CPU a
retrieval 7.4 -> 6.6 ms). But whenever another connection has committed since its last read,
SQLite drops the connection's whole map (``pagerBeginReadTransaction`` in its pager) and every page
read after faults in again, which costs more than reading pages into the page cache: with another
process committing 75 times a second (a second service worker, which logs each retrieval) a
retrieval cost ~0.6 ms more mapped than not. :class:`FileMap` turns the map off once other
processes' commits come :data:`BUSY` times within :data:`WINDOW_S`, and on again after
:data:`QUIET_S` without any.
"""

from __future__ import annotations

import sqlite3
import time
from collections import deque
from collections.abc import Callable

__all__ = ["BUSY", "QUIET_S", "WINDOW_S", "FileMap"]

#: Other processes' commits within :data:`WINDOW_S` that turn the map off.
BUSY = 10
WINDOW_S = 1.0
#: Seconds without another process's commit before the map is turned on again.
QUIET_S = 10.0


class FileMap:
    """The map of one connection; called with the connection's lock held."""

    def __init__(
        self, conn: sqlite3.Connection, mapped_bytes: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._conn = conn
        self.clock = clock
        self._bytes = mapped_bytes
        self._foreign: deque[float] = deque(maxlen=BUSY)
        self.mapped = False
        self._set(True)

    def observe(self, foreign_commit: bool) -> None:
        """After each look at the file's change counter: did another connection commit?"""
        if not foreign_commit and self.mapped:  # the usual case, several times a retrieval
            return
        now = self.clock()
        if foreign_commit:
            self._foreign.append(now)
            if self.mapped and len(self._foreign) == BUSY and now - self._foreign[0] <= WINDOW_S:
                self._set(False)
        elif not self.mapped and now - self._foreign[-1] > QUIET_S:
            self._set(True)

    def _set(self, mapped: bool) -> None:
        self._conn.execute(f"PRAGMA mmap_size = {self._bytes if mapped else 0}")
        self.mapped = mapped
