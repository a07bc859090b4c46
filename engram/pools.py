"""What a process makes for itself: worker threads, and values that hold threads, connections or
locks, each made again in a forked child.

A forked child inherits the parent's objects but not their threads, and a thread pool never starts
another thread for work it thinks its (vanished) idle workers will take: work handed to it waits
forever. Locks a parent's thread held at the fork stay held in the child. Each process therefore
makes its own pools, and whatever holds threads, connections or locks is made again in a child
(:class:`PerProcess`; ``Memory`` reopens its store). A child is told by its process id, not by
``os.register_at_fork`` alone: a server that forks in C (uWSGI's default) runs no Python fork hooks.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["PerProcess", "ProcessLock", "process_pool"]

T = TypeVar("T")


class ProcessLock:
    """A lock of this process's own, since a parent's thread may have held the inherited one at the
    fork. A Python fork makes the child's at once, in the forking thread (:func:`_forked`), before
    any other thread of the child runs; a fork in C runs no hooks, and there the child's first look
    makes it: threads looking first at the same moment all take the one ``setdefault`` keeps."""

    def __init__(self) -> None:
        self._locks = {os.getpid(): threading.RLock()}
        _LOCKS.add(self)

    def get(self) -> threading.RLock:
        pid = os.getpid()
        lock = self._locks.get(pid)
        if lock is None:
            lock = self._locks.setdefault(pid, threading.RLock())
        return lock

    def _made_again(self) -> None:
        self._locks = {os.getpid(): threading.RLock()}


_LOCKS: weakref.WeakSet[ProcessLock] = weakref.WeakSet()


def _forked() -> None:
    for lock in list(_LOCKS):
        lock._made_again()


os.register_at_fork(after_in_child=_forked)


class PerProcess(Generic[T]):
    """``make(previous)``'s value, made on first use in each process: a forked child makes its own
    (``previous`` is the value its parent held, None in the first process)."""

    def __init__(self, make: Callable[[T | None], T]) -> None:
        self._make = make
        self._held: tuple[int, T] | None = None
        # Its own lock, not one for every value: a child reopening a store holds it for a while.
        self._lock = ProcessLock()

    def get(self) -> T:
        pid = os.getpid()
        held = self._held
        if held is not None and held[0] == pid:
            return held[1]
        with self._lock.get():  # reentrant: a value made under it may make a pool
            held = self._held
            if held is None or held[0] != pid:
                held = self._held = (pid, self._make(None if held is None else held[1]))
            return held[1]

    def current(self) -> T | None:
        """This process's value if it was made here, else None (nothing is made)."""
        held = self._held
        return held[1] if held is not None and held[0] == os.getpid() else None

    def pop(self) -> T | None:
        """This process's value, if made, no longer held (the next :meth:`get` makes another)."""
        with self._lock.get():
            value = self.current()
            if value is not None:
                self._held = None
            return value


_POOLS: dict[str, PerProcess[ThreadPoolExecutor]] = {}
_POOLS_LOCK = ProcessLock()


def process_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """This process's pool ``name`` (its threads' name prefix), of ``workers`` threads."""
    with _POOLS_LOCK.get():
        pool = _POOLS.get(name)
        if pool is None:
            pool = _POOLS[name] = PerProcess(lambda _: ThreadPoolExecutor(workers, thread_name_prefix=name))
    return pool.get()
