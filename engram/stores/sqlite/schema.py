"""Numbered migrations for the embedded store; ``PRAGMA user_version`` records the last applied."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from engram.stores.sqlite.backfill import backfill_entities
from engram.stores.sqlite.bulk_index import TERM_COLUMNS, defer_row_indexing
from engram.stores.sqlite.keyword_terms import keyword_document, keyword_length, user_key
from engram.stores.sqlite.named_days import (
    create_named_days,
    reindex_month_names,
    reindex_quarter_names,
    reindex_shortened_days,
)
from engram.stores.sqlite.substrings import create_substring_index
from engram.stores.sqlite.versions import count_access, count_removals, create_user_versions, log_removals

__all__ = ["MIGRATIONS", "keyword_document", "migrate", "register_functions", "user_key"]

# Times are integer microseconds since the epoch (UTC): exact round-trips and cheap range scans.
# Tags and entities live in side tables so filters and entity candidates use indexes; the JSON
# copies on the row are what fetch() returns.
MIGRATIONS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    # 1: memories, keyword index, tags, entities, links, meta
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        agent_id TEXT, session_id TEXT, project_id TEXT, role TEXT,
        subject TEXT, predicate TEXT, object TEXT, trigger_text TEXT, action_text TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        entities TEXT NOT NULL DEFAULT '[]',
        importance REAL NOT NULL,
        created_at INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        valid_from INTEGER, valid_to INTEGER,
        last_accessed_at INTEGER,
        access_count INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'active',
        metadata TEXT NOT NULL DEFAULT '{}',
        doc_key TEXT, version INTEGER,
        embedding BLOB
    );
    CREATE INDEX memories_user_created ON memories (user_id, created_at DESC);
    CREATE INDEX memories_user_kind ON memories (user_id, kind, created_at DESC);
    CREATE INDEX memories_user_importance ON memories (user_id, importance DESC);
    CREATE INDEX memories_user_access ON memories (user_id, access_count DESC);
    CREATE INDEX memories_user_accessed ON memories (user_id, last_accessed_at DESC);
    CREATE INDEX memories_user_session ON memories (user_id, session_id);
    CREATE INDEX memories_user_doc ON memories (user_id, doc_key, version);
    CREATE INDEX memories_user_fact ON memories (user_id, subject, predicate);
    CREATE INDEX memories_hash ON memories (content_hash);

    CREATE TABLE memory_tags (
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        tag TEXT NOT NULL,
        PRIMARY KEY (memory_rowid, tag)
    );
    CREATE INDEX memory_tags_user_tag ON memory_tags (user_id, tag);

    CREATE TABLE memory_entities (
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        user_id TEXT NOT NULL,
        entity TEXT NOT NULL,
        PRIMARY KEY (memory_rowid, entity)
    );
    CREATE INDEX memory_entities_user_entity ON memory_entities (user_id, entity);

    CREATE TABLE links (
        user_id TEXT NOT NULL,
        from_id TEXT NOT NULL,
        to_id TEXT NOT NULL,
        type TEXT NOT NULL,
        strength REAL NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, from_id, to_id, type)
    );
    CREATE INDEX links_user_to ON links (user_id, to_id);

    CREATE TABLE entities (
        user_id TEXT NOT NULL,
        id TEXT NOT NULL,
        type TEXT NOT NULL,
        name TEXT NOT NULL,
        aliases TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (user_id, id)
    );

    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, content='memories', content_rowid='rowid',
        tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content) VALUES (new.rowid, new.content);
    END;
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    END;
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
        INSERT INTO memories_fts (rowid, content) VALUES (new.rowid, new.content);
    END;
    """,
    # 2: document frequencies for the keyword planner (see keyword.py)
    """
    CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab (memories_fts, 'row');
    """,
    # 3: entity relations and their ontology, retrieval log, feedback, tuned weights (engram.ontology,
    # engram.feedback, engram.tune). Every primary key leads with user_id, as on PostgreSQL.
    """
    CREATE TABLE entity_ontology (
        user_id TEXT NOT NULL,
        from_type TEXT NOT NULL,
        relation TEXT NOT NULL,
        to_type TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, from_type, relation, to_type)
    );
    CREATE TABLE entity_relations (
        user_id TEXT NOT NULL,
        from_id TEXT NOT NULL,
        relation TEXT NOT NULL,
        to_id TEXT NOT NULL,
        from_type TEXT NOT NULL,
        to_type TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, from_id, relation, to_id)
    );
    CREATE TABLE retrieval_log (
        user_id TEXT NOT NULL,
        id TEXT NOT NULL,
        query TEXT NOT NULL,
        category TEXT NOT NULL,
        strategy TEXT NOT NULL,
        items TEXT NOT NULL,
        settings TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, id)
    );
    CREATE INDEX retrieval_log_user_created ON retrieval_log (user_id, created_at DESC);
    CREATE TABLE retrieval_feedback (
        user_id TEXT NOT NULL,
        retrieval_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        used_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, retrieval_id, memory_id)
    );
    CREATE TABLE tuned_weights (
        user_id TEXT NOT NULL,
        strategy TEXT NOT NULL,
        weights TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, strategy)
    );
    """,
    # 4: the keyword index holds stemmed terms computed in Python (engram.text.memory_terms), each
    # prefixed with a key of its user, so a query reads only its user's postings and document
    # frequencies; keyword_stats holds each user's document count and total length for BM25.
    """
    DROP TRIGGER memories_fts_insert;
    DROP TRIGGER memories_fts_delete;
    DROP TRIGGER memories_fts_update;
    DROP TABLE memories_fts_vocab;
    DROP TABLE memories_fts;
    CREATE VIRTUAL TABLE keyword_fts USING fts5 (terms, tokenize='unicode61 remove_diacritics 0');
    CREATE VIRTUAL TABLE keyword_vocab USING fts5vocab (keyword_fts, 'row');
    CREATE TABLE keyword_stats (
        user_id TEXT PRIMARY KEY,
        docs INTEGER NOT NULL,
        terms INTEGER NOT NULL
    );
    INSERT INTO keyword_fts (rowid, terms)
        SELECT rowid, engram_keyword_doc(user_id, content, role) FROM memories;
    INSERT INTO keyword_stats (user_id, docs, terms)
        SELECT user_id, count(*), sum(engram_keyword_len(content, role)) FROM memories GROUP BY user_id;
    CREATE TRIGGER keyword_insert AFTER INSERT ON memories BEGIN
        INSERT INTO keyword_fts (rowid, terms)
            VALUES (new.rowid, engram_keyword_doc(new.user_id, new.content, new.role));
        INSERT INTO keyword_stats (user_id, docs, terms)
            VALUES (new.user_id, 1, engram_keyword_len(new.content, new.role))
            ON CONFLICT (user_id) DO UPDATE SET docs = docs + 1, terms = terms + excluded.terms;
    END;
    CREATE TRIGGER keyword_delete AFTER DELETE ON memories BEGIN
        DELETE FROM keyword_fts WHERE rowid = old.rowid;
        UPDATE keyword_stats SET docs = docs - 1, terms = terms - engram_keyword_len(old.content, old.role)
            WHERE user_id = old.user_id;
    END;
    CREATE TRIGGER keyword_update AFTER UPDATE OF content, role ON memories BEGIN
        DELETE FROM keyword_fts WHERE rowid = old.rowid;
        INSERT INTO keyword_fts (rowid, terms)
            VALUES (new.rowid, engram_keyword_doc(new.user_id, new.content, new.role));
        UPDATE keyword_stats SET terms = terms - engram_keyword_len(old.content, old.role)
            + engram_keyword_len(new.content, new.role) WHERE user_id = new.user_id;
    END;
    """,
    # 5: entities for memories stored before write-time extraction (engram.stores.entity_backfill).
    lambda conn: backfill_entities(conn),
    # 6: read paths at 100k memories (see _read_paths).
    lambda conn: _read_paths(conn),
    # 7 (idempotent, as 6): the audit log of changes to memories (engram.stores.sql.history); memory_key is a hash of
    # the user and memory id, so a deleted memory's id does not stay in the file.
    """
    CREATE TABLE IF NOT EXISTS memory_history (
        user_id TEXT NOT NULL,
        memory_key TEXT NOT NULL,
        id TEXT NOT NULL,
        event TEXT NOT NULL,
        at INTEGER NOT NULL,
        content_before TEXT,
        content_after TEXT,
        fields TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (user_id, memory_key, id)
    );
    """,
    # 8: a memory's structured fields (a fact's subject/predicate/object, a procedure's trigger and
    # action) are indexed too, where their words are not in its content (engram.text.memory_terms).
    lambda conn: _index_labels(conn),
    # 9: each user's write counter, the store's change token (engram.stores.sqlite.versions).
    lambda conn: create_user_versions(conn),
    # 10: the substring index of keyword search (engram.stores.sqlite.substrings).
    lambda conn: create_substring_index(conn),
    # 11: each user's counter of access writes, for the cache of whole records (engram.stores.sqlite.versions).
    lambda conn: count_access(conn),
    # 12: the rows that are not active (superseded, archived: few), for keyword search's status check.
    "CREATE INDEX IF NOT EXISTS memories_user_inactive ON memories (user_id, status) WHERE status <> 'active'",
    # 13: a user's stored vectors found by content hash (an add reuses them instead of embedding again)
    # through the user's own rows: the planner read every row of the user through another user-leading
    # index (~0.7 s an add at a million memories); a hash alone would read every user's copies of
    # common text ("ok", "thanks").
    """
    CREATE INDEX IF NOT EXISTS memories_user_hash ON memories (user_id, content_hash);
    DROP INDEX IF EXISTS memories_hash;
    """,
    # 14: each user's count of deleted or changed memories, which lets a saved index stale only by
    # inserts catch up instead of being rebuilt (engram.stores.sqlite.versions, .saved).
    lambda conn: count_removals(conn),
    # 15: a user's rows after a rowid, for an index catching up on the rows inserted since it was read
    # (engram.stores.sqlite.saved): through the other user-leading indexes that read every entry of the
    # user, ~0.15 s at a million memories for a few new rows.
    "CREATE INDEX IF NOT EXISTS memories_user_rowid ON memories (user_id)",
    # 16: which rows each user's removals counted, for held indexes to catch up on deletes and
    # changes in place as on inserts (engram.stores.sqlite.versions).
    lambda conn: log_removals(conn),
    # 17: vectors of parts of a memory, kept in its row (engram.stores.facets); memories stored
    # before gain them with engram upgrade. Setting them moves the user's change token.
    lambda conn: _add_facets(conn),
    # 18: the days each memory names, for questions about a day (engram.stores.sqlite.named_days).
    lambda conn: create_named_days(conn),
    # 19: a user's newest memories with standing sentences, which a request reads (by_standing).
    "CREATE INDEX IF NOT EXISTS memories_user_standing ON memories (user_id, created_at) WHERE facets IS NOT NULL",
    # 20: a user's messages stored without a session, said by someone, per agent, in order: the turns
    # next to one (session_neighbors).
    "CREATE INDEX IF NOT EXISTS memories_user_stream ON memories "
    "(user_id, (COALESCE(agent_id, '')), created_at, id) "
    "WHERE session_id IS NULL AND kind = 'message' AND role IS NOT NULL AND status = 'active'",
    # 21: a batch of inserts indexed once for the batch, not once a row (engram.stores.sqlite.bulk_index).
    lambda conn: defer_row_indexing(conn),
    # 22: the days of the whole months gone by that memories tell of ("October was 4,120 credits",
    # said in November), read again for the memories that name a month (engram.days).
    lambda conn: reindex_month_names(conn),
    # 23: the days memories tell of as chats shorten them ("saw him yday", "went out on fri"), read
    # again for the memories that hold one (engram.days).
    lambda conn: reindex_shortened_days(conn),
    # 24: the days of the quarters gone by that memories name ("Q3 churn came out at 5.4%", said in
    # November), read again for the memories that name one (engram.days).
    lambda conn: reindex_quarter_names(conn),
)


