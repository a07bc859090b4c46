"""The PostgreSQL schema: numbered migrations (``engram_schema_migrations`` records those applied),
the HNSW index per dimension, and what an insert of a memory supplies beyond the shared columns.

Every table leads its primary key with ``user_id`` and every foreign key and join includes it, so
the tables can be distributed by ``user_id`` on Citus (see docs/scaling.md). Identifiers and other
text that is sorted on use ``COLLATE "C"`` (byte order), the order SQLite and Python use, so ties
break the same way on every backend whatever the database's default collation.

Vectors live in an untyped ``vector`` column; the HNSW index is an expression index on
``embedding::vector(<dims>)`` created once the dimensions are known (see :func:`hnsw_index_sql`),
since an HNSW index needs a fixed dimension.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from engram.days import indexed_days, names_a_month, names_a_quarter, shortens_a_day
from engram.model import Entity, MemoryRecord
from engram.stores.facets import facet_bytes
from engram.stores.postgres.day_rewrites import MONTH_NAMES, QUARTER_NAMES, SHORTENED_DAYS, batches, reindex_days
from engram.stores.postgres.dialect import POSTGRES, day_keys
from engram.stores.postgres.substrings import create_substring_index
from engram.stores.sql.rows import COLUMNS, row_to_record
from engram.stores.sql.rows import record_params as shared_params
from engram.text import memory_terms

__all__ = [
    "INSERT_SQL",
    "MIGRATIONS",
    "TABLES",
    "TERMS_PARAM",
    "hnsw_index_name",
    "hnsw_index_sql",
    "migrate",
    "record_params",
    "redact",
    "to_array",
    "to_array_or_none",
]

#: Tables holding data, in an order safe for TRUNCATE ... CASCADE.
TABLES = (
    "engram_user_versions",
    "engram_links", "engram_entities", "engram_memories", "engram_meta", "engram_entity_ontology",
    "engram_entity_relations", "engram_retrieval_log", "engram_retrieval_feedback", "engram_tuned_weights",
    "engram_memory_history",
)

# Tags and entities are text[] on the row with GIN indexes (tags_all is @>, tags_any and entity
# candidates are &&); times are timestamptz (microsecond precision, as SQLite's integers).
MIGRATIONS: tuple[str | Callable[[psycopg.Connection[Any]], None], ...] = (
    # 1: memories, keyword index, links, entities, meta
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE engram_meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
    CREATE TABLE engram_memories (
        user_id text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        kind text COLLATE "C" NOT NULL,
        content text NOT NULL,
        content_hash text COLLATE "C" NOT NULL,
        agent_id text, session_id text, project_id text, role text,
        subject text, predicate text, object text, trigger_text text, action_text text,
        tags text[] NOT NULL DEFAULT '{}',
        entities text[] NOT NULL DEFAULT '{}',
        importance double precision NOT NULL,
        created_at timestamptz NOT NULL,
        recorded_at timestamptz NOT NULL,
        valid_from timestamptz, valid_to timestamptz,
        last_accessed_at timestamptz,
        access_count bigint NOT NULL DEFAULT 0,
        status text COLLATE "C" NOT NULL DEFAULT 'active',
        metadata json NOT NULL DEFAULT '{}',
        doc_key text, version bigint,
        doc_len integer NOT NULL,
        content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, content)) STORED,
        embedding vector,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX engram_memories_user_created ON engram_memories (user_id, created_at DESC) INCLUDE (doc_len);
    CREATE INDEX engram_memories_user_kind ON engram_memories (user_id, kind, created_at DESC);
    CREATE INDEX engram_memories_important ON engram_memories (user_id, importance DESC)
        WHERE importance > 0.7;
    CREATE INDEX engram_memories_user_access ON engram_memories (user_id, access_count DESC);
    CREATE INDEX engram_memories_user_accessed ON engram_memories (user_id, last_accessed_at DESC);
    CREATE INDEX engram_memories_user_session ON engram_memories (user_id, session_id);
    CREATE INDEX engram_memories_user_doc ON engram_memories (user_id, doc_key, version);
    CREATE INDEX engram_memories_user_fact ON engram_memories (user_id, subject, predicate);
    CREATE INDEX engram_memories_hash ON engram_memories (content_hash);
    CREATE INDEX engram_memories_tsv ON engram_memories USING gin (content_tsv);
    CREATE INDEX engram_memories_tags ON engram_memories USING gin (tags);
    CREATE INDEX engram_memories_entities ON engram_memories USING gin (entities);

    CREATE TABLE engram_links (
        user_id text COLLATE "C" NOT NULL,
        from_id text COLLATE "C" NOT NULL,
        to_id text COLLATE "C" NOT NULL,
        type text COLLATE "C" NOT NULL,
        strength double precision NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, from_id, to_id, type)
    );
    CREATE INDEX engram_links_user_to ON engram_links (user_id, to_id);

    CREATE TABLE engram_entities (
        user_id text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        type text NOT NULL,
        name text NOT NULL,
        aliases text[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (user_id, id)
    );
    """,
    # 2: entity relations and their ontology, retrieval log, feedback, tuned weights (as SQLite's 3)
    """
    CREATE TABLE engram_entity_ontology (
        user_id text COLLATE "C" NOT NULL,
        from_type text COLLATE "C" NOT NULL,
        relation text COLLATE "C" NOT NULL,
        to_type text COLLATE "C" NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, from_type, relation, to_type)
    );
    CREATE TABLE engram_entity_relations (
        user_id text COLLATE "C" NOT NULL,
        from_id text COLLATE "C" NOT NULL,
        relation text COLLATE "C" NOT NULL,
        to_id text COLLATE "C" NOT NULL,
        from_type text COLLATE "C" NOT NULL,
        to_type text COLLATE "C" NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, from_id, relation, to_id)
    );
    CREATE TABLE engram_retrieval_log (
        user_id text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        query text NOT NULL,
        category text NOT NULL,
        strategy text NOT NULL,
        items json NOT NULL,
        settings json NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX engram_retrieval_log_user_created ON engram_retrieval_log (user_id, created_at DESC);
    CREATE TABLE engram_retrieval_feedback (
        user_id text COLLATE "C" NOT NULL,
        retrieval_id text COLLATE "C" NOT NULL,
        memory_id text COLLATE "C" NOT NULL,
        used_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, retrieval_id, memory_id)
    );
    CREATE TABLE engram_tuned_weights (
        user_id text COLLATE "C" NOT NULL,
        strategy text COLLATE "C" NOT NULL,
        weights json NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, strategy)
    );
    """,
    # 3: a per-user write counter, bumped by triggers in the writing transaction, so a cache in any
    # process can tell that a user's memories, links or entities changed (see change_token)
    """
    CREATE TABLE engram_user_versions (
        user_id text COLLATE "C" PRIMARY KEY,
        version bigint NOT NULL
    );
    CREATE FUNCTION engram_bump_user_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO engram_user_versions (user_id, version)
        SELECT DISTINCT user_id, 1 FROM changed
        ON CONFLICT (user_id) DO UPDATE SET version = engram_user_versions.version + 1;
        RETURN NULL;
    END $$;
    CREATE TRIGGER engram_memories_insert_version AFTER INSERT ON engram_memories
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_memories_update_version AFTER UPDATE ON engram_memories
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_memories_delete_version AFTER DELETE ON engram_memories
        REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_links_insert_version AFTER INSERT ON engram_links
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_links_update_version AFTER UPDATE ON engram_links
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_links_delete_version AFTER DELETE ON engram_links
        REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_entities_insert_version AFTER INSERT ON engram_entities
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_entities_update_version AFTER UPDATE ON engram_entities
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    CREATE TRIGGER engram_entities_delete_version AFTER DELETE ON engram_entities
        REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_version();
    """,
    # 4: the keyword index holds the stemmed terms of engram.text.index_terms (as SQLite's), written
    # by Python at insert: no longer a generated column over the raw content.
    """
    DROP INDEX engram_memories_tsv;
    ALTER TABLE engram_memories DROP COLUMN content_tsv;
    ALTER TABLE engram_memories ADD COLUMN content_tsv tsvector NOT NULL DEFAULT ''::tsvector;
    CREATE INDEX engram_memories_tsv ON engram_memories USING gin (content_tsv);
    """,
    # 5: re-index what migration 4 emptied, in Python.
    lambda conn: _reindex_keywords(conn),
    # 6: entities for memories stored before write-time extraction (engram.stores.entity_backfill).
    lambda conn: _backfill_entities(conn),
    # 7: the audit log of changes to memories (as SQLite's 7; engram.stores.sql.history).
    """
    CREATE TABLE IF NOT EXISTS engram_memory_history (
        user_id text COLLATE "C" NOT NULL,
        memory_key text COLLATE "C" NOT NULL,
        id text COLLATE "C" NOT NULL,
        event text NOT NULL,
        at timestamptz NOT NULL,
        content_before text,
        content_after text,
        fields text NOT NULL DEFAULT '[]',
        PRIMARY KEY (user_id, memory_key, id)
    );
    """,
    # 8: structured fields are indexed too where their words are not in the content (as SQLite's 8).
    lambda conn: _reindex_keywords(conn, labelled_only=True),
    # 9: a per-user counter of changes to what the keyword postings hold (engram.stores.postgres.keyword).
    lambda conn: _count_term_changes(conn),
    # 10: the substring index of keyword search (as SQLite's 10; engram.stores.postgres.substrings).
    lambda conn: create_substring_index(conn),
    # 11: an add's lookup of the user's stored vectors by content hash reads the user's rows with those
    # hashes (as SQLite's 13), not every user's copies of common text through a hash-only index.
    """
    CREATE INDEX IF NOT EXISTS engram_memories_user_hash ON engram_memories (user_id, content_hash);
    DROP INDEX IF EXISTS engram_memories_hash;
    """,
    # 12: vectors of parts of a memory, kept in its row (as SQLite's 17; engram.stores.facets).
    "ALTER TABLE engram_memories ADD COLUMN IF NOT EXISTS facets bytea",
    # 13: the days each memory names (engram.days), for questions about a day (as SQLite's 18).
    lambda conn: _index_named_days(conn),
    # 14: a user's newest memories with standing sentences, which a request reads (as SQLite's 19).
    "CREATE INDEX IF NOT EXISTS engram_memories_user_standing ON engram_memories (user_id, created_at DESC) "
    "WHERE facets IS NOT NULL",
    # 15: the turns next to a message (session_neighbors), each one index seek: in its session (as
    # SQLite's 6; (user_id, session_id) alone read and sorted the whole session for every candidate),
    # and among a user's messages stored without a session, said by someone, per agent (as SQLite's 20).
    "CREATE INDEX IF NOT EXISTS engram_memories_user_session_time ON engram_memories "
    "(user_id, session_id, created_at, id);"
    "DROP INDEX IF EXISTS engram_memories_user_session;"  # its prefix
    "CREATE INDEX IF NOT EXISTS engram_memories_user_stream ON engram_memories "
    "(user_id, (COALESCE(agent_id, '')), created_at, id) "
    "WHERE session_id IS NULL AND kind = 'message' AND role IS NOT NULL AND status = 'active'",
    # 16: the days of the whole months gone by that memories tell of, read again for the memories
    # that name a month (as SQLite's 22): only the rows that change are written.
    lambda conn: reindex_days(conn, names_a_month, MONTH_NAMES),
    # 17: the days memories tell of as chats shorten them ("saw him yday"), as SQLite's 23.
    lambda conn: reindex_days(conn, shortens_a_day, SHORTENED_DAYS),
    # 18: the days of the quarters gone by that memories name ("Q3 churn came out at 5.4%"), as SQLite's 24.
    lambda conn: reindex_days(conn, names_a_quarter, QUARTER_NAMES),
)

