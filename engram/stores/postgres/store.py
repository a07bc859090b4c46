"""The server store: PostgreSQL with pgvector (HNSW, cosine), a tsvector GIN index and a connection pool.

Semantics mirror :class:`engram.stores.sqlite.store.SQLiteStore` call for call (same ordering, same
tie-breaks: score descending then id ascending). Two candidate sources are computed differently:

* ``vector_search`` is exact (a scan of the user's rows) while the user has at most ``exact_limit``
  memories; above that it uses the HNSW index with ``hnsw.ef_search`` raised and pgvector 0.8's
  iterative scan (``relaxed_order``) so a per-user filter still yields ``n`` results. That path is
  approximate: recall below 1 is possible, and ``hnsw.max_scan_tuples`` bounds the work.
* ``keyword_search`` scores Okapi BM25 (k1=1.2, b=0.75, Lucene's IDF) exactly over every posting of
  the query's terms, from the user's postings held in memory (loaded from the tsvector of the
  stemmed terms both backends index), with N, average length and document frequencies taken over
  the user's own memories: the same hits and scores as SQLite's (see keyword.py).

Erasure. Unlike SQLite (see :mod:`engram.stores.sqlite.erasure`), a delete does not erase the bytes:
no query sees a deleted row once the call returns, but it stays in its table and index pages
until (auto)VACUUM prunes them and the space is reused, and in WAL segments, archives and backups
per the server's retention. Erasure on disk is the database operator's business (VACUUM, WAL and
backup policy, disk encryption).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout

from engram.config import vector_cache_bytes
from engram.deadline import check, read_deadline, remaining_ms
from engram.errors import DeadlineExceeded, EmbedderMismatch, StoreError, StoreUnavailable, ValidationError
from engram.ext import Vector
from engram.model import MemoryRecord
from engram.stores.facets import aligned_facets, facet_matrices, facet_matrix, facet_updates
from engram.stores.postgres import distributed, schema
from engram.stores.postgres.candidates import CandidateMixin
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.postgres.keyword import BUILD_INLINE, CACHE_SHARE, Held, KeywordIndex, to_us
from engram.stores.sql.history import HistoryMixin, log_adds, log_replace
from engram.stores.sql.knowledge import LOG_RETENTION, KnowledgeMixin, check_log_retention
from engram.stores.sql.reads import ReadMixin
from engram.stores.sql.rows import COLUMNS, row_to_record
from engram.stores.sql.writes import WriteMixin
from engram.text import ROLE_WORDS

__all__ = ["CACHED_VECTORS", "PostgresStore"]

Conn = psycopg.Connection[Any]
T = TypeVar("T")
#: Rows inserted by one store before it runs ANALYZE itself (see PostgresStore._note_growth).
_ANALYZE_AFTER = 1_000
#: A user's stored vectors by content hash (migration 11's index), one row per hash.
CACHED_VECTORS = (
    "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM engram_memories "
    "WHERE user_id = %s AND content_hash = ANY(%s::text[]) AND embedding IS NOT NULL "
    "AND (role IS NULL OR lower(btrim(role)) = ANY(%s::text[])) ORDER BY content_hash"
)


class PostgresStore(ReadMixin, CandidateMixin, KnowledgeMixin, WriteMixin, HistoryMixin):
    """Every call takes a pooled connection for one transaction; safe to share between threads.

    What both backends do alike is in :mod:`engram.stores.sql` (spelled by :data:`.dialect.POSTGRES`);
    here are the pool, inserts and statistics, entity, vector and keyword candidates in :mod:`.candidates`.
    """

    dialect = POSTGRES

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 8, exact_limit: int = 5_000,
        keyword_cache_bytes: int | None = None, ef_search: int = 200, log_retention: int | None = LOG_RETENTION,
    ) -> None:
        self.url = url
        self.log_retention = check_log_retention(log_retention)  # each user's newest logged retrievals kept
        self._log_writes = {}
        self.exact_limit = exact_limit
        self._keywords = KeywordIndex(
            int(vector_cache_bytes() * CACHE_SHARE) if keyword_cache_bytes is None else keyword_cache_bytes
        )
        self.keyword_build_inline = BUILD_INLINE  # larger users' postings load on a thread of their own
        self._tracking = threading.local()  # the keyword write (delete_many's) that _write reads versions for
        self.ef_search = ef_search
        self._indexed_dims: set[int] = set()
        self._growth = threading.Lock()
        self._unanalyzed = 0  # rows this store inserted since its last ANALYZE
        self._analyzed_rows = 0  # the table's rows at that ANALYZE, as the planner estimated them
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                schema.migrate(conn)
                self._citus = distributed.distribute(conn)  # on Citus only: tables distributed by user_id
            self._pool: ConnectionPool[Conn] = ConnectionPool(
                url, min_size=min_size, max_size=max_size, configure=self._configure, open=False,
                name="engram",
            )
            self._pool.open(wait=True, timeout=30)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"cannot open {schema.redact(url)}: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"postgres: {exc}") from exc

    @staticmethod
    def _configure(conn: Conn) -> None:
        register_vector(conn)
        conn.execute("SET TIME ZONE 'UTC'")
        conn.commit()

    # -- plumbing ---------------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[Conn]:
        """One pooled connection in one transaction (committed on success, rolled back on error).

        Inside a retrieval's read deadline (:mod:`engram.deadline`) its statements are cancelled
        when the deadline passes (``statement_timeout`` for this transaction), as DeadlineExceeded."""
        deadline = read_deadline()
        check(deadline, "before a store read")
        try:
            with self._pool.connection() as conn:
                if deadline is not None:
                    conn.execute(f"SET LOCAL statement_timeout = {remaining_ms(deadline)}")
                yield conn
        except psycopg.errors.QueryCanceled as exc:
            if deadline is None:
                raise StoreError(f"postgres: {exc}") from exc
            raise DeadlineExceeded("retrieval passed its deadline during a store read (statement cancelled)") from None
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"postgres: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"postgres: {exc}") from exc

    def _read(self, query: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        with self._tx() as conn:
            return conn.execute(query, params).fetchall()

    def _write(self, op: Callable[[Conn], T]) -> T:
        write = getattr(self._tracking, "write", None)
        with self._tx() as conn:
            if write is None:
                return op(conn)
            write.before(conn)
            result = op(conn)
            write.after(conn)
            return result

    def _scalar(self, query: str, params: Sequence[Any] = ()) -> Any:
        rows = self._read(query, params)
        return rows[0][0] if rows else None

    def close(self) -> None:
        self._keywords.close()
        self._pool.close()

    def truncate(self) -> None:
        """Delete every row of every table (tests); the schema and indexes stay."""
        with self._tx() as conn:
            conn.execute(f"TRUNCATE {', '.join(schema.TABLES)}")
        self._keywords.clear()  # the versions restart with the emptied tables

    # -- embedding bookkeeping --------------------------------------------------------------------
    def bind_embedder(self, model_id: str, dimensions: int) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO engram_meta (key, value) VALUES ('model_id', %s), ('dimensions', %s) "
                "ON CONFLICT (key) DO NOTHING",
                (model_id, str(dimensions)),
            )
            stored = conn.execute("SELECT value FROM engram_meta WHERE key = 'model_id'").fetchone()
        if stored is not None and stored[0] != model_id:
            raise EmbedderMismatch(
                f"{schema.redact(self.url)} holds vectors of {stored[0]!r}; refusing to mix in {model_id!r}"
            )
        self._ensure_hnsw(dimensions)

    def cached_vectors(self, user_id: str, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        unique = list(dict.fromkeys(content_hashes))
        if not unique:
            return {}
        rows = self._read(CACHED_VECTORS, (user_id, unique, sorted(ROLE_WORDS)))
        return {digest: schema.to_array(vec) for digest, vec in rows}

    def _ensure_hnsw(self, dimensions: int) -> None:
        if dimensions in self._indexed_dims:
            return
        with self._tx() as conn:
            exists = conn.execute("SELECT to_regclass(%s)", (schema.hnsw_index_name(dimensions),)).fetchone()
            if exists is None or exists[0] is None:
                conn.execute(schema.hnsw_index_sql(dimensions))
        self._indexed_dims.add(dimensions)

    # -- writes -----------------------------------------------------------------------------------
    def put_many(
        self, records: Sequence[MemoryRecord], vectors: Vector, *, facets: Sequence[Vector | None] | None = None
    ) -> None:
        parts = aligned_facets(records, vectors, facets)
        if not records:
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        self._ensure_hnsw(int(matrix.shape[1]))
        rows = [schema.record_params(r, v, f) for r, v, f in zip(records, matrix, parts, strict=True)]
        try:
            with self._keywords.track(r.user_id for r in records) as write:
                with self._tx() as conn, conn.cursor() as cur:
                    write.before(conn)
                    cur.executemany(schema.INSERT_SQL, rows)
                    log_adds(POSTGRES, conn, records)
                    write.after(conn)

                def apply(user_id: str, held: Held) -> None:
                    for record, row in zip(records, rows, strict=True):
                        if record.user_id == user_id:  # the terms as the INSERT indexed them
                            held.add(record.id, row[schema.TERMS_PARAM].split(), to_us(record.created_at) or 0)

                write.done(apply)
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise ValidationError("id", "is already taken; omit it to get a fresh one") from exc
            raise
        self._note_growth(len(records))

    def put_facets(self, user_id: str, rows: Sequence[tuple[str, str, Vector]], *, replace: bool = False) -> int:
        if not rows:
            return 0
        params = facet_updates(user_id, rows)
        unset = "" if replace else " AND facets IS NULL"
        set_count = 0
        with self._tx() as conn:
            for row in params:
                set_count += conn.execute(
                    "UPDATE engram_memories SET facets = %s WHERE user_id = %s AND id = %s AND content_hash = %s "
                    f"AND vector_dims(embedding) = %s{unset}", row,
                ).rowcount
        return set_count

    def _note_growth(self, inserted: int) -> None:
        """ANALYZE once the rows inserted since the last one reach :data:`_ANALYZE_AFTER` and the
        table's size then: a bulk load doubles the table a few times, so that is a few ANALYZEs of
        at most 30,000 sampled rows each."""
        with self._growth:
            self._unanalyzed += inserted
            due = self._unanalyzed >= max(_ANALYZE_AFTER, self._analyzed_rows)
        if due:
            self.analyze()

    def analyze(self) -> None:
        """Refresh the planner's statistics of the memories table (bulk loads and ``engram copy`` do).

        Right after a bulk load the planner still sees the table as it was (autovacuum analyzes a
        minute or more later) and ignores the HNSW index and the per-user indexes for a scan.
        """
        with self._tx() as conn:
            owner = conn.execute(
                "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = 'engram_memories'::regclass"
            ).fetchone()
            if not (owner and owner[0]):
                return  # only the table's owner may; autovacuum will, later
            # What autovacuum would also do: merge the GIN indexes' pending entries, which the
            # planner counts as a cost of every keyword, tag or entity lookup until then.
            for index in ("engram_memories_tsv", "engram_memories_tags", "engram_memories_entities",
                          "engram_memories_named_days"):
                conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (index,))
            conn.execute("ANALYZE engram_memories")
            row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'engram_memories'::regclass").fetchone()
        with self._growth:
            # At least what this store knows it inserted: on Citus the coordinator's table is empty.
            self._analyzed_rows = max(int(row[0]) if row else 0, self._analyzed_rows + self._unanalyzed)
            self._unanalyzed = 0

    def replace(self, record: MemoryRecord, vector: Vector | None, *, facets: Vector | None = None) -> None:
        new = None if vector is None else np.asarray(vector, dtype=np.float32)
        if new is not None:
            self._ensure_hnsw(len(new))
        with self._keywords.track([record.user_id]) as write:
            with self._tx() as conn:
                write.before(conn)
                row = conn.execute(
                    "DELETE FROM engram_memories WHERE user_id = %s AND id = %s "
                    f"RETURNING embedding, facets, {COLUMNS}",
                    (record.user_id, record.id),
                ).fetchone()
                if row is None:
                    return
                kept, parts = new, facets
                if new is None:  # the same content: its vector and facets stay
                    kept = schema.to_array_or_none(row[0])
                    parts = None if row[1] is None or kept is None else facet_matrix(row[1], kept.size)
                params = schema.record_params(record, kept, parts)
                conn.execute(schema.INSERT_SQL, params)
                log_replace(POSTGRES, conn, row_to_record(POSTGRES, row[2:]), record)
                write.after(conn)
            write.done(lambda _, held: held.add(
                record.id, params[schema.TERMS_PARAM].split(), to_us(record.created_at) or 0))

    def delete_many(self, user_id: str, memory_ids: Sequence[str]) -> int:
        with self._keywords.track([user_id]) as write:
            self._tracking.write = write  # the shared delete's one transaction (_write) reads the versions
            try:
                count = super().delete_many(user_id, memory_ids)
            finally:
                self._tracking.write = None

            def apply(_: str, held: Held) -> None:
                for memory_id in memory_ids:  # one not deleted is not held either
                    held.postings.remove(memory_id)

            write.done(apply)
        return count

    def forget_user(self, user_id: str) -> int:
        count = super().forget_user(user_id)
        self._keywords.drop(user_id)
        return count

    # -- reads ------------------------------------------------------------------------------------
    def vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        # Binary transfer: pgvector's binary loader is a buffer copy, its text form a float parse each.
        with self._tx() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT id, embedding FROM engram_memories WHERE user_id = %s AND id = ANY(%s::text[]) "
                "AND embedding IS NOT NULL",
                (user_id, list(dict.fromkeys(memory_ids))),
            ).fetchall()
        return {memory_id: schema.to_array(vec) for memory_id, vec in rows}

    def facets(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        rows = self._read(
            "SELECT id, facets, vector_dims(embedding) FROM engram_memories WHERE user_id = %s "
            "AND id = ANY(%s::text[]) AND facets IS NOT NULL AND embedding IS NOT NULL",
            (user_id, list(dict.fromkeys(memory_ids))),
        )
        return facet_matrices(rows)

    def change_token(self, user_id: str) -> str:
        """The user's write counter, which triggers bump in every writing transaction."""
        return str(self._scalar("SELECT version FROM engram_user_versions WHERE user_id = %s", (user_id,)) or 0)

    def stats(self) -> Mapping[str, Any]:
        rows = self._read("SELECT kind, count(*) FROM engram_memories GROUP BY kind ORDER BY kind")
        users = self._scalar("SELECT count(DISTINCT user_id) FROM engram_memories")
        model_id = self._scalar("SELECT value FROM engram_meta WHERE key = 'model_id'")
        size = self._scalar("SELECT " + " + ".join(f"pg_total_relation_size('{t}')" for t in schema.TABLES))
        return {
            "backend": "postgres",
            "url": schema.redact(self.url),
            "memories": sum(int(n) for _, n in rows),
            "users": int(users),
            "by_kind": {k: int(n) for k, n in rows},
            "model_id": model_id,
            "bytes": int(size or 0),
        }
