"""The server store: PostgreSQL with pgvector (HNSW, cosine), a tsvector GIN index and a connection pool.

Semantics mirror :class:`engram.stores.sqlite.store.SQLiteStore` call for call (same ordering, same
tie-breaks: score descending then id ascending). Two candidate sources are computed differently:

* ``vector_search`` is exact (a scan of the user's rows) while the user has at most ``exact_limit``
  memories; above that it uses the HNSW index with ``hnsw.ef_search`` raised and pgvector 0.8's
  iterative scan (``relaxed_order``) so a per-user filter still yields ``n`` results. That path is
  approximate: recall below 1 is possible, and ``hnsw.max_scan_tuples`` bounds the work.
* ``keyword_search`` computes Okapi BM25 (k1=1.2, b=0.75, Lucene's IDF) in SQL over a tsvector of the
  stemmed terms both backends index, with N, average length and document frequencies taken over the
  user's own memories, as on SQLite; terms are planned rarest first within ``keyword_budget``
  postings (see keyword.py).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout

from engram.errors import EmbedderMismatch, StoreError, StoreUnavailable, ValidationError
from engram.ext import Vector
from engram.ingest import truth
from engram.model import Entity, Filters, Hit, Link, MemoryRecord
from engram.stores.postgres import distributed, schema
from engram.stores.postgres.candidates import CandidateMixin
from engram.stores.postgres.keyword import KeywordPlanner
from engram.stores.postgres.knowledge import KnowledgeMixin, forget_knowledge, forget_memory_in_log
from engram.stores.sqlite.knowledge import LOG_RETENTION, check_log_retention
from engram.text import ROLE_WORDS

__all__ = ["PostgresStore"]

Conn = psycopg.Connection[Any]


def _insert_link(conn: Conn, user_id: str, link: Link) -> None:
    """As ``add_link``, inside the caller's transaction."""
    conn.execute(
        "INSERT INTO engram_links (user_id, from_id, to_id, type, strength, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (user_id, from_id, to_id, type) "
        "DO UPDATE SET strength = EXCLUDED.strength, created_at = EXCLUDED.created_at",
        (user_id, link.from_id, link.to_id, link.type, link.strength, datetime.now(UTC)),
    )


def _supersedes(conn: Conn, user_id: str, memory_id: str, near: str, far: str) -> list[MemoryRecord]:
    """The memories at the ``far`` end of ``supersedes`` links whose ``near`` end is ``memory_id``."""
    rows = conn.execute(
        f"SELECT {schema.COLUMNS} FROM engram_memories WHERE user_id = %s AND id IN "
        f"(SELECT {far} FROM engram_links WHERE user_id = %s AND {near} = %s AND type = 'supersedes')",
        (user_id, user_id, memory_id),
    ).fetchall()
    return [schema.row_to_record(r) for r in rows]


