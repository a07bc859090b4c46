"""Migration 5's backfill: the entities of the memories stored before entity extraction."""

from __future__ import annotations

import json
import sqlite3

from engram.model import Entity
from engram.stores.entity_backfill import retag
from engram.stores.sql.rows import COLUMNS, row_to_record
from engram.stores.sqlite.dialect import SQLITE

__all__ = ["backfill_entities"]


def backfill_entities(conn: sqlite3.Connection) -> None:
    """Each stored memory tagged with the entities its text names (migration 5)."""
    users = [r[0] for r in conn.execute("SELECT DISTINCT user_id FROM memories ORDER BY user_id")]
    for user_id in users:
        entities = [
            Entity(r[0], r[1], r[2], tuple(json.loads(r[3])))
            for r in conn.execute("SELECT id, type, name, aliases FROM entities WHERE user_id = ?", (user_id,))
        ]
        rows = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE user_id = ?", (user_id,)).fetchall()
        for record, ids in retag((row_to_record(SQLITE, r) for r in rows), entities):
            conn.execute("UPDATE memories SET entities = ? WHERE id = ?", (json.dumps(list(ids), ensure_ascii=False),
                                                                           record.id))
            conn.execute(
                "DELETE FROM memory_entities WHERE memory_rowid = (SELECT rowid FROM memories WHERE id = ?)",
                (record.id,),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO memory_entities (memory_rowid, user_id, entity) "
                "SELECT rowid, user_id, ? FROM memories WHERE id = ?",
                [(entity, record.id) for entity in ids],
            )
