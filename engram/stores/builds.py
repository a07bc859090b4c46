"""Builds of users' in-memory indexes on one background thread: a first search of a large user is
answered another way (from SQL) while their index builds, and asks for the build only once.

Both stores build keyword postings this way (:mod:`engram.stores.sqlite.keyword`,
:mod:`engram.stores.postgres.keyword`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from engram.pools import PerProcess

__all__ = ["Builds"]


class Builds:
    """At most one build per user queued or running, on a thread started at the first build."""

    def __init__(self, thread_name: str) -> None:
        # A forked child's builds are its own: the parent's queued ones never run there.
        self._state: PerProcess[tuple[set[str], ThreadPoolExecutor]] = PerProcess(
            lambda _: (set(), ThreadPoolExecutor(1, thread_name_prefix=thread_name))
        )
        self._lock = threading.Lock()

    def __contains__(self, user_id: str) -> bool:
        """Whether a build of the user is queued or running."""
        with self._lock:
            state = self._state.current()  # asking makes no pool
            return state is not None and user_id in state[0]

    def start(self, user_id: str, build: Callable[[], object]) -> bool:
        """Queue ``build`` unless one of the user is queued or running; whether it was queued."""
        with self._lock:
            building, pool = self._state.get()
            if user_id in building:
                return False
            building.add(user_id)

        def run() -> None:
            try:
                build()
            finally:
                with self._lock:
                    building.discard(user_id)

        pool.submit(run)
        return True

    def close(self) -> None:
        """Drop the queued builds and wait for the running one."""
        with self._lock:
            state = self._state.pop()
        if state is not None:
            state[1].shutdown(wait=True, cancel_futures=True)