_LOCK_KEY = 0x656E6772616D  # "engram": serializes migrations across processes

#: ``terms`` moves with inserts and deletes of a user's memories (in the same trigger as ``version``,
#: one per statement as before) and with updates of what is indexed; access counts, statuses,
#: links, entities and logs, which every retrieval or ingest writes, leave it alone. One user at a
#: time: Citus cannot plan an INSERT ... SELECT from a transition table (see distributed.py).
#: Idempotent, as every migration from 6 on: a store may run them again.
_TERM_CHANGES = """
ALTER TABLE engram_user_versions ADD COLUMN IF NOT EXISTS terms bigint NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION engram_bump_user_terms() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed_user text;
BEGIN
    FOR changed_user IN SELECT DISTINCT user_id FROM changed LOOP
        INSERT INTO engram_user_versions (user_id, version, terms) VALUES (changed_user, 1, 1)
        ON CONFLICT (user_id) DO UPDATE
        SET version = engram_user_versions.version + 1, terms = engram_user_versions.terms + 1;
    END LOOP;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION engram_bump_user_terms_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO engram_user_versions (user_id, version, terms) VALUES (NEW.user_id, 1, 1)
    ON CONFLICT (user_id) DO UPDATE SET terms = engram_user_versions.terms + 1;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS engram_memories_insert_version ON engram_memories;
DROP TRIGGER IF EXISTS engram_memories_delete_version ON engram_memories;
DROP TRIGGER IF EXISTS engram_memories_update_terms ON engram_memories;
CREATE TRIGGER engram_memories_insert_version AFTER INSERT ON engram_memories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_terms();
CREATE TRIGGER engram_memories_delete_version AFTER DELETE ON engram_memories
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION engram_bump_user_terms();
CREATE TRIGGER engram_memories_update_terms AFTER UPDATE OF id, created_at, doc_len, content_tsv
    ON engram_memories FOR EACH ROW EXECUTE FUNCTION engram_bump_user_terms_row();
"""


