"""Builds of users' in-memory indexes on one background thread: a first search of a large user is
answered another way (from SQL) while their index builds, and asks for the build only once.

Both stores build keyword postings this way (:mod:`engram.stores.sqlite.keyword`,
:mod:`engram.stores.postgres.keyword`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Builds"]


class Builds:
    """At most one build per user queued or running, on a thread started at the first build."""

    def __init__(self, thread_name: str) -> None:
        self._thread_name = thread_name
        self._building: set[str] = set()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __contains__(self, user_id: str) -> bool:
        """Whether a build of the user is queued or running."""
        with self._lock:
            return user_id in self._building

    def start(self, user_id: str, build: Callable[[], object]) -> bool:
        """Queue ``build`` unless one of the user is queued or running; whether it was queued."""
        with self._lock:
            if user_id in self._building:
                return False
            self._building.add(user_id)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix=self._thread_name)
            pool = self._pool

        def run() -> None:
            try:
                build()
            finally:
                with self._lock:
                    self._building.discard(user_id)

        pool.submit(run)
        return True

    def close(self) -> None:
        """Drop the queued builds and wait for the running one."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
