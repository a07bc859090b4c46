"""The embedded store: one SQLite file in WAL mode, FTS5 for keywords, numpy for vectors.

What ``delete``, ``forget_user`` and a text-changing ``replace`` remove is gone from the file
when the call returns: :mod:`.erasure`.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from engram.errors import EmbedderMismatch, StoreError, StoreUnavailable, ValidationError
from engram.ext import Vector
from engram.model import MemoryRecord
from engram.stores.facets import aligned_facets, facet_bytes, facet_updates
from engram.stores.sql.history import HistoryMixin, log_adds
from engram.stores.sql.knowledge import LOG_RETENTION, KnowledgeMixin, check_log_retention
from engram.stores.sql.rows import COLUMNS, record_params
from engram.stores.sqlite import side_files
from engram.stores.sqlite.bulk_index import BULK_MIN, clear_stray_marks, index_batch, marked
from engram.stores.sqlite.candidates import CandidateMixin
from engram.stores.sqlite.dialect import SQLITE, insert_rows, to_us
from engram.stores.sqlite.erasure import ErasureMixin
from engram.stores.sqlite.interrupt import fetch_all
from engram.stores.sqlite.keyword import KeywordMixin
from engram.stores.sqlite.mapping import FileMap
from engram.stores.sqlite.named_days import DAYS_INSERT, day_rows, index_named_days
from engram.stores.sqlite.readers import ReadPool, read_only
from engram.stores.sqlite.records import RecordsMixin
from engram.stores.sqlite.resaves import Resaves
from engram.stores.sqlite.schema import migrate, register_functions
from engram.stores.sqlite.text_indexes import repair as repair_text_indexes
from engram.stores.sqlite.user_cache import Turns
from engram.stores.sqlite.vector_search import VectorMixin
from engram.stores.sqlite.versions import user_version
from engram.stores.sqlite.warm import WarmMixin

__all__ = ["SQLiteStore"]

T = TypeVar("T")
_PLACEHOLDERS = ",".join("?" * 27)
_BUSY_TIMEOUT_MS = 10_000  # how long a statement waits for another process's lock
_CACHE_KIB = 65_536  # the connection's page cache
_MAX_ROWID = 2**63 - 1
_READERS = 4  # read-only connections beside the writer (.readers): a server's concurrent retrievals
_MMAP_BYTES = 1 << 30  # how much of the file the writer's connection maps (.mapping)
_TAGS = "INSERT OR IGNORE INTO memory_tags (memory_rowid, user_id, tag)"
_ENTITIES = "INSERT OR IGNORE INTO memory_entities (memory_rowid, user_id, memory_id, importance, created_at, entity)"

class SQLiteStore(
    RecordsMixin, CandidateMixin, KeywordMixin, VectorMixin, KnowledgeMixin, ErasureMixin, HistoryMixin, WarmMixin
):
    """Writes go through one connection guarded by a lock, reads through a pool of read-only ones
    (:mod:`.readers`); other processes may share the file.

    What both backends do alike is in :mod:`engram.stores.sql` (spelled by :data:`.dialect.SQLITE`);
    here are the connection, inserts and the erasure they need, entity and keyword candidates in
    :mod:`.candidates`, vector search in :mod:`.vector_search`.
    """

    dialect = SQLITE

    def __init__(
        self, path: str | Path, *, busy_retries: int = 12,
        log_retention: int | None = LOG_RETENTION, vector_cache_bytes: int | None = None,
    ) -> None:
        self.path = str(path)
        self.log_retention = check_log_retention(log_retention)  # each user's newest logged retrievals kept
        self._log_writes = {}
        self._busy_retries = busy_retries
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
        except (sqlite3.Error, OSError) as exc:
            raise StoreUnavailable(f"cannot open {self.path}: {exc}") from exc
        self._lock = threading.RLock()
        self._lock_owner: int | None = None  # the thread inside _retry's lock: its reads stay on _conn
        try:
            # The first statement reads the file: one that is not a database fails here. Retried:
            # while another process turns a new file to WAL, SQLite reports "locked" at once.
            self._retry(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
            self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at checkpoint, no torn DB
            self._conn.execute("PRAGMA foreign_keys=ON")
            # 64 MiB of pages instead of 2: at 100k memories retrieval touches thousands of pages
            # spread over the file, and re-reading them from the OS cost it milliseconds.
            self._conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
            # Mapped while other processes seldom commit (.mapping): most reads run here (below).
            # Writes still go through write().
            self._mapping = FileMap(self._conn, _MMAP_BYTES)
            # Freed pages are zeroed, so deleted and forgotten text does not linger in the file.
            self._conn.execute("PRAGMA secure_delete=ON")
            register_functions(self._conn)
            self._retry(lambda: migrate(self._conn))
            self._retry(lambda: clear_stray_marks(self._conn))
            self._retry(lambda: repair_text_indexes(self._conn))  # deepened by older erasures
            self._data_version = self._retry(self._read_data_version)
        except (sqlite3.Error, StoreError) as exc:
            self._conn.close()
            cause = exc.__cause__ if isinstance(exc, StoreError) and exc.__cause__ is not None else exc
            raise StoreUnavailable(f"cannot open {self.path}: {cause}") from exc
        # An in-memory database is this connection's alone: it has no readers.
        self._readers = None if self.path == ":memory:" else ReadPool(
            read_only(self.path, _BUSY_TIMEOUT_MS, _CACHE_KIB), _READERS
        )
        self._turns = Turns()  # this process's writes and catch-ups of the held indexes, by user
        self._init_vectors(vector_cache_bytes)  # None: the configured budget (engram.config)
        self._init_keywords(self._indexes.budget)
        self._resaves = Resaves(self._resave)
        self._init_records(self._indexes.budget)
        self._checkpoint_pending = False  # an erasing checkpoint was blocked by another reader
        if self.path != ":memory:":
            # Side folders as private as the file; saves cut short by a dead process removed.
            side_files.tidy(self.path)

    # -- plumbing ---------------------------------------------------------------------------------
    def _retry(self, op: Callable[[], T], *, locked: bool = True) -> T:
        """Retry with jittered backoff when another process holds the write lock.

        Every statement runs through here, so no raw ``sqlite3`` error leaves the store: any other
        failure (a damaged file, an I/O error, a closed connection, a constraint) is a StoreError
        whose ``__cause__`` is the original. ``locked``: ``op`` uses the store's own connection.
        """
        delay = 0.005
        for attempt in range(self._busy_retries + 1):
            try:
                if not locked:
                    return op()
                with self._lock:
                    outer, self._lock_owner = self._lock_owner, threading.get_ident()
                    try:
                        return op()
                    finally:
                        self._lock_owner = outer
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if ("locked" not in message and "busy" not in message) or attempt == self._busy_retries:
                    raise StoreError(f"sqlite: {exc}") from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)
            except sqlite3.Error as exc:
                raise StoreError(f"sqlite: {exc}") from exc
        raise AssertionError("unreachable")

    def _write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = op(self._conn)
                self._conn.execute("COMMIT")
            except BaseException:
                # SQLite already rolled back after some errors (a full disk, an I/O error); a second
                # ROLLBACK would fail and hide the first error.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            # A commit by another connection may have landed before ours: look, or its rows would
            # stay missing from (or its deletes stay in) the cached vector indexes.
            self._check_foreign_writes()
            return result

        result = self._retry(run)
        if self._checkpoint_pending:
            self._checkpoint()
        return result

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        readers = self._readers
        if readers is None or self._lock_owner == threading.get_ident():
            # Inside the lock this thread may be in a write transaction, whose own rows only the
            # writer sees.
            return self._retry(lambda: fetch_all(self._conn, sql, params))
        # The writer's connection while nobody holds it: its page cache stays warm, where every
        # commit (each retrieval logs one) makes the readers drop theirs (100k memories, one client:
        # retrieve p50 +1-2 ms on readers alone). A reader when a write or another read has it.
        if self._lock.acquire(blocking=False):
            try:
                return self._retry(lambda: fetch_all(self._conn, sql, params))
            finally:
                self._lock.release()
        return self._retry(lambda: readers.run(lambda c: fetch_all(c, sql, params)), locked=False)

    def _read_data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _check_foreign_writes(self) -> None:
        """Have the vector indexes checked when another connection committed since we last looked."""
        version = self._read_data_version()
        changed = version != self._data_version
        if changed:
            self._indexes.foreign_write()
            self._postings.foreign_write()
            self._data_version = version
        self._mapping.observe(changed)

    def change_token(self, user_id: str) -> str:
        """The user's write counter (:mod:`.versions`): moves with every change to what their
        retrievals find, in any process, and not with other users' writes or retrieval logs."""

        def look() -> str:
            self._check_foreign_writes()  # the vector indexes' own bookkeeping
            return str(user_version(self._conn, user_id))

        return self._retry(look)

    def _resave(self, user_id: str) -> None:
        self._resave_vectors(user_id)
        self._resave_postings(user_id)

    def close(self) -> None:
        self._resaves.close()  # first: it reads and saves through what the rest stops
        self._stop_searches()
        self._stop_keywords()
        if self._readers is not None:
            self._readers.close()
        with self._lock:
            self._finish_erasure()  # best effort: closing must not fail because another process still reads
            self._conn.close()

    # -- embedding bookkeeping ------------------------------------------------------------------------
    def bind_embedder(self, model_id: str, dimensions: int) -> None:
        rows = self._read("SELECT key, value FROM meta WHERE key IN ('model_id', 'dimensions')")
        stored = dict(rows)
        if not stored:
            self._write(
                lambda c: c.executemany(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                    [("model_id", model_id), ("dimensions", str(dimensions))],
                )
            )
        elif stored.get("model_id") != model_id:
            raise EmbedderMismatch(
                f"{self.path} holds vectors of {stored.get('model_id')!r}; refusing to mix in {model_id!r}"
            )
        self._dimensions = dimensions

    def stats(self) -> Mapping[str, Any]:
        rows = self._read("SELECT kind, COUNT(*) FROM memories GROUP BY kind ORDER BY kind")
        users = self._read("SELECT COUNT(DISTINCT user_id) FROM memories")[0][0]
        meta = dict(self._read("SELECT key, value FROM meta"))
        size = Path(self.path).stat().st_size if self.path != ":memory:" else 0
        return {
            "backend": "sqlite",
            "path": self.path,
            "memories": sum(n for _, n in rows),
            "users": int(users),
            "by_kind": {k: n for k, n in rows},
            "model_id": meta.get("model_id"),
            "bytes": size,
        }

    # -- writes ---------------------------------------------------------------------------------------
    def _insert(
        self, c: sqlite3.Connection, record: MemoryRecord, vector: Vector | None, facets: Vector | None = None
    ) -> int:
        cur = c.execute(f"INSERT INTO memories ({COLUMNS}, embedding, facets) VALUES ({_PLACEHOLDERS}, ?, ?)",
                        _row(record, vector, facets))
        rowid = int(cur.lastrowid or 0)
        _index_tags_of(c, [(rowid, record.user_id, tag) for tag in record.tags])
        _index_entities(c, rowid, record.user_id, record.id, record.importance, to_us(record.created_at),
                        record.entities)
        index_named_days(c, rowid, record)
        return rowid

    def _entities_set(self, c: sqlite3.Connection, row: Sequence[Any], user_id: str, memory_id: str,
                      ids: Sequence[str]) -> None:
        # The side table entity candidates read (.candidates) holds each memory's ids too.
        c.execute("DELETE FROM memory_entities WHERE memory_rowid = ?", (row[0],))
        _index_entities(c, row[0], user_id, memory_id, row[1], row[2], ids)

    def put_many(
        self, records: Sequence[MemoryRecord], vectors: Vector, *, facets: Sequence[Vector | None] | None = None
    ) -> None:
        parts = aligned_facets(records, vectors, facets)
        with self._turns.of(*{r.user_id for r in records}):
            self._put_many(records, vectors, parts)

    def put_facets(self, user_id: str, rows: Sequence[tuple[str, str, Vector]], *, replace: bool = False) -> int:
        params = facet_updates(user_id, rows)
        unset = "" if replace else " AND facets IS NULL"

        def op(c: sqlite3.Connection) -> int:
            return sum(c.execute(
                "UPDATE memories SET facets = ? WHERE user_id = ? AND id = ? AND content_hash = ? "
                f"AND length(embedding) = 4 * ?{unset}", row).rowcount for row in params)

        with self._turns.of(user_id):
            return self._write(op) if params else 0

    def _put_many(self, records: Sequence[MemoryRecord], vectors: Vector, facets: Sequence[Vector | None]) -> None:

        def op(c: sqlite3.Connection) -> list[int]:
            batch = len(records) >= BULK_MIN
            if batch:
                marked(c, True)
            rowids = (_insert_many(c, records, vectors, facets) if batch else None) or [
                self._insert(c, r, v, f) for r, v, f in zip(records, vectors, facets, strict=True)]
            if batch:
                index_batch(c, rowids, records)
                marked(c, False)
            log_adds(SQLITE, c, records)
            return rowids

        try:
            rowids = self._write(op)
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                # Ids are unique across the whole file; say so without naming whose id it was.
                raise ValidationError("id", "is already taken; omit it to get a fresh one") from exc
            raise
        for record, rowid, vector in zip(records, rowids, vectors, strict=True):
            index = self._indexes.written(record.user_id)
            if index is not None:
                index.add(rowid, record.id, vector, record.kind, record.status)
        self._keywords_added(records, rowids)