def _count_term_changes(conn: psycopg.Connection[Any]) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is not None:
        # Tables distributed already (a store opened before this migration): triggers on them
        # need this, as in distributed.py.
        conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
    conn.execute(_TERM_CHANGES.encode())


def _reindex_keywords(conn: psycopg.Connection[Any], *, labelled_only: bool = False) -> None:
    only = "AND coalesce(subject, predicate, object, trigger_text, action_text) IS NOT NULL " if labelled_only else ""
    for rows in batches(conn, "content, role, subject, predicate, object, trigger_text, action_text", only):
        with conn.cursor() as cur:
            cur.executemany(
                "UPDATE engram_memories SET content_tsv = to_tsvector('simple', %s), doc_len = %s "
                "WHERE user_id = %s AND id = %s",
                [(" ".join(terms), len(terms), user_id, memory_id)
                 for user_id, memory_id, content, role, *labels in rows
                 for terms in [memory_terms(content, role, *labels)]],
            )


def _backfill_entities(conn: psycopg.Connection[Any]) -> None:
    from engram.stores.entity_backfill import retag

    users = [r[0] for r in conn.execute("SELECT DISTINCT user_id FROM engram_memories ORDER BY 1").fetchall()]
    for user_id in users:
        entities = [
            Entity(r[0], r[1], r[2], tuple(r[3]))
            for r in conn.execute(
                "SELECT id, type, name, aliases FROM engram_entities WHERE user_id = %s", (user_id,)
            ).fetchall()
        ]
        rows = conn.execute(f"SELECT {COLUMNS} FROM engram_memories WHERE user_id = %s", (user_id,)).fetchall()
        records = (row_to_record(POSTGRES, r) for r in rows)
        changes = [(list(ids), user_id, record.id) for record, ids in retag(records, entities)]
        if changes:
            with conn.cursor() as cur:
                cur.executemany("UPDATE engram_memories SET entities = %s WHERE user_id = %s AND id = %s", changes)


