"""SQLite read paths that keep state between retrievals stay exact when the data changes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engram.model import Filters, MemoryRecord
from engram.stores.sqlite import candidates as entity_candidates
from engram.stores.sqlite import keyword
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _records(user: str, texts: list[str], start: int = 0) -> list[MemoryRecord]:
    return [
        MemoryRecord(id=f"{user}-{start + i}", user_id=user, content=text, kind="message", content_hash=f"{user}{i}",
                     created_at=NOW - timedelta(minutes=start + i), recorded_at=NOW, importance=0.5,
                     entities=("customer:acme",) if i % 2 else ("customer:acme", "customer:bluebird"))
        for i, text in enumerate(texts)
    ]


def _put(store: SQLiteStore, records: list[MemoryRecord], dims: int = 4) -> None:
    store.put_many(records, np.ones((len(records), dims), dtype=np.float32))


def _fresh_keyword_search(path: Path, text: str) -> list[tuple[str, float]]:
    """What a store opened now, with nothing cached, finds."""
    fresh = SQLiteStore(path)
    try:
        return fresh.keyword_search("u", text, 10, Filters())
    finally:
        fresh.close()


def test_keyword_frequencies_follow_writes_of_another_process(tmp_path: Path) -> None:
    reader, writer = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    try:
        _put(writer, _records("u", ["espresso order for acme", "decaf order", "espresso beans", "tea"]))
        before = reader.keyword_search("u", "espresso order", 10, Filters())
        _put(writer, _records("u", ["espresso " * 3] * 6, start=10))
        after = reader.keyword_search("u", "espresso order", 10, Filters())
        assert after == _fresh_keyword_search(tmp_path / "m.db", "espresso order")
        assert after != before
    finally:
        reader.close()
        writer.close()


def test_keyword_frequencies_after_forget_user(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        _put(store, _records("u", ["espresso order", "espresso beans", "decaf"]))
        store.keyword_search("u", "espresso decaf", 10, Filters())
        store.forget_user("u")
        _put(store, _records("u", ["decaf", "decaf again", "espresso once"]))
        hits = store.keyword_search("u", "espresso decaf", 10, Filters())
        assert hits == _fresh_keyword_search(tmp_path / "m.db", "espresso decaf")
    finally:
        store.close()


def test_entity_source_order_with_several_entities(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        _put(store, _records("u", [f"note {i}" for i in range(12)]))
        hits = store.by_entities("u", ["customer:acme", "customer:bluebird"], 8, Filters())
        # Memories naming both come first (newest first at equal importance), then the others.
        assert [score for _, score in hits] == [2.0] * 6 + [1.0] * 2
        assert [i for i, _ in hits] == [f"u-{i}" for i in (0, 2, 4, 6, 8, 10, 1, 3)]
        assert store.by_entities("u", ["customer:bluebird"], 3, Filters(created_after=NOW - timedelta(minutes=3))) \
            == [("u-0", 1.0), ("u-2", 1.0)]
    finally:
        store.close()


@pytest.mark.parametrize("walk", ["default", "short walks"])
def test_entity_source_equals_counting_every_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     walk: str) -> None:
    """Skewed entities (one named by most memories, others by few), 2-5 asked at once, with
    and without a filter: the same hits, in the same order, as counting every memory. Also when
    walks end early and give way to the other entity's walk or to grouping."""
    if walk == "short walks":
        monkeypatch.setattr(entity_candidates, "_WALK_LEAST", 3)
        monkeypatch.setattr(entity_candidates, "_WALK_PER_RESULT", 1)
    rng = np.random.default_rng(11)
    names = [f"e:{i}" for i in range(6)]
    weights = [0.9, 0.5, 0.2, 0.1, 0.05, 0.02]
    records = [
        MemoryRecord(id=f"u-{i:03d}", user_id="u", content=f"note {i}", kind="message", content_hash=f"h{i}",
                     created_at=NOW - timedelta(minutes=int(rng.integers(0, 50))), recorded_at=NOW,
                     importance=float(rng.choice([0.2, 0.5, 0.8])),
                     entities=tuple(e for e, w in zip(names, weights, strict=True) if rng.random() < w))
        for i in range(400)
    ]
    store = SQLiteStore(tmp_path / "m.db")
    try:
        _put(store, records)
        _put(store, _records("v", ["other user"] * 5))  # names e:0 for nobody: v's rows name customers
        for trial in range(40):
            asked = list(rng.choice(names, size=int(rng.integers(2, 6)), replace=False))
            for filters in (Filters(), Filters(created_after=NOW - timedelta(minutes=20))):
                kept = [r for r in records if filters.created_after is None or r.created_at >= filters.created_after]
                counted = [(r, sum(e in r.entities for e in asked)) for r in kept]
                expected = sorted(((r, c) for r, c in counted if c),
                                  key=lambda rc: (-rc[1], -rc[0].importance, -rc[0].created_at.timestamp(), rc[0].id))
                n = int(rng.integers(1, 60))
                assert store.by_entities("u", asked, n, filters) == [(r.id, float(c)) for r, c in expected[:n]], \
                    (trial, asked, n)
    finally:
        store.close()


