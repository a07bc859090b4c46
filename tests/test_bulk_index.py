"""A batch of inserts indexed once for the batch (engram.stores.sqlite.bulk_index) leaves every index,
counter and log exactly as the per-row triggers leave them."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.errors import ValidationError
from engram.ext import as_filters
from engram.stores.sqlite.bulk_index import BULK_MIN
from tests.migrations import sqlite_from

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
_GUARDED = ("keyword_insert", "substring_insert", "user_version_memories_insert", "memory_rowid_reused")


def _items(n: int, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        user = "alice" if i % 3 else "bob"
        when = NOW - timedelta(hours=n - i)
        if i % 7 == 0:
            out.append({"user_id": user, "kind": "fact", "content": f"Invoice INV-{1000 + i} is paid",
                        "subject": f"Acme{i}", "predicate": "pays", "object": "invoices", "created_at": when})
        elif i % 11 == 0:
            out.append({"user_id": user, "kind": "procedure", "content": f"Escalate P{i % 3} tickets",
                        "trigger": "a P1 ticket", "action": "page the on-call", "created_at": when})
        else:
            out.append({"user_id": user, "content": f"Message {i}: the Kestrel budget is £{i * 37} for café déjà vu"
                        + (" with Priya Nair, we met on 14 November" if i % 5 == 0 else ""),
                        "role": "user", "tags": [f"tag{i % 4}"] * (i % 2), "metadata": {"note": f"zebra{i}"},
                        "created_at": when})
    return out


def _state(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        trigrams = ("keS", "déjà", "Acme1", "zebra2", "INV-10", "tag3", "on-call", "£37")
        return {
            "keyword": conn.execute("SELECT rowid, terms FROM keyword_fts ORDER BY rowid").fetchall(),
            "stats": conn.execute("SELECT user_id, docs, terms FROM keyword_stats ORDER BY user_id").fetchall(),
            "substrings": {t: conn.execute("SELECT rowid FROM substring_fts WHERE substring_fts MATCH ? ORDER BY rowid",
                                           (f'"{t}"',)).fetchall() for t in trigrams},
            "users": conn.execute("SELECT user_id FROM user_versions ORDER BY user_id").fetchall(),
            "high": conn.execute("SELECT h FROM memory_rowid_high").fetchall(),
            # Each removal's place in its user's count, as the count stands now (counts start at random).
            "removals": conn.execute("SELECT r.user_id, r.row, v.removed - r.seq FROM memory_removals r "
                                     "JOIN user_versions v USING (user_id) ORDER BY r.user_id, r.row").fetchall(),
            "marks": conn.execute("SELECT count(*) FROM bulk_writes").fetchone()[0],
            # The rows themselves and what is indexed beside each (a batch writes them in one statement).
            "rows": conn.execute("SELECT rowid, user_id, kind, content, role, tags, entities, importance, created_at, "
                                 "metadata, length(embedding) FROM memories ORDER BY rowid").fetchall(),
            "tags": conn.execute("SELECT memory_rowid, user_id, tag FROM memory_tags ORDER BY 1, 3").fetchall(),
            "entities": conn.execute("SELECT e.memory_rowid, e.user_id, e.entity, e.importance, e.created_at, "
                                     "e.memory_id = m.id FROM memory_entities e JOIN memories m ON m.rowid = "
                                     "e.memory_rowid ORDER BY 1, 3").fetchall(),
            "days": conn.execute("SELECT memory_rowid, user_id, day, said FROM memory_days ORDER BY 1, 3").fetchall(),
        }
    finally:
        conn.close()


def _built(db: Path, batches: list[list[dict[str, Any]]], *, one_by_one: bool, drop_top: int = 0,
           parameters: int | None = None) -> dict[str, Any]:
    with Memory(db, embedder=FakeEmbedder(32)) as memory:
        if parameters is not None:  # fewer rows a statement: a batch's rows are then split over several
            memory.store._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, parameters)  # type: ignore[attr-defined]
        for n, batch in enumerate(batches):
            if one_by_one:
                for item in batch:
                    memory.add_many([item])
            else:
                memory.add_many(batch)
            if n == 0 and drop_top:  # the newest rows go: the next inserts reuse their rowids
                conn = sqlite3.connect(db)
                top = [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY rowid DESC LIMIT ?", (drop_top,))]
                conn.close()
                for memory_id in top:
                    memory.delete(memory_id)
    return _state(db)


def test_a_batch_indexes_as_the_triggers_do(tmp_path: Path) -> None:
    batches = [_items(40), _items(25, 40)]
    assert len(batches[0]) >= BULK_MIN
    bulk = _built(tmp_path / "bulk.db", batches, one_by_one=False)
    rows = _built(tmp_path / "rows.db", batches, one_by_one=True)
    assert bulk == rows
    assert len(bulk["keyword"]) == 65 and bulk["marks"] == 0
    assert all(bulk["substrings"].values()) and bulk["tags"] and bulk["entities"] and bulk["days"]


@pytest.mark.parametrize("parameters", [999, 40])
def test_a_batch_split_by_the_bound_on_parameters_writes_the_same(tmp_path: Path, parameters: int) -> None:
    # SQLite's oldest bound (999) holds 34 memories a statement; 40 holds one (and six entity rows).
    batches = [_items(40), _items(25, 40)]
    bulk = _built(tmp_path / "bulk.db", batches, one_by_one=False, parameters=parameters)
    rows = _built(tmp_path / "rows.db", batches, one_by_one=True)
    assert bulk == rows


def test_reused_rowids_are_logged_as_the_triggers_log_them(tmp_path: Path) -> None:
    # Deleting the newest rows lets the next inserts take their rowids: a held index that read past
    # them must read them again, so each is logged as a change of its user's rows.
    batches = [_items(30), _items(20, 30)]
    bulk = _built(tmp_path / "bulk.db", batches, one_by_one=False, drop_top=6)
    rows = _built(tmp_path / "rows.db", batches, one_by_one=True, drop_top=6)
    assert bulk["removals"] == rows["removals"]
    assert len([r for r in bulk["removals"] if r[1] > 24]) >= 6
    assert bulk == rows


def test_a_failed_batch_leaves_no_mark_and_the_next_add_is_indexed(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder=FakeEmbedder(32)) as memory:
        first = memory.add("the first quokka", user_id="alice")
        batch = [{"user_id": "alice", "content": f"note {i}"} for i in range(BULK_MIN + 2)]
        batch.append({"user_id": "alice", "content": "a clash", "id": first.id})
        with pytest.raises(ValidationError):
            memory.add_many(batch)
        memory.add("a second quokka", user_id="alice")
        found = memory.store.keyword_search("alice", "quokka", 10, as_filters(None))
        assert len(found) == 2
    assert _state(db)["marks"] == 0
    assert _state(db)["stats"] == [("alice", 2, 4)]


def test_a_mark_left_committed_is_cleared_when_the_store_opens(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    Memory(db, embedder=FakeEmbedder(32)).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO bulk_writes (batch) VALUES (1)")
    conn.commit()
    conn.close()
    with Memory(db, embedder=FakeEmbedder(32)) as memory:
        memory.add("a lonely wombat", user_id="alice")
        assert len(memory.store.keyword_search("alice", "wombat", 10, as_filters(None))) == 1
    assert _state(db)["marks"] == 0


def test_the_triggers_stand_aside_only_for_a_marked_batch_after_any_rerun(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    Memory(db, embedder=FakeEmbedder(32)).close()
    # Migration 8 recreates the keyword triggers unguarded; 21, run again after it, guards them once.
    with sqlite_from(db, 8):
        pass
    conn = sqlite3.connect(db)
    try:
        for name in _GUARDED:
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
            assert sql.count("bulk_writes") == 1, name
    finally:
        conn.close()


def test_a_batch_after_the_largest_rowid_still_writes(tmp_path: Path) -> None:
    # A row at the largest rowid (an import's, say): SQLite picks free rowids for the next rows, which
    # a batch's own numbering (one past the largest) cannot; it writes them a row at a time instead.
    db = tmp_path / "top.db"
    with Memory(db, embedder=FakeEmbedder(32)) as memory:
        first = memory.add("the first memory", user_id="u")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE memories SET rowid = ? WHERE id = ?", (2**63 - 1, first.id))
    conn.commit()
    conn.close()
    with Memory(db, embedder=FakeEmbedder(32)) as memory:
        added = memory.add_many(_items(5))
        assert len(added) == 5
        assert {r.id for r in memory.list(user_id="alice")} | {r.id for r in memory.list(user_id="bob")} == {
            r.id for r in added}
        assert memory.search("Kestrel budget", user_id="alice")