def _index_named_days(conn: psycopg.Connection[Any]) -> None:
    conn.execute("ALTER TABLE engram_memories ADD COLUMN IF NOT EXISTS named_days text[] NOT NULL DEFAULT '{}'")
    conn.execute("CREATE INDEX IF NOT EXISTS engram_memories_named_days ON engram_memories USING gin (named_days)")
    for rows in batches(conn, "content, created_at"):
        changes = [(day_keys(user_id, days), user_id, memory_id) for user_id, memory_id, content, said in rows
                   for days in [indexed_days(content, said)] if days]
        if changes:
            with conn.cursor() as cur:
                cur.executemany("UPDATE engram_memories SET named_days = %s WHERE user_id = %s AND id = %s", changes)


def migrate(conn: psycopg.Connection[Any]) -> int:
    """Apply every migration not yet applied, each in its own transaction; returns the version."""
    with conn.transaction():
        conn.execute(
            "CREATE TABLE IF NOT EXISTS engram_schema_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
    current = 0
    for number, script in enumerate(MIGRATIONS, start=1):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM engram_schema_migrations").fetchone()
            current = int(row[0]) if row else 0
            if number <= current:
                continue
            if callable(script):
                script(conn)
            else:
                conn.execute(script.encode())  # no parameters: a multi-statement script is allowed
            conn.execute("INSERT INTO engram_schema_migrations (version) VALUES (%s)", (number,))
            current = number
    return current


def hnsw_index_name(dimensions: int) -> str:
    return f"engram_memories_hnsw_{int(dimensions)}"


def hnsw_index_sql(dimensions: int) -> sql.Composed:
    """The HNSW (cosine) index for vectors of one dimension, as a partial expression index."""
    dims = sql.Literal(int(dimensions))
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {name} ON engram_memories "
        "USING hnsw ((embedding::vector({dims})) vector_cosine_ops) WHERE vector_dims(embedding) = {dims}"
    ).format(name=sql.Identifier(hnsw_index_name(dimensions)), dims=dims)


