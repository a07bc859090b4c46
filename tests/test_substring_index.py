"""SQLite's substring index (migration 10): a store from before it is filled on open; many matches
are walked newest first, few read one by one, with the same answer."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram.ingest.normalize import content_hash
from engram.model import Filters, MemoryRecord, new_id
from engram.stores.sqlite import candidates
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



def test_many_matches_walked_and_few_read_answer_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(candidates, "FEW_SUBSTRING_MATCHES", 0)  # every search of more than 2n matches walks
    store = SQLiteStore(tmp_path / "walk.db")
    try:
        records = [_record(f"acme note {i}", created_at=datetime(2024, 1, 1 + i, tzinfo=UTC)) for i in range(6)]
        records.append(_record("acme of another user", user_id="u2", created_at=datetime(2024, 2, 1, tzinfo=UTC)))
        store.put_many(records, np.eye(7, 4, dtype=np.float32))
        newest = [r.id for r in reversed(records[:6])]
        walked = [h[0] for h in store.substring_search("u1", ["acm"], 2, Filters())]  # 7 matches > 4: walked
        read = [h[0] for h in store.substring_search("u1", ["acm"], 4, Filters())]  # 7 matches <= 8: read each
        assert walked == newest[:2] and read == newest[:4]
    finally:
        store.close()
