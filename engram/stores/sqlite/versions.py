"""Each user's write counter on SQLite, kept by triggers in the writing transaction (as PostgreSQL's
``engram_user_versions``): the store's change token, so that a cache in any process can tell that
this user's memories, links, entities or ontology changed.

What a retrieval itself writes does not move it: its log (another table) and the access counts it
may record (``access_count``/``last_accessed_at`` are left out of the memories trigger). Those move
a counter of their own, ``accessed`` (migration 11), which only the cache of whole records reads
(:mod:`.records`): a record carries its access count. The
file-wide ``data_version`` moved on every retrieval of every other process, so a server of several
workers almost never reused its cached retrievals or entity indexes. A user's counter starts at a
random value: a user forgotten and written again never repeats an old token.
"""

from __future__ import annotations

import sqlite3

__all__ = [
    "ACCESS_COLUMNS", "INDEXED_COLUMNS", "REMOVALS_KEPT", "USER_REMOVED", "VERSIONED_TABLES", "count_access",
    "count_removals", "create_user_versions", "log_removals", "record_version", "user_version",
]

#: Written by retrievals that track access: not a change of what a retrieval would find.
ACCESS_COLUMNS = frozenset({"access_count", "last_accessed_at"})
#: The user's count of memories deleted or changed in place (migration 14): while it stands still, a
#: saved index plus the rows inserted after it is the user's index (engram.stores.sqlite.saved).
USER_REMOVED = "SELECT removed FROM user_versions WHERE user_id = ?"
#: The rows of each user's latest removals kept in ``memory_removals`` (migration 16): an index
#: behind by more than these is loaded again.
REMOVALS_KEPT = 4096
#: What the in-memory indexes hold of a memory: the vectors' (id, embedding, kind, status) and the
#: keyword postings' (id, creation time, the texts their terms come from). Changing another column in
#: place (importance, entities, access counts) leaves the counter.
INDEXED_COLUMNS = ("id", "user_id", "embedding", "kind", "status", "created_at", "content", "role", "subject",
                   "predicate", "object", "trigger_text", "action_text")
#: The triggers counting a user's removals: a delete, and a change in place to what an index holds.
_REMOVAL_EVENTS = (("user_removed_memories", "DELETE", "old"),
                   ("user_changed_memories", f"UPDATE OF {', '.join(INDEXED_COLUMNS)}", "new"))
_COUNT_REMOVAL = ("INSERT INTO user_versions (user_id, version, removed) VALUES ({row}.user_id, abs(random() / 2), 1) "
                  "ON CONFLICT (user_id) DO UPDATE SET removed = removed + 1;")
#: Every table whose rows change what a user's retrieval finds, each led by ``user_id``.
VERSIONED_TABLES = ("memories", "links", "entities", "entity_ontology", "entity_relations")


def _bump(row: str) -> str:
    return (
        f"INSERT INTO user_versions (user_id, version) VALUES ({row}.user_id, abs(random() / 2)) "
        "ON CONFLICT (user_id) DO UPDATE SET version = version + 1;"
    )