class PostgresStore(CandidateMixin, KnowledgeMixin):
    """Every call takes a pooled connection for one transaction; safe to share between threads.

    Plain-SQL candidate primitives live in :mod:`.candidates`, relations, the retrieval log and
    tuned weights in :mod:`.knowledge`.
    """

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 8, exact_limit: int = 5_000,
        keyword_budget: int = 2_000, ef_search: int = 200, log_retention: int | None = LOG_RETENTION,
    ) -> None:
        self.url = url
        self.log_retention = check_log_retention(log_retention)  # each user's newest logged retrievals kept
        self._log_writes = {}
        self.exact_limit = exact_limit
        self.keyword_budget = keyword_budget
        self._keywords = KeywordPlanner(keyword_budget)
        self.ef_search = ef_search
        self._indexed_dims: set[int] = set()
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
        """One pooled connection in one transaction (committed on success, rolled back on error)."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"postgres: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"postgres: {exc}") from exc

    def _read(self, query: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        with self._tx() as conn:
            return conn.execute(query, params).fetchall()

    def _scalar(self, query: str, params: Sequence[Any] = ()) -> Any:
        rows = self._read(query, params)
        return rows[0][0] if rows else None

    def close(self) -> None:
        self._pool.close()

    def truncate(self) -> None:
        """Delete every row of every table (tests); the schema and indexes stay."""
        with self._tx() as conn:
            conn.execute(f"TRUNCATE {', '.join(schema.TABLES)}")

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
        rows = self._read(
            "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM engram_memories "
            "WHERE user_id = %s AND content_hash = ANY(%s::text[]) AND embedding IS NOT NULL "
            "AND (role IS NULL OR lower(btrim(role)) = ANY(%s::text[])) ORDER BY content_hash",
            (user_id, unique, sorted(ROLE_WORDS)),
        )
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
    def put_many(self, records: Sequence[MemoryRecord], vectors: Vector) -> None:
        if len(records) != len(vectors):
            raise StoreError(f"{len(records)} records but {len(vectors)} vectors")
        if not records:
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        self._ensure_hnsw(int(matrix.shape[1]))
        try:
            with self._tx() as conn, conn.cursor() as cur:
                rows = [schema.record_params(r, v) for r, v in zip(records, matrix, strict=True)]
                cur.executemany(schema.INSERT_SQL, rows)
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise ValidationError("id", "is already taken; omit it to get a fresh one") from exc
            raise

    def replace(self, record: MemoryRecord, vector: Vector | None) -> None:
        new = None if vector is None else np.asarray(vector, dtype=np.float32)
        if new is not None:
            self._ensure_hnsw(len(new))
        with self._tx() as conn:
            row = conn.execute(
                "DELETE FROM engram_memories WHERE user_id = %s AND id = %s RETURNING embedding",
                (record.user_id, record.id),
            ).fetchone()
            if row is None:
                return
            kept = new if new is not None else schema.to_array_or_none(row[0])
            conn.execute(schema.INSERT_SQL, schema.record_params(record, kept))

    def delete(self, user_id: str, memory_id: str) -> bool:
        """Remove the row, its links and logged retrievals; no query sees it once this returns. The
        fact versions it superseded are walked again (:func:`engram.ingest.truth.reinstate`) in the
        same transaction.

        Unlike SQLite (see :mod:`engram.stores.sqlite.store`), this does not erase the bytes: a
        deleted or replaced row stays in its table and index pages until (auto)VACUUM prunes them
        and the space is reused, and in WAL segments, archives and backups per the server's
        retention. Erasure on disk is the database operator's business (VACUUM, WAL and backup
        policy, disk encryption).
        """
        with self._tx() as conn:
            row = conn.execute(
                f"DELETE FROM engram_memories WHERE user_id = %s AND id = %s RETURNING {schema.COLUMNS}",
                (user_id, memory_id),
            ).fetchone()
            if row is None:
                return False
            deleted = schema.row_to_record(row)
            if deleted.kind == "fact":
                # Before the links go: the versions it superseded are walked again (engram.ingest.truth).
                changed, pairs = truth.reinstate(
                    deleted, _supersedes(conn, user_id, memory_id, "from_id", "to_id"),
                    _supersedes(conn, user_id, memory_id, "to_id", "from_id"),
                )
                for record in changed:
                    conn.execute(
                        "UPDATE engram_memories SET status = %s, valid_to = %s WHERE user_id = %s AND id = %s",
                        (record.status, record.valid_to, user_id, record.id),
                    )
                for pair in pairs:
                    for link_type in ("supersedes", "contradicts"):
                        _insert_link(conn, user_id, Link(pair.newer.id, pair.older.id, link_type, 1.0))
            conn.execute(
                "DELETE FROM engram_links WHERE user_id = %s AND (from_id = %s OR to_id = %s)",
                (user_id, memory_id, memory_id),
            )
            forget_memory_in_log(conn, user_id, memory_id)
            return True

    def forget_user(self, user_id: str) -> int:
        with self._tx() as conn:
            count = conn.execute("DELETE FROM engram_memories WHERE user_id = %s", (user_id,)).rowcount
            conn.execute("DELETE FROM engram_links WHERE user_id = %s", (user_id,))
            conn.execute("DELETE FROM engram_entities WHERE user_id = %s", (user_id,))
            forget_knowledge(conn, user_id)
            return int(count)

    def record_access(self, user_id: str, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        with self._tx() as conn:
            conn.execute(
                "UPDATE engram_memories SET access_count = access_count + 1, last_accessed_at = %s "
                "WHERE user_id = %s AND id = ANY(%s::text[])",
                (at, user_id, list(dict.fromkeys(memory_ids))),
            )

    def add_link(self, user_id: str, link: Link) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO engram_links (user_id, from_id, to_id, type, strength, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (user_id, from_id, to_id, type) "
                "DO UPDATE SET strength = EXCLUDED.strength, created_at = EXCLUDED.created_at",
                (user_id, link.from_id, link.to_id, link.type, link.strength, datetime.now(UTC)),
            )

    def upsert_entity(self, user_id: str, entity: Entity) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO engram_entities (user_id, id, type, name, aliases) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (user_id, id) DO UPDATE SET type = EXCLUDED.type, name = EXCLUDED.name, "
                "aliases = EXCLUDED.aliases",
                (user_id, entity.id, entity.type, entity.name, list(entity.aliases)),
            )

    # -- reads ------------------------------------------------------------------------------------
    def get(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        rows = self._read(
            f"SELECT {schema.COLUMNS} FROM engram_memories WHERE user_id = %s AND id = %s", (user_id, memory_id)
        )
        return schema.row_to_record(rows[0]) if rows else None

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> list[MemoryRecord]:
        ids = list(dict.fromkeys(memory_ids))
        rows = self._read(
            f"SELECT {schema.COLUMNS} FROM engram_memories WHERE user_id = %s AND id = ANY(%s::text[])", (user_id, ids)
        )
        found = {row[0]: schema.row_to_record(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        # Binary transfer: pgvector's binary loader is a buffer copy, its text form a float parse each.
        with self._tx() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                "SELECT id, embedding FROM engram_memories WHERE user_id = %s AND id = ANY(%s::text[]) "
                "AND embedding IS NOT NULL",
                (user_id, list(dict.fromkeys(memory_ids))),
            ).fetchall()
        return {memory_id: schema.to_array(vec) for memory_id, vec in rows}

    def list(self, user_id: str, filters: Filters, *, limit: int = 100, offset: int = 0) -> builtins.list[MemoryRecord]:
        where, params = schema.filter_sql(filters)
        rows = self._read(
            f"SELECT {schema.COLUMNS} FROM engram_memories m WHERE m.user_id = %s AND {where} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT %s OFFSET %s",
            (user_id, *params, limit, offset),
        )
        return [schema.row_to_record(r) for r in rows]

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self._scalar("SELECT count(*) FROM engram_memories"))
        return int(self._scalar("SELECT count(*) FROM engram_memories WHERE user_id = %s", (user_id,)))

    def user_exists(self, user_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM engram_memories WHERE user_id = %s LIMIT 1", (user_id,)))

    def change_token(self, user_id: str) -> str:
        """The user's write counter, which triggers bump in every writing transaction."""
        return str(self._scalar("SELECT version FROM engram_user_versions WHERE user_id = %s", (user_id,)) or 0)

    def users(self) -> builtins.list[str]:
        """Every user with memories, entities or links, sorted (for copy_store)."""
        rows = self._read(
            "SELECT user_id FROM engram_memories UNION SELECT user_id FROM engram_entities "
            "UNION SELECT user_id FROM engram_links ORDER BY 1"
        )
        return [r[0] for r in rows]

    def links(self, user_id: str, memory_id: str) -> builtins.list[Link]:
        rows = self._read(
            "SELECT from_id, to_id, type, strength FROM engram_links "
            "WHERE user_id = %s AND (from_id = %s OR to_id = %s) ORDER BY type, from_id, to_id",
            (user_id, memory_id, memory_id),
        )
        return [Link(r[0], r[1], r[2], float(r[3])) for r in rows]

    def entities(self, user_id: str) -> builtins.list[Entity]:
        rows = self._read(
            "SELECT id, type, name, aliases FROM engram_entities WHERE user_id = %s ORDER BY id", (user_id,)
        )
        return [Entity(r[0], r[1], r[2], tuple(r[3])) for r in rows]

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

    # -- candidate primitives ---------------------------------------------------------------------
    def vector_search(self, user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]:
        if n <= 0:
            return []
        where, params = schema.filter_sql(filters)
        q = np.asarray(query, dtype=np.float32)
        dims = int(q.shape[0])
        with self._tx() as conn:
            size = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM engram_memories WHERE user_id = %s LIMIT %s) s",
                (user_id, self.exact_limit + 1),
            ).fetchone()
            if size is not None and int(size[0]) <= self.exact_limit:
                rows = conn.execute(
                    "SELECT m.id, 1 - (m.embedding <=> %s) AS score FROM engram_memories m "
                    f"WHERE m.user_id = %s AND m.embedding IS NOT NULL AND vector_dims(m.embedding) = %s "
                    f"AND {where} ORDER BY score DESC, m.id LIMIT %s",
                    (q, user_id, dims, *params, n),
                ).fetchall()
            else:
                # The dimension is a literal (an int) so the planner can match the partial HNSW index.
                ef_search = str(min(1000, max(self.ef_search, 2 * n)))
                distributed.set_local(
                    conn, {"hnsw.ef_search": ef_search, "hnsw.iterative_scan": "relaxed_order"}, citus=self._citus
                )
                rows = conn.execute(
                    f"WITH c AS MATERIALIZED (SELECT m.id, m.embedding::vector({dims}) <=> %s::vector({dims}) AS d "
                    f"FROM engram_memories m WHERE m.user_id = %s AND vector_dims(m.embedding) = {dims} "
                    f"AND {where} ORDER BY d LIMIT %s) SELECT id, 1 - d AS score FROM c ORDER BY score DESC, id",
                    (q, user_id, *params, n),
                ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def keyword_search(self, user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._keywords.search(self._read, user_id, self.change_token(user_id), text, n, filters)