def test_started_vector_search_equals_vector_search(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        rng = np.random.default_rng(5)
        vectors = rng.standard_normal((300, 8)).astype(np.float32)
        records = _records("u", [f"note {i}" for i in range(300)])
        store.put_many(records, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
        query = vectors[3]
        for filters in (Filters(), Filters(kinds=("fact",)), Filters(created_after=NOW - timedelta(minutes=50))):
            finish = store.start_vector_search("u", query, 20, filters)
            assert finish() == store.vector_search("u", query, 20, filters)
        finish = store.start_vector_search("u", query, 5, Filters())
        _put(store, _records("u", ["late"], start=400), dims=8)  # written between the scan and the selection
        assert finish() == store.vector_search("u", query, 5, Filters())
        assert "u-400" in {i for i, _ in store.vector_search("u", np.ones(8, dtype=np.float32), 5, Filters())}
    finally:
        store.close()


def test_keyword_ranking_is_not_reused_across_writes(tmp_path: Path) -> None:
    store, other = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    try:
        _put(store, _records("u", ["espresso order"] * 3 + ["decaf"] * 300))
        assert len(store.keyword_search("u", "espresso", 10, Filters())) == 3
        _put(store, _records("u", ["espresso"], start=1000))
        assert len(store.keyword_search("u", "espresso", 10, Filters())) == 4
        _put(other, _records("u", ["espresso beans"], start=2000))
        assert len(store.keyword_search("u", "espresso", 10, Filters())) == 5
    finally:
        store.close()
        other.close()


@pytest.mark.parametrize("limit", [2, 256])
def test_the_status_check_of_keyword_search_reads_only_inactive_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int,
) -> None:
    """Up to the limit the inactive rows are read from their index; at it, the rows searched are checked."""
    monkeypatch.setattr(keyword, "_HELD_BACK_LIMIT", limit)
    store = SQLiteStore(tmp_path / "s.db")
    records = _records("u", ["acme order shipped"] * 6)
    records[1] = replace(records[1], status="superseded")
    records[2] = replace(records[2], status="archived")
    _put(store, records)
    held_back = store._held_back("u", ("active",))
    if limit == 2:
        assert held_back is None
    else:
        assert held_back is not None and sorted(held_back.tolist()) == sorted(r[0] for r in store._read(
            "SELECT rowid FROM memories WHERE id IN (?, ?)", (records[1].id, records[2].id)))
    assert {h[0] for h in store.keyword_search("u", "acme", 10, Filters())} == {r.id for r in records} - {
        records[1].id, records[2].id}
    both = Filters(statuses=("active", "superseded"))
    assert {h[0] for h in store.keyword_search("u", "acme", 10, both)} == {r.id for r in records} - {records[2].id}
    plan = store._read("EXPLAIN QUERY PLAN SELECT rowid FROM memories WHERE user_id = ? AND status <> 'active' "
                       "AND status NOT IN (?)", ("u", "superseded"))
    assert "memories_user_inactive" in " ".join(str(row) for row in plan)  # an index of the few, not the user's rows
    store.close()



def test_stored_vectors_are_found_by_the_users_content_hashes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        _put(store, _records("u", ["espresso order", "decaf"]) + _records("v", ["espresso order"]))
        sent: list[str] = []
        store._conn.set_trace_callback(sent.append)  # the statement as run, its values in place
        found = store.cached_vectors("u", "any", ["u0", "u1", "v0", "missing"])
        store._conn.set_trace_callback(None)
        assert sorted(found) == ["u0", "u1"]  # never another user's
        [sql] = [s for s in sent if "content_hash IN" in s]
        plan = " ".join(str(row) for row in store._read("EXPLAIN QUERY PLAN " + sql))
        assert "memories_user_hash" in plan, plan  # the user's rows with those hashes, not all the user's rows
    finally:
        store.close()


def test_an_index_catching_up_reads_the_removed_rows_by_rowid(tmp_path: Path) -> None:
    """Another process deletes and changes rows: the held indexes read those rows again by rowid,
    never through the user's index (every row of theirs: 0.17 s a catch-up at a million memories)."""
    reader, writer = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    try:
        _put(writer, _records("u", [f"espresso order {i}" for i in range(40)]))
        reader.keyword_build_inline = 10**9
        reader.vector_search("u", np.ones(4, dtype=np.float32), 5, Filters())
        reader.keyword_search("u", "espresso", 5, Filters())
        assert writer.delete_many("u", ["u-1", "u-2", "u-3", "u-4", "u-5", "u-6"]) == 6
        writer._write(lambda c: c.execute("UPDATE memories SET content = 'decaf' WHERE id IN ('u-7', 'u-8')"))
        sent: list[str] = []
        with reader._changes_reader._snapshot() as conn:  # its connection, opened at first use
            conn.set_trace_callback(sent.append)
        hits = reader.vector_search("u", np.ones(4, dtype=np.float32), 50, Filters())
        assert len(hits) == 34
        assert [m for m, _ in reader.keyword_search("u", "decaf", 5, Filters())] == ["u-7", "u-8"]
        again = [s for s in sent if "rowid IN (" in s]
        assert len(again) == 2, sent  # one statement per index for the eight rows
        for sql in again:
            plan = " ".join(str(row) for row in writer._read("EXPLAIN QUERY PLAN " + sql))
            assert "INTEGER PRIMARY KEY" in plan and "memories_user" not in plan, plan
    finally:
        reader.close()
        writer.close()
