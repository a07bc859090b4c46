"""Exact BM25 keyword candidates on SQLite, from each user's postings held in memory.

The FTS5 table is the durable keyword index (terms computed in Python by
:func:`engram.text.memory_terms`, each behind a key of its user: :func:`.schema.user_key`). A user's
first keyword search reads their stored terms once, on a read-only connection of its own and
outside the store's lock, into a :class:`~.postings.Postings`; later searches score the query
terms' postings with the shared formula of :mod:`engram.text` (leaving out only rows that provably
cannot reach the answer: :mod:`engram.stores.accumulate`), over this user's rows alone, so the
result is the exhaustive BM25 of the user's texts at any size, and other users' memories change
neither what matches nor the scores. The indexes live in a :class:`~.user_cache.UserIndexCache` of
their own (least recently searched user dropped first, another process's writes checked against
the user's version at next use), updated by this store's writes as they commit. A user larger than
:data:`BUILD_INLINE` has theirs built on a thread of its own, and searches meanwhile read the same
hits from SQL (:mod:`.keyword_scan`) unless they match more than :data:`SCAN_LIMIT` rows.

Cost, measured on two shared, busy cores: a warm search at 100k memories of one user ~1-2 ms (it
scored 30-60k postings where the budgeted FTS5 search took 3.6 ms and missed half of the true top
10 at 10k); a build ~10 ms of CPU per 1,000 memories (SQL about half); ~350 bytes per memory held.

A score is BM25 divided by the score of a memory of average length holding each query term once:
1.0 means "all of the query's words", about 0.5 "the rarer half of them"; more occurrences can take
it a little above 1.

The time range of the filters is applied in memory (a time-scoped query searches its keywords
twice, in and out of its range); every other filter is checked in SQL on the best-scoring rows
only, in rounds of growing size until enough pass, so the top ``n`` are exact whatever the filters
reject. Statuses alone (the default: active memories) are checked against the user's few rows that
are not active, which an index of their own holds (reading each checked row cost a retrieval
~0.2 ms).
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import sqlite3
import time
import weakref
from collections.abc import Callable, Sequence, Sized
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from engram.model import Filters, Hit, MemoryRecord
from engram.stores.builds import Builds
from engram.stores.matches import exact_best
from engram.stores.postings import Postings
from engram.stores.sql.rows import filter_sql, record_params
from engram.stores.sqlite import saved
from engram.stores.sqlite.dialect import SQLITE, to_us
from engram.stores.sqlite.keyword_scan import scan_hits
from engram.stores.sqlite.resaves import Resaves, caught_up_held
from engram.stores.sqlite.schema import user_key
from engram.stores.sqlite.snapshot import Changes, Marks, SnapshotReader, catch_up
from engram.stores.sqlite.user_cache import Turns, UserIndexCache
from engram.text import memory_terms, query_terms

__all__ = ["KEYWORD_CACHE_SHARE", "KeywordMixin"]

T = TypeVar("T")
log = logging.getLogger("engram")
#: The keyword indexes' byte budget as a fraction of the vector cache's: a memory's postings take
#: ~200-300 bytes where its 384-dimensional vector takes 1.5 KiB.
KEYWORD_CACHE_SHARE = 0.25
#: Inactive rows of a user from which the status check reads the rows searched instead: checking
#: ~70 of those cost ~0.8 ms, reading 1,000 rowids from the inactive rows' index ~0.23 ms (so a
#: user past the limit pays ~0.06 ms for the look).
_HELD_BACK_LIMIT = 256
#: The stored keyword document of each of the user's rows, with what the index keeps per row. FTS5
#: keeps the document in its content table (a documented shadow table): read there directly it cost
#: a third of reading it through the FTS5 table (138 vs 401 ms at 100k), and the row's id and
#: creation time come from a covering index, not the wide memories rows.
_USER_DOCUMENTS = (
    # The user's key is taken off each term here ("KEYa KEYb" -> " a b"), in C: in Python it cost a
    # fifth of building the index. Only where a term starts: a term may itself begin like a key.
    "SELECT m.rowid, m.id, m.created_at, coalesce(replace(' ' || nullif(c.c0, ''), ' ' || ?, ' '), '') "
    "FROM memories m LEFT JOIN keyword_fts_content c ON c.id = m.rowid WHERE "
)
#: Some of the user's rows, by rowid: looked up one by one (the user's index would read all of theirs).
_DOCUMENTS_OF_ROWS = _USER_DOCUMENTS + "m.rowid IN ({rows}) AND +m.user_id = ?"
_USER_DOCUMENTS += "m.user_id = ?"
#: Saved postings caught up by this share of their rows or more are saved again.
_RESAVE_SHARE = 0.05
_CHUNK = 900  # rowids per IN list: under SQLite's oldest limit of 999 parameters
#: Up to this many memories a user's postings are built by the search that needs them (~10 ms per
#: 1,000 on a busy core); a larger user's are built on a thread of their own while searches read
#: from SQL (:mod:`.keyword_scan`): a first search does not wait for the build.
BUILD_INLINE = 2000
#: Meanwhile a search reads from SQL when its terms match at most this many of the user's rows (a
#: few ms each thousand); one matching more waits for the build, which then costs about as much.
SCAN_LIMIT = 10_000
_VECTORS_WAIT_S = 1.0  # at most this long a build waits for the user's vectors to be loaded


class _NoSavedFile(Exception):
    """A large user has no saved postings to load: they are built on a thread instead."""


class KeywordMixin:
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore`."""

    _postings: UserIndexCache[Postings]
    _postings_loader: SnapshotReader
    _postings_builds: Builds
    _resaves: Resaves
    _turns: Turns
    _changes_reader: SnapshotReader
    keyword_build_inline: int

    if TYPE_CHECKING:
        path: str
        _conn: sqlite3.Connection

        def _retry(self, op: Callable[[], T]) -> T: ...

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

        def _check_foreign_writes(self) -> None: ...

        def _user_version(self, user_id: str) -> int | None: ...

        def _removed(self, user_id: str) -> int | None: ...

        def _vectors_held(self, user_id: str) -> bool: ...

        def _resave_later(self, user_id: str, index: Sized | None = None) -> None: ...

        def _save(self, user_id: str, kind: str, version: int, parts: list[Any], removed: int,
                  last_rowid: int) -> None: ...

    def _init_keywords(self, vector_budget: int) -> None:
        self._postings = UserIndexCache(int(vector_budget * KEYWORD_CACHE_SHARE))
        self._postings_loader = SnapshotReader(self.path)
        self._postings_marks: Marks = weakref.WeakKeyDictionary()
        self._postings_mapped = saved.Mapped()
        self._postings_builds = Builds("engram-keyword-builds")
        self.keyword_build_inline = BUILD_INLINE

    def keyword_search(self, user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]:
        terms = query_terms(text)
        if not terms or n <= 0:
            return []
        rest = replace(filters, created_after=None, created_before=None)
        where, params = filter_sql(SQLITE, rest)  # first: invalid filters fail before any work
        self._retry(self._check_foreign_writes)
        index = self._held_postings(user_id)
        if index is None:
            hits = scan_hits(self._read, user_id, terms, n, filters, SCAN_LIMIT)
            if hits is not None:
                return hits
            index = self._current_postings(user_id)  # waits for the build under way

        # Only statuses, the active among them: the user's few other rows that are not allowed are
        # read once from the index of inactive rows (at the first check) and left out, instead of
        # reading every row checked.
        statuses_only = rest == Filters(statuses=rest.statuses) and "active" in rest.statuses
        held_back: builtins.list[npt.NDArray[np.int64] | None] = []

        def passing(rowids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
            if not params and where == SQLITE.true:
                return None
            if statuses_only:
                if not held_back:
                    held_back.append(self._held_back(user_id, rest.statuses))
                if held_back[0] is not None:
                    return rowids[~np.isin(rowids, held_back[0])]
            found: builtins.list[int] = []
            for start in range(0, len(rowids), _CHUNK):
                chunk = rowids[start : start + _CHUNK].tolist()
                found += (r[0] for r in self._read(
                    f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({','.join('?' * len(chunk))}) "
                    f"AND +m.user_id = ? AND {where}", (*chunk, user_id, *params)))
            return np.asarray(found, dtype=np.int64)

        after, before = to_us(filters.created_after), to_us(filters.created_before)
        return exact_best(lambda depth: index.scores(terms, after, before, depth=depth), n, passing)

    def _held_back(self, user_id: str, statuses: Sequence[str]) -> npt.NDArray[np.int64] | None:
        """The user's rows that are not active, nor of another of ``statuses`` (migration 12's
        index); None when there are :data:`_HELD_BACK_LIMIT` or more (a user whose facts changed
        often): checking the rows searched then reads less."""
        others = [s for s in statuses if s != "active"]
        also = f" AND status NOT IN ({','.join('?' * len(others))})" if others else ""
        sql = f"SELECT rowid FROM memories WHERE user_id = ? AND status <> 'active'{also} LIMIT {_HELD_BACK_LIMIT}"
        rows = self._read(sql, (user_id, *others))
        return None if len(rows) >= _HELD_BACK_LIMIT else np.asarray([r[0] for r in rows], dtype=np.int64)

    def _current_postings(self, user_id: str) -> Postings:
        return self._postings.get_or_load(
            user_id, lambda: self._load_postings(user_id), lambda: self._user_version(user_id),
            lambda held: self._postings_caught_up(user_id, held),
        )

    def _postings_caught_up(
        self, user_id: str, index: Postings, *, resave: bool = True,
    ) -> tuple[Postings, int] | None:
        """``index`` (held, out of date) with the changes since it was read; None when it must be
        loaded again (as :meth:`~.vector_search.VectorMixin._caught_up`)."""
        def apply(changes: Changes, last: int) -> bool:
            index.catch_up(changes.removed, changes.rows, last)  # some may be this process's own writes
            return True

        changes = catch_up(index, self._postings_marks,
                           lambda last, removed: self._keyword_changes(user_id, last, removed), apply,
                           self._turns.of(user_id))
        if changes is None:
            return None
        if changes.removed and resave:
            self._resave_later(user_id, index)  # not held while it is caught up
        return index, changes.version

    def _resave_postings(self, user_id: str) -> None:
        """Save the user's held postings again, brought up to date first (:mod:`.resaves`)."""
        self._retry(self._check_foreign_writes)
        found = caught_up_held(
            self._postings, user_id, version=lambda: self._user_version(user_id),
            caught_up=lambda held: self._postings_caught_up(user_id, held, resave=False))
        if found is not None:
            index, version = found
            self._save_postings(user_id, index, version, self._postings_marks[index][0])

    def _keyword_changes(self, user_id: str, last: int, removed: int) -> Changes | None:
        key = user_key(user_id)

        def rows(rowids: Sequence[int]) -> tuple[str, Sequence[Any]]:
            return _DOCUMENTS_OF_ROWS.format(rows=",".join("?" * len(rowids))), (key, *rowids, user_id)

        return self._changes_reader.changed_since(
            user_id, _USER_DOCUMENTS, (key, user_id), last=last, removed=removed, rowid="m.rowid", rows=rows)

    def _held_postings(self, user_id: str) -> Postings | None:
        """The user's postings when held, or loaded here when small; None while a larger user's are
        being built (the build is started here if it is not under way)."""
        self._postings_mapped.drop_changed(self._postings, user_id)
        if self._postings.holds(user_id):  # at most their version is read again
            return self._current_postings(user_id)
        if user_id in self._postings_builds:
            return None
        size = self._read("SELECT docs FROM keyword_stats WHERE user_id = ?", (user_id,))
        if not size or int(size[0][0]) <= self.keyword_build_inline:
            return self._current_postings(user_id)
        if self.path != ":memory:":
            # Mapped from its file in a moment (no SQL scan, no build), as a load the cache knows
            # of: a write landing meanwhile marks it stale instead of being missed for good.
            def from_file() -> tuple[Postings, int]:
                found = self._saved_postings(user_id)
                if found is None:
                    raise _NoSavedFile
                return found

            with contextlib.suppress(_NoSavedFile):
                return self._postings.get_or_load(
                    user_id, from_file, lambda: self._user_version(user_id),
                    lambda held: self._postings_caught_up(user_id, held),
                )

        self._build_postings_later(user_id)
        return None

    def _build_postings_later(self, user_id: str) -> None:
        def build() -> None:
            # A cold user's vectors are loading for the same retrieval, on its critical path:
            # building beside them doubled that load (one process, shared cores); searches read
            # from SQL meanwhile.
            waited = 0.0
            while not self._vectors_held(user_id) and waited < _VECTORS_WAIT_S:
                time.sleep(0.005)
                waited += 0.005
            self._current_postings(user_id)

        self._postings_builds.start(user_id, build)

    def _postings_due(self, user_id: str, size: int) -> None:
        """A large user's vectors were just read from SQL (no current saved file): have their postings
        built (and saved) too, unless held or under way. A process whose first retrieval of the user
        ran out of time on those vectors never asks for keywords, and at a million memories left the
        build (~15 s) to the next process's first retrieval, which waited for it past its deadline."""
        if size > self.keyword_build_inline and not self._postings.holds(user_id):
            self._build_postings_later(user_id)  # a no-op while one is under way

    def _saved_postings(self, user_id: str) -> tuple[Postings, int] | None:
        """The user's saved postings and their version, brought up to date by the changes since
        they were saved (:mod:`.saved`); None when there are none, or when they are too far behind."""
        current = self._user_version(user_id)
        found = None if current is None else saved.load(self.path, "keywords", user_id)
        changes = saved.behind(found, current, lambda: self._removed(user_id),
                               lambda last, removed: self._keyword_changes(user_id, last, removed))
        if found is None or changes is None:
            return None
        try:  # a file passed its checksum: anything failing here is ignored all the same
            index = Postings.of_parts(found.parts)
            if index is not None:
                index.catch_up(changes.removed, changes.rows, found.last_rowid)
        except Exception:
            log.warning("could not use the saved keyword index of a user; reading it from SQL", exc_info=True)
            index = None
        if index is None:
            return None
        self._postings_mapped.note(index, found.intact)
        if changes.count is not None:
            self._postings_marks[index] = (changes.count, changes.after(found.last_rowid))
            # A file behind by many rows, or one that outlived a removal (it holds what was removed).
            if changes.removed or len(changes.rows) > max(saved.SAVE_ABOVE, _RESAVE_SHARE * len(index)):
                self._save_postings(user_id, index, changes.version, changes.count)  # the next load reads less
        return index, changes.version

    def _save_postings(self, user_id: str, index: Postings, version: int, removed: int) -> None:
        parts = index.parts()
        rowids = parts[3]
        self._save(user_id, "keywords", version, parts, removed, int(rowids.max()) if len(rowids) else -1)

    def _load_postings(self, user_id: str) -> tuple[Postings, int | None]:
        """The user's postings and their version: saved ones while current, else read in one SQL
        snapshot (and saved for the next process when the user is large)."""
        if self.path == ":memory:":  # no second connection sees this database
            rows = self._read(_USER_DOCUMENTS, (user_key(user_id), user_id))
            version, removed = self._user_version(user_id), None
        else:
            found = self._saved_postings(user_id)
            if found is not None:
                return found
            rows, version, removed = self._postings_loader.read(
                user_id, _USER_DOCUMENTS, (user_key(user_id), user_id))
        rowids, ids, created, documents = (list(c) for c in zip(*rows, strict=True)) if rows else ([],) * 4
        index = Postings.build(rowids, ids, created, documents)
        if version is not None and removed is not None:
            self._postings_marks[index] = (removed, max(rowids, default=-1))
            if len(ids) >= saved.SAVE_ABOVE:
                self._save_postings(user_id, index, version, removed)
        return index, version

    def _stop_keywords(self) -> None:
        self._postings_builds.close()
        self._postings_loader.close()

    # -- kept current by this store's writes, after they commit ------------------------------------
    def _keywords_added(self, records: Sequence[MemoryRecord], rowids: Sequence[int]) -> None:
        for record, rowid in zip(records, rowids, strict=True):
            index = self._postings.written(record.user_id)
            if index is not None:
                # The columns the keyword trigger indexes, as they were stored.
                values = record_params(SQLITE, record)
                terms = memory_terms(values[3] or "", values[8], *values[9:14])
                index.add(rowid, record.id, terms, to_us(record.created_at) or 0)

    def _keywords_removed(self, user_id: str, memory_ids: Sequence[str]) -> None:
        index = self._postings.written(user_id)
        if index is not None:
            for memory_id in memory_ids:
                index.remove(memory_id)

