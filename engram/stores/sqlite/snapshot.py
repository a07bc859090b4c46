"""A read-only side connection that reads a user's rows and version in one snapshot.

The vector and keyword loads of a cold user read many rows; on the store's own connection they
would hold its lock for the whole read. Each load kind keeps one of these, so the two loads do not
queue behind each other either.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from engram.errors import StoreError
from engram.stores.sqlite.versions import REMOVALS_KEPT, USER_REMOVED

__all__ = ["USER_VERSION", "Changes", "Marks", "SnapshotReader", "catch_up"]

USER_VERSION = "SELECT version FROM keyword_stats WHERE user_id = ?"
_REMOVALS = "SELECT row FROM memory_removals WHERE user_id = ? AND seq > ? AND seq <= ?"
_CHUNK = 900  # rowids a statement: under SQLite's oldest limit of 999 parameters


@dataclass(frozen=True)
class Changes:
    """What changed for a user since an index read their rows (see :meth:`SnapshotReader.changed_since`)."""

    #: The rows to add: those inserted after the index's last, and those changed in place.
    rows: list[Any]
    #: The rowids removed or changed in place: each leaves the index before ``rows`` are added.
    removed: list[int]
    version: int
    #: The user's count of removals now (None: not known, from a file of the first layout).
    count: int | None

    def after(self, last: int) -> int:
        """The largest rowid an index that held every row up to ``last`` holds with these applied."""
        return max([last, *(int(r[0]) for r in self.rows)])


#: Per index: the user's count of removals when its rows were read, and its largest rowid.
Marks = weakref.WeakKeyDictionary[Any, tuple[int, int]]


def catch_up(
    index: Any, marks: Marks, read: Callable[[int, int], Changes | None],
    apply: Callable[[Changes, int], bool], turn: AbstractContextManager[Any],
) -> Changes | None:
    """Bring a held ``index`` up to date in place: ``read(last, removed)`` reads the changes since its
    mark, ``apply(changes, last)`` applies them (False: it cannot), both in ``turn`` (this process's
    writes to the user wait: :class:`~.user_cache.Turns`), and its mark moves. None when it has no
    mark or cannot be caught up (it must be loaded again)."""
    mark = marks.get(index)
    if mark is None:
        return None
    removed, last = mark
    with turn:
        changes = read(last, removed)
        if changes is None or not apply(changes, last):
            return None
        marks[index] = (removed if changes.count is None else changes.count, changes.after(last))
    return changes


class SnapshotReader:
    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = sqlite3.connect(self._path, timeout=10, isolation_level=None, check_same_thread=False)
                    self._conn.execute("PRAGMA query_only = ON")
                self._conn.execute("BEGIN")
                try:
                    yield self._conn
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"sqlite: {exc}") from exc

    @staticmethod
    def _counts(conn: sqlite3.Connection, user_id: str) -> tuple[int | None, int | None]:
        found = conn.execute(USER_VERSION, (user_id,)).fetchone()
        removed = conn.execute(USER_REMOVED, (user_id,)).fetchone()
        return None if found is None else int(found[0]), None if removed is None else int(removed[0])

    def read(self, user_id: str, sql: str, params: Sequence[Any]) -> tuple[list[Any], int | None, int | None]:
        """The rows of ``sql``, the user's version and their count of removals
        (:data:`~.versions.USER_REMOVED`; each None when they have none), as of one moment."""
        with self._snapshot() as conn:
            version, removed = self._counts(conn, user_id)
            rows = conn.execute(sql, params).fetchall()
        return rows, version, removed

    def changed_since(
        self, user_id: str, sql: str, params: Sequence[Any], *, last: int, removed: int, rowid: str = "rowid",
        rows: Callable[[Sequence[int]], tuple[str, Sequence[Any]]],
    ) -> Changes | None:
        """What an index of the user's rows (``sql`` with ``params``, ending in the user's WHERE;
        ``rowid`` names the rowid column) lacks, when it held every row up to rowid ``last`` as of
        their count of removals ``removed``: the rows inserted after ``last``, and the rows each
        removal since counted (``memory_removals``), to remove and, where they still exist, read
        again (``rows`` gives the statement that reads the user's rows of some rowids). None when the
        index must be read whole: the user has no counts, or more removals happened since than are
        kept (or their count started anew: the user was forgotten)."""
        with self._snapshot() as conn:
            version, now = self._counts(conn, user_id)
            if version is None or now is None or not 0 <= now - removed <= REMOVALS_KEPT:
                return None
            gone: list[int] = []
            if now != removed:
                gone = [int(r[0]) for r in conn.execute(_REMOVALS, (user_id, removed, now))]
                if len(gone) != now - removed:
                    return None
            found = conn.execute(f"{sql} AND {rowid} > ?", (*params, last)).fetchall()
            again = sorted({r for r in gone if r <= last})  # those after are read above
            for start in range(0, len(again), _CHUNK):
                found += conn.execute(*rows(again[start : start + _CHUNK])).fetchall()
        return Changes(found, gone, version, now)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