def _add_facets(conn: sqlite3.Connection) -> None:
    _add_column(conn, "memories", "facets BLOB")
    # The update trigger names the columns the table had when it was made.
    conn.execute("DROP TRIGGER IF EXISTS user_version_memories_update")
    create_user_versions(conn)


def _add_column(conn: sqlite3.Connection, table: str, column: str) -> None:
    """``ALTER TABLE ... ADD COLUMN``, once: a file whose version was set back runs it again."""
    name = column.split()[0]
    if not any(row[1] == name for row in conn.execute(f"PRAGMA table_info({table})")):
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")



def _index_labels(conn: sqlite3.Connection) -> None:
    def of(row: str) -> str:
        return ", ".join(f"{row}.{c}" for c in TERM_COLUMNS)

    labelled = "coalesce(subject, predicate, object, trigger_text, action_text) IS NOT NULL"
    script = f"""
        DROP TRIGGER keyword_insert;
        DROP TRIGGER keyword_delete;
        DROP TRIGGER keyword_update;
        DELETE FROM keyword_fts WHERE rowid IN (SELECT rowid FROM memories WHERE {labelled});
        INSERT INTO keyword_fts (rowid, terms)
            SELECT rowid, engram_keyword_doc(user_id, {of("memories")}) FROM memories WHERE {labelled};
        UPDATE keyword_stats SET terms = (
            SELECT sum(engram_keyword_len({of("m")})) FROM memories m WHERE m.user_id = keyword_stats.user_id
        ) WHERE user_id IN (SELECT user_id FROM memories WHERE {labelled});
        CREATE TRIGGER keyword_insert AFTER INSERT ON memories BEGIN
            INSERT INTO keyword_fts (rowid, terms) VALUES (new.rowid, engram_keyword_doc(new.user_id, {of("new")}));
            INSERT INTO keyword_stats (user_id, docs, terms)
                VALUES (new.user_id, 1, engram_keyword_len({of("new")}))
                ON CONFLICT (user_id) DO UPDATE SET docs = docs + 1, terms = terms + excluded.terms;
        END;
        CREATE TRIGGER keyword_delete AFTER DELETE ON memories BEGIN
            DELETE FROM keyword_fts WHERE rowid = old.rowid;
            UPDATE keyword_stats SET docs = docs - 1, terms = terms - engram_keyword_len({of("old")})
                WHERE user_id = old.user_id;
        END;
        CREATE TRIGGER keyword_update AFTER UPDATE OF {", ".join(TERM_COLUMNS)} ON memories BEGIN
            DELETE FROM keyword_fts WHERE rowid = old.rowid;
            INSERT INTO keyword_fts (rowid, terms) VALUES (new.rowid, engram_keyword_doc(new.user_id, {of("new")}));
            UPDATE keyword_stats SET terms = terms - engram_keyword_len({of("old")})
                + engram_keyword_len({of("new")}) WHERE user_id = new.user_id;
        END;
    """
    for statement in _statements(script):  # in the migration's transaction (executescript would commit)
        conn.execute(statement)

