"""SQLite vector candidates: each user's vectors held in an :class:`~.vectors.ExactIndex`.

A search is a scan of the user's vectors in numpy or simsimd, with the GIL released, then a short
selection. :meth:`VectorMixin.start_vector_search` reads what the search needs from SQL on the
caller's thread and runs the rest on a worker: a search run whole on another thread first waited
for the store's lock behind the retrieval's keyword search, so the two barely overlapped.
"""

from __future__ import annotations

import builtins
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from engram.ext import Vector
from engram.model import Filters, Hit
from engram.stores.sql.rows import filter_sql
from engram.stores.sqlite.dialect import SQLITE
from engram.stores.sqlite.vectors import ExactIndex
from engram.text import ROLE_WORDS

__all__ = ["VectorMixin"]

T = TypeVar("T")
_SEARCH_THREADS = 2  # searches of concurrent retrievals; each is one core's work


class VectorMixin:
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore`."""

    _indexes: dict[str, ExactIndex]
    _dimensions: int | None
    _searches: ThreadPoolExecutor | None
    _searches_lock: threading.Lock

    if TYPE_CHECKING:
        _conn: sqlite3.Connection

        def _retry(self, op: Callable[[], T]) -> T: ...

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

        def _check_foreign_writes(self) -> None: ...

    def _index(self, user_id: str) -> ExactIndex:
        self._check_foreign_writes()
        index = self._indexes.get(user_id)
        if index is None:
            rows = self._conn.execute(
                "SELECT rowid, id, embedding, kind, status FROM memories "
                "WHERE user_id = ? AND embedding IS NOT NULL ORDER BY rowid",
                (user_id,),
            ).fetchall()
            dim = self._dimensions or (len(rows[0][2]) // 4 if rows else 1)
            index = ExactIndex(dim, capacity=max(1024, len(rows)))
            for rowid, memory_id, blob, kind, status in rows:
                index.add(rowid, memory_id, np.frombuffer(blob, dtype=np.float32), kind, status)
            self._indexes[user_id] = index
        return index

    def _prepare(self, user_id: str, filters: Filters) -> tuple[ExactIndex, set[int] | None]:
        """The user's index, and the rows the filters allow when the index cannot tell itself."""
        index = self._index(user_id)
        if filters == Filters(kinds=filters.kinds, statuses=filters.statuses):
            return index, None  # the index filters kinds and statuses itself
        where, params = filter_sql(SQLITE, filters)
        sql = f"SELECT m.rowid FROM memories m WHERE m.user_id = ? AND {where}"
        return index, {r[0] for r in self._conn.execute(sql, (user_id, *params))}

    def vector_search(self, user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]:
        index, allowed = self._retry(lambda: self._prepare(user_id, filters))
        # The matrix product runs outside the store lock (the index has its own).
        return index.search(query, n, statuses=filters.statuses, kinds=filters.kinds, allowed=allowed)

    def start_vector_search(
        self, user_id: str, query: Vector, n: int, filters: Filters
    ) -> Callable[[], builtins.list[Hit]]:
        """:meth:`vector_search` on a worker thread, its SQL on this one; the returned call waits
        for the hits."""
        index, allowed = self._retry(lambda: self._prepare(user_id, filters))
        search = self._search_pool().submit(
            index.search, query, n, statuses=filters.statuses, kinds=filters.kinds, allowed=allowed
        )
        return search.result

    def _search_pool(self) -> ThreadPoolExecutor:
        with self._searches_lock:
            if self._searches is None:
                self._searches = ThreadPoolExecutor(_SEARCH_THREADS, thread_name_prefix="engram-vectors")
            return self._searches

    def _stop_searches(self) -> None:
        with self._searches_lock:
            if self._searches is not None:
                self._searches.shutdown(wait=True)
                self._searches = None

    def vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        ids = list(dict.fromkeys(memory_ids))

        def cached() -> dict[str, Vector] | None:
            self._check_foreign_writes()
            index = self._indexes.get(user_id)
            return None if index is None else index.vectors(ids)

        found = self._retry(cached)
        if found is not None:
            return found
        out: dict[str, Vector] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self._read(
                f"SELECT id, embedding FROM memories WHERE +user_id = ? AND embedding IS NOT NULL "
                f"AND id IN ({','.join('?' * len(chunk))})",
                (user_id, *chunk),
            )
            for memory_id, blob in rows:
                out[memory_id] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def cached_vectors(self, user_id: str, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        out: dict[str, Vector] = {}
        unique = list(dict.fromkeys(content_hashes))
        roles = sorted(ROLE_WORDS)
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            rows = self._read(
                f"SELECT content_hash, embedding FROM memories WHERE user_id = ? AND content_hash IN "
                f"({','.join('?' * len(chunk))}) AND embedding IS NOT NULL "
                f"AND (role IS NULL OR lower(trim(role)) IN ({','.join('?' * len(roles))})) GROUP BY content_hash",
                [user_id, *chunk, *roles],
            )
            for digest, blob in rows:
                out[digest] = np.frombuffer(blob, dtype=np.float32).copy()
        return out
