"""The SQLite writes that erase: ``replace``, ``delete`` and ``forget_user``.

What ``delete``, ``forget_user`` and a ``replace`` that changes a memory's text remove is
gone from the file (database and WAL) when the call returns, except the replaced content, which the
memory's history keeps until the memory is deleted (:mod:`engram.stores.sql.history`). Four places
would otherwise keep it:

* the keyword and substring indexes: an FTS5 delete only appends a marker segment that itself names
  the terms (the trigrams, with their positions, in the substring index), so the segments of both
  are merged into one (``optimize``) in the deleting transaction (:mod:`.text_indexes`, which also
  keeps older SQLite from reading a much-merged index as corrupt);
* freed space in pages: ``secure_delete`` zeroes it in the new version of each page;
* old versions of those pages, in the WAL and in the database file until the next checkpoint: a
  ``TRUNCATE`` checkpoint copies the zeroed versions into the file and empties the WAL;
* a large user's indexes saved beside the file (``<db>.vectors/``, ``<db>.keywords/``, ``<db>.ann/``:
  their vectors, words and approximate index, for a new process to load): every file named for the
  user in every side folder is erased, temporary files of saves under way included
  (:meth:`~engram.stores.sqlite.vector_search.VectorMixin._erase_saved`), and saved again from the
  indexes held, which no longer hold the removed rows nor their words.

Records this process read are held in memory too (:mod:`.records`); the user's are dropped by these
calls at once.

Merging rewrites both indexes whole and the checkpoint writes them back, so a delete or a text edit
costs time that grows with the file's size: measured on two shared cores (SQLite 3.40), 17 ms at 1k
memories, 120 ms at 10k and 550 ms at 50k, against under 1 ms for a delete without erasure
(``bench/reliability.py --erasure-cost N`` measures it); five sixths of it is the substring index,
whose trigrams are many. Merging the keyword index alone cost 5, 19 and 77 ms, but left the deleted
text readable, trigram by trigram, in the substring index's pages. A replace that changes only a memory's
status, importance or derived entities (current truth, entity backfill) erases nothing and costs
nothing extra; one that changes any other text the caller wrote (tags, metadata) erases as a
content edit does. Another process reading or writing the file can hold the checkpoint back (see
:meth:`ErasureMixin._checkpoint`).
"""
from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from engram.errors import StoreError
from engram.ext import Vector
from engram.model import MemoryRecord
from engram.stores.facets import facet_matrix
from engram.stores.sql.history import log_replace
from engram.stores.sql.rows import COLUMNS, record_params, row_to_record
from engram.stores.sql.writes import WriteMixin
from engram.stores.sqlite.dialect import SQLITE
from engram.stores.sqlite.text_indexes import merge as merge_text_indexes

__all__ = ["ErasureMixin"]

T = TypeVar("T")
_CHECKPOINT_WAIT_MS = 250  # how long an erasing checkpoint waits for other processes (see _checkpoint)
_CLOSE_WAIT_S = 5.0  # how long closing retries an erasing checkpoint another process blocked
_CLOSE_RETRY_S = 0.1
log = logging.getLogger("engram.stores.sqlite")

#: Columns of text a caller wrote, as positions in ``record_params``. Entities are left out: they are
#: derived ids that entity backfill rewrites on many rows.
_TEXT = {
    "content": 3, "agent_id": 5, "session_id": 6, "project_id": 7, "role": 8, "subject": 9, "predicate": 10,
    "object": 11, "trigger_text": 12, "action_text": 13, "tags": 14, "metadata": 24, "doc_key": 25,
}
_TEXT_COLUMNS = ", ".join(_TEXT)


def _text_changed(old: Sequence[Any], record: MemoryRecord) -> bool:
    """Whether the record replacing a stored row (its text columns in ``_TEXT_COLUMNS`` order) changes
    any text the caller wrote: then the old text is erased from both text indexes (the substring
    index holds tags and metadata too) and from old pages."""
    new = record_params(SQLITE, record)
    return any(old[i] != new[p] for i, p in enumerate(_TEXT.values()))