#: From migration 6 on, every change to a user's keyword index (the keyword triggers update their
#: ``keyword_stats`` row) also moves that row's ``version``, which keys the cached document
#: frequencies (keyword.py). A new row starts at a random version, so a user forgotten and written
#: again does not repeat an old one.
_STATS_VERSION = """
    CREATE TRIGGER keyword_stats_new AFTER INSERT ON keyword_stats BEGIN
        UPDATE keyword_stats SET version = abs(random() / 2) WHERE user_id = new.user_id;
    END;
    CREATE TRIGGER keyword_stats_changed AFTER UPDATE OF docs, terms ON keyword_stats BEGIN
        UPDATE keyword_stats SET version = version + 1 WHERE user_id = new.user_id;
    END;
"""


def register_functions(conn: sqlite3.Connection) -> None:
    """The Python functions the keyword triggers call: every connection that writes needs them (the
    shorter forms serve migration 4 of an old file; migration 8's triggers pass every term column)."""
    for columns in (2, len(TERM_COLUMNS)):
        conn.create_function("engram_keyword_doc", 1 + columns, keyword_document, deterministic=True)
        conn.create_function("engram_keyword_len", columns, keyword_length, deterministic=True)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}


def _read_paths(conn: sqlite3.Connection) -> None:
    """Indexes and copies that let retrieval read a few rows where it read thousands.

    * ``memory_entities`` carries each memory's importance, creation time and id, indexed in the
      entity source's order, so one entity's best memories are the first entries of its index
      range (``by_entities`` sorted every memory naming it);
    * ``(user_id, session_id, created_at, id)`` finds the turns next to a memory in its session;
    * ``keyword_stats.version`` moves with every change to a user's keyword index.

    Idempotent: a store whose version was set back (as tests do) runs it again.
    """
    if "memory_id" not in _columns(conn, "memory_entities"):
        for column in ("importance REAL", "created_at INTEGER", "memory_id TEXT"):
            conn.execute(f"ALTER TABLE memory_entities ADD COLUMN {column}")
    conn.execute(
        "UPDATE memory_entities SET (importance, created_at, memory_id) = "
        "(SELECT m.importance, m.created_at, m.id FROM memories m WHERE m.rowid = memory_entities.memory_rowid) "
        "WHERE memory_id IS NULL"
    )
    conn.execute("DROP INDEX IF EXISTS memory_entities_user_entity")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_entities_order ON memory_entities "
        "(user_id, entity, importance DESC, created_at DESC, memory_id, memory_rowid)"
    )
    conn.execute("DROP INDEX IF EXISTS memories_user_session")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memories_user_session_time ON memories (user_id, session_id, created_at, id)"
    )
    if "version" not in _columns(conn, "keyword_stats"):
        conn.execute("ALTER TABLE keyword_stats ADD COLUMN version INTEGER NOT NULL DEFAULT 0")
        for statement in _statements(_STATS_VERSION):
            conn.execute(statement)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every migration not yet applied, each in its own transaction; returns the version.

    The version is read again under the write lock before each migration: processes opening one
    new file at once all see version 0 at first, and only the first to hold the lock may run
    migration 1 (the others would fail with "table meta already exists").
    """
    target = len(MIGRATIONS)
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    while current < target:  # an up-to-date file is opened without taking the write lock
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if current < target:
                script = MIGRATIONS[current]
                if callable(script):
                    script(conn)
                else:
                    for statement in _statements(script):
                        conn.execute(statement)
                current += 1
                conn.execute(f"PRAGMA user_version = {current}")
            conn.execute("COMMIT")
        except BaseException:
            # SQLite has already rolled back after some errors; a second ROLLBACK would hide the first.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return current


def _statements(script: str) -> list[str]:
    """Split a script on ';' outside trigger bodies (executescript would commit implicitly)."""
    out: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                out.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        out.append(buffer.strip())
    return out
