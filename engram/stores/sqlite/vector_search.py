"""SQLite vector candidates: each user's vectors held in an :class:`~.vectors.ExactIndex`.

A search is a scan of the user's vectors in numpy or simsimd, with the GIL released, then a short
selection. :meth:`VectorMixin.start_vector_search` reads what the search needs from SQL on the
caller's thread and runs the rest on a worker: a search run whole on another thread first waited
for the store's lock behind the retrieval's keyword search, so the two barely overlapped.

The indexes live in a :class:`~.user_cache.UserIndexCache` bounded in bytes (least recently searched user dropped
first). A user's first search loads their index on a read-only connection of its own, outside the
store's lock, so a cold tenant's load does not hold up other users' searches and writes; writes
landing during a load are caught by :meth:`~.user_cache.UserIndexCache.written` (see there).
"""

from __future__ import annotations

import builtins
import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable, Sequence, Sized
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from engram.config import ann_above, vector_cache_bytes
from engram.errors import StoreError
from engram.ext import Vector
from engram.model import Filters, Hit
from engram.pools import PerProcess
from engram.stores.facets import facet_matrices
from engram.stores.sql.rows import filter_sql
from engram.stores.sqlite import saved
from engram.stores.sqlite.ann import AnnIndex, attached, index_class, load_index
from engram.stores.sqlite.dialect import SQLITE
from engram.stores.sqlite.resaves import Resaves, caught_up_held
from engram.stores.sqlite.side_files import erase_user
from engram.stores.sqlite.snapshot import USER_VERSION, Changes, Marks, SnapshotReader, catch_up
from engram.stores.sqlite.user_cache import Turns, UserIndexCache
from engram.stores.sqlite.vectors import ExactIndex
from engram.stores.sqlite.versions import USER_REMOVED
from engram.text import ROLE_WORDS

__all__ = ["VectorMixin"]

T = TypeVar("T")
log = logging.getLogger("engram")


_SEARCH_THREADS = 2  # searches of concurrent retrievals; each is one core's work
_USER_VECTORS = (
    "SELECT rowid, id, embedding, kind, status FROM memories "
    "WHERE user_id = ? AND embedding IS NOT NULL"  # in any order: sorting the rows cost 40-80 ms at 10k
)
#: Some of the user's rows, by rowid: looked up one by one (the user's index would read all of theirs).
_VECTORS_OF_ROWS = (
    "SELECT rowid, id, embedding, kind, status FROM memories "
    "WHERE rowid IN ({rows}) AND +user_id = ? AND embedding IS NOT NULL"
)
#: A saved index caught up by this share of its rows or more is saved again.
_RESAVE_SHARE = 0.05
#: A saved matrix has a spare row for every this many rows.
_SPARE_SHARE = 20


def _applied(index: ExactIndex, changes: Changes) -> bool:
    """Apply a user's changes to ``index``; False (nothing applied) when a row holds a vector of
    another size than the index's (an index of no rows holds)."""
    if any(len(r[2]) != 4 * index.dimensions for r in changes.rows):
        return False
    for rowid in changes.removed:
        index.remove(rowid)
    removed = set(changes.removed)
    for rowid, memory_id, blob, kind, status in sorted(changes.rows):
        # Rows this process inserted are held already, as they are: added again, each would leave a
        # hole (and at a million rows a rebuild of the approximate index).
        if rowid in removed or not index.holds(rowid, memory_id):
            index.add(rowid, memory_id, np.frombuffer(blob, dtype=np.float32), kind, status)
    return True


