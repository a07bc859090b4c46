"""SQLite's substring index (migration 10): a store from before it is filled on open."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from engram.ingest.normalize import content_hash
from engram.model import Filters, MemoryRecord, new_id
from engram.stores.sqlite.store import SQLiteStore

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _record(content: str, **fields: object) -> MemoryRecord:
    base: dict[str, object] = {"id": new_id(), "user_id": "u1", "content": content, "kind": "message",
                               "created_at": T0, "recorded_at": T0, "content_hash": content_hash(content)}
    base.update(fields)
    return MemoryRecord(**base)  # type: ignore[arg-type]


def _as_before_the_index(db: Path) -> None:
    conn = sqlite3.connect(db)
    for trigger in ("substring_insert", "substring_delete", "substring_update"):
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("DROP TABLE substring_fts")
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()


def test_a_store_from_before_the_index_is_filled_on_open(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    store = SQLiteStore(db)
    acme, tagged = _record("Invoice for ACME Corp"), _record("a note", tags=("billing",), metadata={"via": "Initech"})
    store.put_many([acme, tagged], np.eye(2, 4, dtype=np.float32))
    store.close()
    _as_before_the_index(db)
    store = SQLiteStore(db)
    try:
        assert [h[0] for h in store.substring_search("u1", ["acm"], 10, Filters())] == [acme.id]
        assert [h[0] for h in store.substring_search("u1", ["illin", "nitec"], 10, Filters())] == [tagged.id]
        later = _record("acme again", created_at=datetime(2024, 2, 1, tzinfo=UTC))
        store.put_many([later], np.eye(1, 4, dtype=np.float32))  # and the triggers keep it from then on
        assert [h[0] for h in store.substring_search("u1", ["acm"], 10, Filters())] == [later.id, acme.id]
    finally:
        store.close()

