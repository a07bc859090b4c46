"""What a process makes for itself: worker threads, and the count of forks that tells a forked child
from the process that made something.

A forked child inherits the parent's objects but not their threads, and a thread pool never starts
another thread for work it thinks its (vanished) idle workers will take: work handed to it waits
forever. Locks a parent's thread held at the fork stay held in the child. Each process therefore
makes its own pools, and whatever holds threads, connections or locks is made again in a child
(:class:`PerProcess`; ``Memory`` reopens its store).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["PerProcess", "forks", "process_pool"]

T = TypeVar("T")

_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_LOCK = threading.RLock()  # a value made under it may make a pool
_FORKS = 0


def _forked() -> None:
    global _FORKS, _LOCK
    _FORKS += 1
    _LOCK = threading.RLock()  # a parent's thread may have held it at the fork


os.register_at_fork(after_in_child=_forked)


def forks() -> int:
    """How many forks led to this process: 0 in a process started anew, one more in each forked child."""
    return _FORKS


def process_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """This process's pool ``name`` (its threads' name prefix), of ``workers`` threads."""
    with _LOCK:
        held = _POOLS.get(name)
        if held is None or held[0] != _FORKS:
            held = _POOLS[name] = (_FORKS, ThreadPoolExecutor(workers, thread_name_prefix=name))
        return held[1]


class PerProcess(Generic[T]):
    """``make(previous)``'s value, made on first use in each process: a forked child makes its own
    (``previous`` is the value its parent held, None in the first process)."""

    def __init__(self, make: Callable[[T | None], T]) -> None:
        self._make = make
        self._held: tuple[int, T] | None = None

    def get(self) -> T:
        held = self._held
        if held is not None and held[0] == _FORKS:
            return held[1]
        with _LOCK:
            held = self._held
            if held is None or held[0] != _FORKS:
                held = self._held = (_FORKS, self._make(None if held is None else held[1]))
            return held[1]

    def pop(self) -> T | None:
        """This process's value, if made, no longer held (the next :meth:`get` makes another)."""
        with _LOCK:
            held = self._held
            if held is None or held[0] != _FORKS:
                return None
            self._held = None
            return held[1]