class ErasureMixin(WriteMixin):
    """``replace``, ``delete_many`` and ``forget_user`` of :class:`~.store.SQLiteStore`, and the
    hooks through which the shared deletes (:class:`~engram.stores.sql.writes.WriteMixin`) erase."""

    if TYPE_CHECKING:
        from engram.stores.postings import Postings
        from engram.stores.sqlite.readers import ReadPool
        from engram.stores.sqlite.records import RecordCache
        from engram.stores.sqlite.user_cache import Turns, UserIndexCache
        from engram.stores.sqlite.vectors import ExactIndex

        _conn: sqlite3.Connection
        _readers: ReadPool | None
        _turns: Turns
        _indexes: UserIndexCache[ExactIndex]
        _postings: UserIndexCache[Postings]
        _records: RecordCache
        _checkpoint_pending: bool

        def _retry(self, op: Callable[[], T], *, locked: bool = True) -> T: ...

        def _write(self, op: Callable[[sqlite3.Connection], T]) -> T: ...

        def _insert(
            self, c: sqlite3.Connection, record: MemoryRecord, vector: Vector | None, facets: Vector | None = None
        ) -> int: ...

        def _keywords_added(self, records: Sequence[MemoryRecord], rowids: Sequence[int]) -> None: ...

        def _keywords_removed(self, user_id: str, memory_ids: Sequence[str]) -> None: ...

        def _erase_saved(self, user_id: str) -> None: ...

    def replace(self, record: MemoryRecord, vector: Vector | None, *, facets: Vector | None = None) -> None:
        """Overwrite a row. Old text is erased from the file before this returns (see the module
        docstring): from the keyword index too when content or role changed."""
        with self._turns.of(record.user_id):
            self._replace(record, vector, facets)

    def _replace(self, record: MemoryRecord, vector: Vector | None, facets: Vector | None) -> None:

        def op(c: sqlite3.Connection) -> tuple[int, Vector | None, bool] | None:
            row = c.execute(
                f"SELECT rowid, embedding, facets, {_TEXT_COLUMNS} FROM memories WHERE id = ? AND user_id = ?",
                (record.id, record.user_id),
            ).fetchone()
            if row is None:
                return None
            old_vector = None if row[1] is None else np.frombuffer(row[1], dtype=np.float32)
            new_vector, new_facets = vector, facets
            if vector is None:  # the same content: its vector and facets stay
                new_vector = old_vector
                new_facets = None if row[2] is None or old_vector is None else facet_matrix(row[2], old_vector.size)
            erasure = _text_changed(tuple(row[3:]), record)
            old = c.execute(f"SELECT {COLUMNS} FROM memories WHERE rowid = ?", (row[0],)).fetchone()
            c.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
            rowid = self._insert(c, record, new_vector, new_facets)
            log_replace(SQLITE, c, row_to_record(SQLITE, old), record)
            if erasure:
                merge_text_indexes(c)
            return rowid, new_vector, erasure

        result = self._write(op)
        if result is None:
            return
        index = self._indexes.written(record.user_id)
        if index is not None:
            index.remove_by_id(record.id)
            if result[1] is not None:
                index.add(result[0], record.id, result[1], record.kind, record.status)
        self._keywords_added([record], [result[0]])
        self._records.pop(record.user_id)
        self._erase_saved(record.user_id)  # the old vector may be in the saved files
        if result[2]:
            self._checkpoint()

    # -- the shared deletes' hooks -------------------------------------------------------------------
    def _erase(self, c: sqlite3.Connection) -> None:
        merge_text_indexes(c)

    def _deleted(self, user_id: str, gone: Sequence[str], statuses: Sequence[tuple[Any, str]]) -> None:
        index = self._indexes.written(user_id)
        if index is not None:
            for rowid, status in statuses:  # before the removals: a later id may have deleted that row
                index.set_status(int(rowid), status)
            for memory_id in gone:
                index.remove_by_id(memory_id)
        self._keywords_removed(user_id, gone)
        self._records.pop(user_id)
        self._erase_saved(user_id)
        self._checkpoint()

    def _forgotten(self, c: sqlite3.Connection, user_id: str) -> None:
        c.execute("DELETE FROM keyword_stats WHERE user_id = ?", (user_id,))
        # The id must not outlive the user; a later write starts the counter at a random value again.
        c.execute("DELETE FROM user_versions WHERE user_id = ?", (user_id,))
        c.execute("DELETE FROM memory_removals WHERE user_id = ?", (user_id,))
        merge_text_indexes(c)

    def delete_many(self, user_id: str, memory_ids: Sequence[str]) -> int:
        with self._turns.of(user_id):
            return super().delete_many(user_id, memory_ids)

    def forget_user(self, user_id: str) -> int:
        with self._turns.of(user_id):
            return self._forget_user(user_id)

    def _forget_user(self, user_id: str) -> int:
        count = super().forget_user(user_id)
        self._indexes.pop(user_id, None)
        self._postings.pop(user_id, None)
        self._records.pop(user_id)
        self._erase_saved(user_id)
        self._checkpoint()
        return count

    def _checkpoint(self) -> None:
        """Copy every page of the WAL into the database file and truncate the WAL to zero bytes.

        A reader or writer in another process blocks the truncation; it is waited for only
        :data:`_CHECKPOINT_WAIT_MS` (the usual 10 s busy timeout would stall the delete behind a
        long read), then retried after this store's next write and at close (for up to
        :data:`_CLOSE_WAIT_S`): until then the old page versions stay in the WAL and the file.
        """

        def run() -> bool:
            usual = int(self._conn.execute("PRAGMA busy_timeout").fetchone()[0])
            self._conn.execute(f"PRAGMA busy_timeout = {_CHECKPOINT_WAIT_MS}")
            try:
                row = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {usual}")
            return bool(row and row[0])

        # This process's readers wait meanwhile: a read holding a snapshot blocks the truncation.
        with self._readers.paused() if self._readers is not None else contextlib.nullcontext():
            self._checkpoint_pending = self._retry(run)

    def _finish_erasure(self, seconds: float = _CLOSE_WAIT_S) -> bool:
        """At close: retry a blocked erasing checkpoint for up to ``seconds`` (another process's read
        ends; a process that deletes and exits, as ``engram delete`` does, has no later write to retry
        it after, and the erased text's old pages would stay in the file while the other process
        idles); whether it completed. A failure to complete is logged, never raised."""
        deadline = time.monotonic() + seconds
        while self._checkpoint_pending:
            with contextlib.suppress(sqlite3.Error, StoreError):
                self._checkpoint()
            if not self._checkpoint_pending or time.monotonic() >= deadline:
                break
            time.sleep(_CLOSE_RETRY_S)
        if self._checkpoint_pending:
            log.warning("erased text stays in the WAL and database file of %s until the next checkpoint: "
                        "another process held a read for %.0f s", getattr(self, "path", "?"), seconds)
        return not self._checkpoint_pending
