"""A memory's structured fields are keyword terms too: people ask with a fact's predicate."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram.ext import Store
from engram.model import Filters, MemoryRecord
from engram.text import index_terms, memory_terms

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_label_words_the_content_lacks_are_added_once() -> None:
    assert memory_terms("Dana is vegetarian", None, "Dana", "diet", "vegetarian") == [
        *index_terms("Dana is vegetarian"), "diet"]
    # Words the content already holds are not counted twice; underscores split a label's words.
    assert memory_terms("closes at 6pm", None, None, "closing_time") == [*index_terms("closes at 6pm"), "time"]
    assert memory_terms("plain text") == index_terms("plain text")


def _records() -> list[MemoryRecord]:
    def rec(mid: str, content: str, **kw: object) -> MemoryRecord:
        fields: dict[str, object] = {"kind": "fact", **kw}
        return MemoryRecord(id=mid, user_id="u1", content=content, created_at=NOW, recorded_at=NOW,
                            content_hash=mid, **fields)  # type: ignore[arg-type]

    return [
        rec("veg", "Dana is vegetarian; fish only in an emergency.", subject="Dana", predicate="diet",
            object="vegetarian"),
        rec("mum", "Mum (Linda) turns 70 on December 12.", subject="Linda", predicate="birthday"),
        rec("proc", "Ask for 7:30pm and mention the allergy.", kind="procedure", trigger="booking a restaurant"),
        rec("other", "The diet coke machine is broken."),
    ]


def _put(store: Store) -> None:
    store.bind_embedder("fake", 4)
    records = _records()
    store.put_many(records, np.eye(4, dtype=np.float32)[: len(records)])


def _found(store: Store, text: str) -> list[str]:
    return [memory_id for memory_id, _ in store.keyword_search("u1", text, 10, Filters())]


def test_every_backend_finds_a_fact_by_its_predicate(store: Store) -> None:
    _put(store)
    assert _found(store, "birthday") == ["mum"]
    assert set(_found(store, "diet")) == {"veg", "other"}
    assert _found(store, "restaurant booking") == ["proc"]


def test_an_update_of_a_label_reindexes(store: Store) -> None:
    _put(store)
    old = {r.id: r for r in _records()}["mum"]
    store.replace(replace(old, predicate="anniversary"), None)
    assert _found(store, "birthday") == []
    assert _found(store, "anniversary") == ["mum"]


def test_sqlite_migration_indexes_labels_of_stored_memories(tmp_path: Path) -> None:
    from engram.stores.sqlite.store import SQLiteStore

    db = tmp_path / "old.db"
    store = SQLiteStore(db)
    _put(store)
    store.close()
    conn = sqlite3.connect(db)
    from engram.stores.sqlite.schema import keyword_document

    conn.execute("DELETE FROM keyword_fts")  # indexed as before labels: content terms only
    rows = conn.execute("SELECT rowid, user_id, content, role FROM memories").fetchall()
    conn.executemany("INSERT INTO keyword_fts (rowid, terms) VALUES (?, ?)",
                     [(rowid, keyword_document(user, content, role)) for rowid, user, content, role in rows])
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    try:
        assert _found(store, "birthday") == ["mum"]
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_migration_indexes_labels_of_stored_memories(postgres_store: Store, postgres_url: str) -> None:
    import psycopg

    from engram.stores.postgres.store import PostgresStore

    _put(postgres_store)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE engram_memories SET content_tsv = ''::tsvector")  # as before labels
        conn.execute("DELETE FROM engram_schema_migrations WHERE version >= 8")
    store = PostgresStore(postgres_url, min_size=1, max_size=2)
    try:
        assert _found(store, "birthday") == ["mum"]
    finally:
        store.close()
