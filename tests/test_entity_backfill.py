"""Stores written before write-time entity extraction get their memories' entities by migration."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram.model import Entity, Filters, MemoryRecord

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _old_records() -> list[MemoryRecord]:
    def rec(mid: str, content: str, **kw: object) -> MemoryRecord:
        return MemoryRecord(id=mid, user_id="u1", content=content, kind="message", created_at=NOW, recorded_at=NOW,
                            content_hash=mid, **kw)  # type: ignore[arg-type]

    return [
        rec("m1", "Bob asked whether Acme Corporation has paid invoice INV-1187", role="user"),
        rec("m2", "I think the trial went well", role="Priya"),
        rec("m3", "nothing to see here", entities=("customer:kept",)),
    ]


def _check(store: object) -> None:
    by_id = {r.id: r for r in store.list("u1", Filters(), limit=10)}  # type: ignore[attr-defined]
    assert "customer:acme" in by_id["m1"].entities and "ref:inv-1187" in by_id["m1"].entities
    assert "mention:priya" in by_id["m2"].entities
    assert by_id["m3"].entities == ("customer:kept",)  # given by hand: kept, nothing added
    found = {i for i, _ in store.by_entities("u1", ["customer:acme"], 10, Filters())}  # type: ignore[attr-defined]
    assert found == {"m1"}  # the side index is written too, not only the row


def _put_old(store: object) -> None:
    store.bind_embedder("fake", 4)  # type: ignore[attr-defined]
    store.upsert_entity("u1", Entity("customer:acme", "customer", "Acme Corporation", ("Acme",)))  # type: ignore[attr-defined]
    records = _old_records()
    store.put_many(records, np.eye(4, dtype=np.float32)[: len(records)])  # type: ignore[attr-defined]


def test_sqlite_migration_backfills_entities(tmp_path: Path) -> None:
    from engram.stores.sqlite.store import SQLiteStore

    db = tmp_path / "old.db"
    store = SQLiteStore(db)
    _put_old(store)
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 4")  # as a store from before migration 5 (later ones run again)
    conn.close()
    store = SQLiteStore(db)
    try:
        _check(store)
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_migration_backfills_entities(postgres_store: object, postgres_url: str) -> None:
    import psycopg

    from engram.stores.postgres.store import PostgresStore

    _put_old(postgres_store)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # As a store from before the backfill (migration 6): it and every later one run again.
        conn.execute("DELETE FROM engram_schema_migrations WHERE version >= 6")
    store = PostgresStore(postgres_url, min_size=1, max_size=2)
    try:
        _check(store)
    finally:
        store.close()