def create_user_versions(conn: sqlite3.Connection) -> None:
    """The table and its triggers (idempotent: a store whose version was set back runs it again)."""
    conn.execute("CREATE TABLE IF NOT EXISTS user_versions (user_id TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for table in VERSIONED_TABLES:
        columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")]
        updated = ", ".join(c for c in columns if c not in ACCESS_COLUMNS)
        for event, row in (("INSERT", "new"), ("DELETE", "old"), (f"UPDATE OF {updated}", "new")):
            name = f"user_version_{table}_{event.split()[0].lower()}"
            conn.execute(f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {table} BEGIN {_bump(row)} END")


def user_version(conn: sqlite3.Connection, user_id: str) -> int:
    """The user's counter; 0 before their first write since the table exists."""
    row = conn.execute("SELECT version FROM user_versions WHERE user_id = ?", (user_id,)).fetchone()
    return 0 if row is None else int(row[0])


def count_access(conn: sqlite3.Connection) -> None:
    """Migration 11: each user's ``accessed`` counter and the trigger that moves it (idempotent).

    Users not written since their counters exist get them now: a user without counters cannot tell
    a change, so nothing of theirs would be cached."""
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(user_versions)")}
    if "accessed" not in columns:
        conn.execute("ALTER TABLE user_versions ADD COLUMN accessed INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        "INSERT OR IGNORE INTO user_versions (user_id, version, accessed) "
        "SELECT user_id, abs(random() / 2), 0 FROM (SELECT DISTINCT user_id FROM memories)"
    )
    conn.execute(
        f"CREATE TRIGGER IF NOT EXISTS user_accessed_memories AFTER UPDATE OF {', '.join(sorted(ACCESS_COLUMNS))} "
        "ON memories BEGIN INSERT INTO user_versions (user_id, version, accessed) "
        "VALUES (new.user_id, abs(random() / 2), 1) ON CONFLICT (user_id) DO UPDATE SET accessed = accessed + 1; END"
    )


def count_removals(conn: sqlite3.Connection) -> None:
    """Migration 14: each user's ``removed`` counter, moved by every delete of one of their memories
    and every change in place to what the indexes hold of one (a replace deletes and inserts; a
    fact's status changes beside a delete). Inserts leave it: they add rows after those a saved
    index holds."""
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(user_versions)")}
    if "removed" not in columns:
        conn.execute("ALTER TABLE user_versions ADD COLUMN removed INTEGER NOT NULL DEFAULT 0")
    for name, event, row in _REMOVAL_EVENTS:
        conn.execute(f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON memories BEGIN "
                     f"{_COUNT_REMOVAL.format(row=row)} END")
    # A user's counters start anew when forgetting them removes their row: the count of removals
    # starts at random, as the version does, so a saved file that outlived the forget (a crash
    # before its erasure) never matches the user written again.
    conn.execute("CREATE TRIGGER IF NOT EXISTS user_removed_start AFTER INSERT ON user_versions BEGIN "
                 "UPDATE user_versions SET removed = abs(random() / 2) WHERE user_id = new.user_id; END")


def log_removals(conn: sqlite3.Connection) -> None:
    """Migration 16: which row each removal counted (``memory_removals``: the user, the count it
    moved the user's removals to, the rowid), so that an index another process holds, or one
    behind by a few deletes, removes and reads again those rows instead of every row of the user
    (at a million memories, 25-40 s). Rowids, not ids: a deleted memory's id does not stay in the
    file. The newest :data:`REMOVALS_KEPT` of each user are kept, pruned every 256th removal. An
    insert that reuses a freed rowid is logged as a change of that row (below)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_removals (user_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        "row INTEGER NOT NULL, PRIMARY KEY (user_id, seq)) WITHOUT ROWID"
    )
    # Read after the count moved (a new user's count starts at random: user_removed_start).
    logged = ("INSERT OR REPLACE INTO memory_removals (user_id, seq, row) "
              "SELECT user_id, removed, {row}.rowid FROM user_versions WHERE user_id = {row}.user_id;")
    for name, event, row in _REMOVAL_EVENTS:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(f"CREATE TRIGGER {name} AFTER {event} ON memories BEGIN "
                     f"{_COUNT_REMOVAL.format(row=row)} {logged.format(row=row)} END")
    # A new row takes the highest rowid plus one: after the top rows are deleted, a rowid an index
    # already read past, which it would never read (``rowid > last``). An insert at or below the
    # highest rowid ever given counts as a change of that row, logged as a removal is, so that
    # the index reads it again. One trigger: the look and the raise of the mark in this order.
    conn.execute("CREATE TABLE IF NOT EXISTS memory_rowid_high (h INTEGER NOT NULL)")
    conn.execute("INSERT INTO memory_rowid_high SELECT (SELECT coalesce(max(rowid), 0) FROM memories) "
                 "WHERE NOT EXISTS (SELECT 1 FROM memory_rowid_high)")
    reused = "new.rowid <= (SELECT h FROM memory_rowid_high)"
    conn.execute("CREATE TRIGGER IF NOT EXISTS memory_rowid_reused AFTER INSERT ON memories BEGIN "
                 "INSERT INTO user_versions (user_id, version, removed) SELECT new.user_id, abs(random() / 2), 1 "
                 f"WHERE {reused} ON CONFLICT (user_id) DO UPDATE SET removed = removed + 1; "
                 "INSERT OR REPLACE INTO memory_removals (user_id, seq, row) SELECT user_id, removed, new.rowid "
                 f"FROM user_versions WHERE user_id = new.user_id AND {reused}; "
                 "UPDATE memory_rowid_high SET h = new.rowid WHERE h < new.rowid; END")
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS memory_removals_pruned AFTER INSERT ON memory_removals "
        f"WHEN new.seq % 256 = 0 BEGIN DELETE FROM memory_removals WHERE user_id = new.user_id "
        f"AND seq <= new.seq - {REMOVALS_KEPT}; END"
    )


def record_version(rows: list[tuple[int, int]]) -> tuple[int, int]:
    """The user's (version, accessed) from ``SELECT version, accessed FROM user_versions``'s rows."""
    return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
