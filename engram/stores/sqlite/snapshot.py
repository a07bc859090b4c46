"""A read-only side connection that reads a user's rows and version in one snapshot.

The vector and keyword loads of a cold user read many rows; on the store's own connection they
would hold its lock for the whole read. Each load kind keeps one of these, so the two loads do not
queue behind each other either.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from engram.errors import StoreError
from engram.stores.sqlite.versions import USER_REMOVED

__all__ = ["USER_VERSION", "SnapshotReader"]

USER_VERSION = "SELECT version FROM keyword_stats WHERE user_id = ?"


class SnapshotReader:
    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def read(self, user_id: str, sql: str, params: Sequence[Any]) -> tuple[list[Any], int | None, int | None]:
        """The rows of ``sql``, the user's version and their count of removals
        (:data:`~.versions.USER_REMOVED`; each None when they have none), as of one moment."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = sqlite3.connect(self._path, timeout=10, isolation_level=None, check_same_thread=False)
                    self._conn.execute("PRAGMA query_only = ON")
                self._conn.execute("BEGIN")
                try:
                    found = self._conn.execute(USER_VERSION, (user_id,)).fetchone()
                    removed = self._conn.execute(USER_REMOVED, (user_id,)).fetchone()
                    rows = self._conn.execute(sql, params).fetchall()
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"sqlite: {exc}") from exc
        return rows, None if found is None else int(found[0]), None if removed is None else int(removed[0])

    def inserted_since(
        self, user_id: str, sql: str, params: Sequence[Any], removed: int,
    ) -> tuple[list[Any], int] | None:
        """The rows of ``sql`` (the user's rows after a rowid) and the user's version, while their
        count of removals is still ``removed``: every change since was then an insert, of a row
        after the ones an index read before holds (:mod:`.saved`). None otherwise."""
        rows, version, now = self.read(user_id, sql, params)
        return None if version is None or now != removed else (rows, version)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