class VectorMixin:
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore`."""

    _indexes: UserIndexCache[ExactIndex]
    _dimensions: int | None
    _searches: PerProcess[ThreadPoolExecutor]
    _loader: SnapshotReader
    _saves: PerProcess[ThreadPoolExecutor]
    _saved_lock: threading.Lock
    _erasures: dict[str, int]
    _resaves: Resaves
    _postings: UserIndexCache[Any]
    _turns: Turns

    if TYPE_CHECKING:
        path: str
        _conn: sqlite3.Connection

        def _retry(self, op: Callable[[], T]) -> T: ...

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

        def _check_foreign_writes(self) -> None: ...

        def _postings_due(self, user_id: str, size: int) -> None: ...

    def _init_vectors(self, cache_bytes: int | None) -> None:
        self._indexes = UserIndexCache(vector_cache_bytes() if cache_bytes is None else cache_bytes)
        self._dimensions = None
        self._searches = PerProcess(lambda _: ThreadPoolExecutor(_SEARCH_THREADS, thread_name_prefix="engram-vectors"))
        self._loader = SnapshotReader(self.path)
        # Catch-ups read a few rows, under the user's turn (Turns): behind a cold user's whole load
        # on the loaders' connections they held up this process's writes for that load's length.
        self._changes_reader = SnapshotReader(self.path)
        self._ann_above = ann_above()
        self._saves = PerProcess(lambda _: ThreadPoolExecutor(1, thread_name_prefix="engram-index-saves"))
        self._saved_lock = threading.Lock()
        self._erasures: dict[str, int] = {}
        self._vector_marks: Marks = weakref.WeakKeyDictionary()
        self._vectors_mapped = saved.Mapped()

    def _vectors_held(self, user_id: str) -> bool:
        """Whether the user's vectors are in memory (their load, if any, is done)."""
        return user_id in self._indexes

    def _index(self, user_id: str) -> ExactIndex:
        """The user's index. Call without the store's lock: a load must not hold it."""
        self._retry(self._check_foreign_writes)
        return self._cached_index(user_id)

    def _cached_index(self, user_id: str) -> ExactIndex:
        self._vectors_mapped.drop_changed(self._indexes, user_id)
        return self._indexes.get_or_load(
            user_id, lambda: self._load_index(user_id), lambda: self._user_version(user_id),
            lambda held: self._caught_up(user_id, held),
        )

    def _caught_up(self, user_id: str, index: ExactIndex, *, resave: bool = True) -> tuple[ExactIndex, int] | None:
        """``index`` (held, out of date: another process wrote to the user) with the changes since
        it was read (:meth:`~.snapshot.SnapshotReader.changed_since`: the rows inserted after it,
        those removed or changed since); None when it must be loaded again. At a million memories a
        load took 25-40 s, this a few milliseconds. A removal erased the user's files: ``resave``
        has them saved again from here (:mod:`.resaves`)."""
        changes = catch_up(index, self._vector_marks, lambda last, removed: self._changes(user_id, last, removed),
                           lambda found, _last: _applied(index, found), self._turns.of(user_id))
        if changes is None:
            return None
        if changes.removed and resave:
            self._resave_later(user_id, index)  # not held while it is caught up
        return index, changes.version

    def _resave_vectors(self, user_id: str) -> None:
        """Save the user's held vectors (and approximate index) again, brought up to date first."""
        self._retry(self._check_foreign_writes)
        found = caught_up_held(
            self._indexes, user_id, version=lambda: self._user_version(user_id),
            caught_up=lambda held: self._caught_up(user_id, held, resave=False))
        if found is not None:
            index, version = found
            self._save_vectors(user_id, index, version, self._vector_marks[index][0])
            if isinstance(index, AnnIndex):
                index.save_again()

    def _changes(self, user_id: str, last: int, removed: int) -> Changes | None:
        def rows(rowids: Sequence[int]) -> tuple[str, Sequence[Any]]:
            return _VECTORS_OF_ROWS.format(rows=",".join("?" * len(rowids))), (*rowids, user_id)

        return self._changes_reader.changed_since(
            user_id, _USER_VECTORS, (user_id,), last=last, removed=removed, rows=rows)

    def _user_version(self, user_id: str) -> int | None:
        """Moves with every change to the user's vectors, kinds or statuses: each is a transaction
        that inserts or deletes one of the user's rows, which moves their ``keyword_stats`` version
        (schema migration 6); a status alone changes only beside a delete (a fact version
        reinstated). None when there is none to read: the index is loaded again."""
        try:
            rows = self._read(USER_VERSION, (user_id,))
        except StoreError:
            return None
        return int(rows[0][0]) if rows else None

    def _removed(self, user_id: str) -> int | None:
        """The user's count of removals (:data:`~.versions.USER_REMOVED`), None when they have none."""
        rows = self._read(USER_REMOVED, (user_id,))
        return int(rows[0][0]) if rows else None

    def _load_index(self, user_id: str) -> tuple[ExactIndex, int | None]:
        """The user's index and their version: from their saved vectors while those are current (or
        behind by inserts alone: the rows after them are read and added), else read in one SQL
        snapshot (and saved for the next process when the user is large)."""
        if self.path == ":memory:":  # no second connection sees this database
            rows = self._read(_USER_VECTORS, (user_id,))
            version, removed = self._user_version(user_id), None
        else:
            caught_up = self._saved_index(user_id)
            if caught_up is not None:
                index, version = caught_up
                return attached(index, user_id, self.path, self._holds_all), version
            rows, version, removed = self._loader.read(user_id, _USER_VECTORS, (user_id,))
        dim = self._dimensions or (len(rows[0][2]) // 4 if rows else 1)
        rowids, ids, blobs, kinds, statuses = (list(c) for c in zip(*rows, strict=True)) if rows else ([],) * 5
        index = load_index(
            dim, rowids, ids, blobs, kinds, statuses, user_id=user_id, db_path=self.path, ann_above=self._ann_above,
            current=self._holds_all,
        )
        if version is not None and removed is not None:
            self._vector_marks[index] = (removed, max(rowids, default=-1))
            if len(rowids) >= saved.SAVE_ABOVE:
                self._save_vectors(user_id, index, version, removed)
            self._postings_due(user_id, len(rowids))
        return index, version

    def _save_vectors(self, user_id: str, index: ExactIndex, version: int, removed: int) -> None:
        # Copies (writes may follow), the matrix with spare rows: an index mapped from the file takes
        # its first inserts there, where growing would copy the whole matrix (1.2 s and 2.25 GB of
        # private memory at a million rows, in every process that loaded it).
        rowids, ids, matrix, kinds, statuses = index.arrays(spare=max(64, len(index) // _SPARE_SHARE))
        last = int(rowids.max()) if len(rowids) else -1
        self._save(user_id, "vectors", version, [matrix, rowids, kinds, statuses, saved.encoded(ids)], removed, last)

    def _holds_all(self, user_id: str, index: ExactIndex) -> bool:
        """Whether ``index`` is the user's and no other process changed the user since it was read or
        checked: only then may a snapshot of it be saved (another process's delete would stay in it)."""
        self._retry(self._check_foreign_writes)
        return self._indexes.is_current(user_id, index, lambda: self._user_version(user_id))

    def _saved_index(self, user_id: str) -> tuple[ExactIndex, int] | None:
        """The user's saved index and their version, brought up to date by the changes since it was
        saved; None when there is none, or when it is too far behind to catch up."""
        current = self._user_version(user_id)
        found = None if current is None else saved.load(self.path, "vectors", user_id)
        changes = saved.behind(found, current, lambda: self._removed(user_id),
                               lambda last, removed: self._changes(user_id, last, removed))
        if found is None or changes is None:
            return None
        try:  # a file passed its checksum: anything failing here is ignored all the same
            index = self._of_saved(found, changes)
        except Exception:
            log.warning("could not use the saved vectors of a user; reading them from SQL", exc_info=True)
            index = None
        if index is None:
            return None
        self._vectors_mapped.note(index, found.intact)
        if changes.count is not None:
            self._vector_marks[index] = (changes.count, changes.after(found.last_rowid))
            # A file behind by many rows, or one that outlived a removal (it holds what was removed).
            if changes.removed or len(changes.rows) > max(saved.SAVE_ABOVE, _RESAVE_SHARE * len(found.parts[1])):
                self._save_vectors(user_id, index, changes.version, changes.count)  # the next load reads less
        return index, changes.version

    def _of_saved(self, found: saved.Saved, changes: Changes) -> ExactIndex | None:
        """The index a saved file describes, with the changes since applied; None when they do not fit."""
        if len(found.parts) != 5:
            return None
        matrix, rowids, kinds, statuses, names = found.parts
        ids = saved.strings(names, len(rowids))  # type: ignore[arg-type]
        if (ids is None or matrix.ndim != 2 or (self._dimensions is not None and matrix.shape[1] != self._dimensions)
                or not len(matrix) >= len(rowids) == len(kinds) == len(statuses)):
            return None
        cls = index_class(len(ids) + len(changes.rows), self._ann_above)
        index = cls.of_arrays(matrix.shape[1], rowids, ids, matrix, kinds, statuses)  # type: ignore[arg-type]
        return index if _applied(index, changes) else None

    def _save(self, user_id: str, kind: str, version: int, parts: list[Any], removed: int, last_rowid: int) -> None:
        """Save a just-loaded index's arrays (read at ``version`` and ``removed``, the largest rowid
        ``last_rowid``) on a thread; an erasure of the user meanwhile cancels it."""
        with self._saved_lock:
            erasures = self._erasures.get(user_id, 0)
            saves = self._saves.get()

        def publish() -> bool:  # called under _saved_lock, before and after the file replaces any other
            return self._erasures.get(user_id, 0) == erasures and self._user_version(user_id) == version

        saves.submit(saved.save, self.path, kind, user_id, version, parts, removed=removed, last_rowid=last_rowid,
                     publish=publish, lock=self._saved_lock)

    def _erase_saved(self, user_id: str) -> None:
        """Erase the user's files beside the database (a delete, replace or forget just erased rows
        they may hold) and cancel a save of them under way; indexes held here are saved again."""
        with self._saved_lock:
            self._erasures[user_id] = self._erasures.get(user_id, 0) + 1
            # Every file named for the user in every side folder: the approximate index's too, and
            # the temporary files of saves under way or cut short by a crash (each holds it all).
            erase_user(self.path, user_id)
        self._resave_later(user_id)

    def _resave_later(self, user_id: str, index: Sized | None = None) -> None:
        """Have the user's files saved again (:mod:`.resaves`) if ``index`` (one being caught up), or
        one held here, is large enough to have had them."""
        if self.path != ":memory:" and any(
            held is not None and len(held) >= saved.SAVE_ABOVE
            for held in (index, self._indexes.peek(user_id), self._postings.peek(user_id))
        ):
            self._resaves.schedule(user_id)

    def _allowed(self, user_id: str, filters: Filters) -> set[int] | None:
        """The rows the filters allow, or None when the index can tell itself (kinds, statuses)."""
        if filters == Filters(kinds=filters.kinds, statuses=filters.statuses):
            return None
        where, params = filter_sql(SQLITE, filters)
        sql = f"SELECT m.rowid FROM memories m WHERE m.user_id = ? AND {where}"
        return {r[0] for r in self._read(sql, (user_id, *params))}

    def vector_search(self, user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]:
        index = self._index(user_id)
        allowed = self._allowed(user_id, filters)
        # The matrix product runs outside the store lock (the index has its own).
        return index.search(query, n, statuses=filters.statuses, kinds=filters.kinds, allowed=allowed)

    def start_vector_search(
        self, user_id: str, query: Vector, n: int, filters: Filters
    ) -> Callable[[], builtins.list[Hit]]:
        """:meth:`vector_search` on a worker thread, its SQL on this one; the returned call waits
        for the hits. A user not in memory is loaded and searched here, at once: their load is a
        small user's rows or a large one's saved file, and handing it to a worker cost more than
        overlapping it with the keyword and entity reads saved (two cores, one interpreter lock: a
        cold query 0.3-1 ms slower, bench/multitenant.py)."""
        self._retry(self._check_foreign_writes)
        allowed = self._allowed(user_id, filters)

        def search() -> builtins.list[Hit]:
            index = self._cached_index(user_id)
            return index.search(query, n, statuses=filters.statuses, kinds=filters.kinds, allowed=allowed)

        if user_id not in self._indexes:
            hits = search()
            return lambda: hits
        return self._search_pool().submit(search).result

    def _search_pool(self) -> ThreadPoolExecutor:
        return self._searches.get()

    def _stop_searches(self) -> None:
        for pool in (self._searches.pop(), self._saves.pop()):
            if pool is not None:
                pool.shutdown(wait=True)
        self._loader.close()
        self._changes_reader.close()

    def vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        ids = list(dict.fromkeys(memory_ids))

        def cached() -> dict[str, Vector] | None:
            self._check_foreign_writes()
            self._vectors_mapped.drop_changed(self._indexes, user_id)
            index = self._indexes.get(user_id)
            return None if index is None else index.vectors(ids)

        found = self._retry(cached)
        if found is not None:
            return found
        rows = self._by_ids("embedding", "embedding IS NOT NULL", user_id, ids)
        return {memory_id: np.frombuffer(blob, dtype=np.float32).copy() for memory_id, blob in rows}

    def facets(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        rows = self._by_ids("facets, length(embedding)", "facets IS NOT NULL AND embedding IS NOT NULL",
                            user_id, list(dict.fromkeys(memory_ids)))
        return facet_matrices((memory_id, blob, size // 4) for memory_id, blob, size in rows)

    def _by_ids(self, columns: str, condition: str, user_id: str, ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """``id, columns`` of the user's rows among ``ids`` that meet ``condition``, 500 ids a query."""
        out: list[tuple[Any, ...]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            out.extend(self._read(
                f"SELECT id, {columns} FROM memories WHERE +user_id = ? AND {condition} "
                f"AND id IN ({','.join('?' * len(chunk))})",
                (user_id, *chunk),
            ))
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