def _row(record: MemoryRecord, vector: Vector | None, facets: Vector | None) -> tuple[Any, ...]:
    blob = None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()
    return (*record_params(SQLITE, record), blob, facet_bytes(facets, None if vector is None else np.size(vector)))


def _insert_many(c: sqlite3.Connection, records: Sequence[MemoryRecord], vectors: Vector,
                 facets: Sequence[Vector | None]) -> list[int] | None:
    """A batch's rows, as :meth:`SQLiteStore._insert` writes one, in one statement a table: a
    statement per row was half the store's cost of a bulk write. The rowids are the ones SQLite
    would give a row at a time (one past the largest, in order): the batch holds the write lock.
    None, nothing written, when they would pass the largest rowid (then SQLite picks free ones)."""
    top = int(c.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0])
    if top + len(records) > _MAX_ROWID:
        return None
    rowids = list(range(top + 1, top + 1 + len(records)))
    insert_rows(c, f"INSERT INTO memories (rowid, {COLUMNS}, embedding, facets)",
                [(rowid, *_row(r, v, f)) for rowid, r, v, f in zip(rowids, records, vectors, facets, strict=True)])
    insert_rows(c, _TAGS, [(rowid, r.user_id, tag) for rowid, r in zip(rowids, records, strict=True) for tag in r.tags])
    insert_rows(c, _ENTITIES, [(rowid, r.user_id, r.id, r.importance, to_us(r.created_at), entity)
                               for rowid, r in zip(rowids, records, strict=True) for entity in r.entities])
    insert_rows(c, DAYS_INSERT, [row for rowid, r in zip(rowids, records, strict=True) for row in day_rows(rowid, r)])
    return rowids


def _index_entities(c: sqlite3.Connection, rowid: int, user_id: str, memory_id: str, importance: float,
                    created: int | None, entities: Sequence[str]) -> None:
    """A memory's rows in ``memory_entities`` (with its importance, creation time and id, the order
    entity candidates are read in)."""
    _index_entities_of(c, [(rowid, user_id, memory_id, importance, created, entity) for entity in entities])


def _index_tags_of(c: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    if rows:
        c.executemany(f"{_TAGS} VALUES (?, ?, ?)", rows)


def _index_entities_of(c: sqlite3.Connection, rows: Sequence[tuple[int, str, str, float, int | None, str]]) -> None:
    if rows:
        c.executemany(f"{_ENTITIES} VALUES (?, ?, ?, ?, ?, ?)", rows)