def to_array(value: Any) -> npt.NDArray[np.float32]:
    """A float32 row from what pgvector's loader returns (a ``Vector``, or an array in older versions)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.array(value, dtype=np.float32)


def to_array_or_none(value: Any) -> npt.NDArray[np.float32] | None:
    return None if value is None else to_array(value)


def redact(url: str) -> str:
    try:
        info = conninfo_to_dict(url)
    except psycopg.Error:
        return "postgresql://?"
    return f"postgresql://{info.get('user') or ''}@{info.get('host') or ''}:{info.get('port') or 5432}/" + str(
        info.get("dbname") or ""
    )


# -- rows ---------------------------------------------------------------------------------------------
#: The shared columns plus doc_len (indexed terms, for BM25), the terms and the embedding: what an INSERT supplies.
INSERT_SQL = (
    f"INSERT INTO engram_memories ({COLUMNS}, doc_len, content_tsv, embedding, facets, named_days) "
    f"VALUES ({', '.join(['%s'] * 28)}, to_tsvector('simple', %s), %s, %s, %s)"
)

#: Where the indexed terms are in :func:`record_params`' tuple.
TERMS_PARAM = -4


def record_params(r: MemoryRecord, vector: Any, facets: Any = None) -> tuple[Any, ...]:
    terms = memory_terms(r.content, r.role, r.subject, r.predicate, r.object, r.trigger, r.action)
    width = None if vector is None else int(np.size(vector))
    return (*shared_params(POSTGRES, r), len(terms), " ".join(terms), vector, facet_bytes(facets, width),
            day_keys(r.user_id, indexed_days(r.content, r.created_at)))
