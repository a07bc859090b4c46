"""The SQLite store's per-user vector indexes: a byte budget, least recently searched dropped first,
kept current by writes (including writes that land while an index loads), loaded once and without
holding up other users."""

from __future__ import annotations

import dataclasses
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engram.config import VECTOR_CACHE_BYTES, vector_cache_bytes
from engram.errors import ConfigError
from engram.model import Filters, MemoryRecord
from engram.stores.sqlite.store import SQLiteStore
from engram.stores.sqlite.user_cache import UserIndexCache
from engram.stores.sqlite.vectors import ExactIndex

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIMS = 16


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def _put(store: SQLiteStore, user: str, count: int, start: int = 0) -> list[str]:
    records = [
        MemoryRecord(id=f"{user}-{i}", user_id=user, content=f"note {i} of {user}", kind="message",
                     content_hash=f"{user}{i}", created_at=NOW - timedelta(minutes=i), recorded_at=NOW, importance=0.5)
        for i in range(start, start + count)
    ]
    seeds = [zlib.crc32(r.id.encode()) for r in records]
    store.put_many(records, np.stack([_vector(s) for s in seeds]))
    return [r.id for r in records]


def _top(store: SQLiteStore, user: str, memory_id: str) -> str | None:
    """The best hit of a search for that memory's own vector."""
    hits = store.vector_search(user, _vector(zlib.crc32(memory_id.encode())), 1, Filters())
    return hits[0][0] if hits else None


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "v.db")
    yield s
    s.close()


def test_least_recently_searched_user_goes_first_when_over_budget(store: SQLiteStore) -> None:
    for user in ("a", "b", "c"):
        _put(store, user, 200)
    cache = store._indexes
    assert _top(store, "a", "a-5") == "a-5"
    one_user = cache.nbytes
    cache.budget = int(2.5 * one_user)  # room for two users' indexes, not three
    assert _top(store, "b", "b-5") == "b-5"
    assert _top(store, "a", "a-6") == "a-6"  # a is now more recent than b
    assert _top(store, "c", "c-5") == "c-5"
    assert cache.users() == ["a", "c"]
    assert cache.nbytes <= cache.budget
    # The dropped user loads again, whole: every one of b's memories is still found.
    assert all(_top(store, "b", f"b-{i}") == f"b-{i}" for i in range(0, 200, 37))
    assert cache.users() == ["c", "b"]


def test_a_user_larger_than_the_budget_is_kept_alone(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "v.db", vector_cache_bytes=1)
    try:
        _put(store, "a", 50)
        _put(store, "b", 50)
        assert _top(store, "a", "a-1") == "a-1"
        assert store._indexes.users() == ["a"]
        assert _top(store, "b", "b-1") == "b-1"
        assert store._indexes.users() == ["b"]
    finally:
        store.close()


def test_growth_from_writes_counts_at_the_next_search(store: SQLiteStore) -> None:
    _put(store, "a", 10)
    _top(store, "a", "a-1")
    before = store._indexes.nbytes
    _put(store, "a", 500, start=10)
    _top(store, "a", "a-1")
    assert store._indexes.nbytes > before + 500 * DIMS * 4


def test_writes_reach_a_held_index_without_reloading_it(store: SQLiteStore) -> None:
    _put(store, "a", 20)
    assert _top(store, "a", "a-3") == "a-3"
    held = store._indexes.get("a")
    _put(store, "a", 1, start=20)
    assert _top(store, "a", "a-20") == "a-20"
    assert store.delete("a", "a-3")
    assert _top(store, "a", "a-3") != "a-3"
    record = store.get("a", "a-4")
    assert record is not None
    store.replace(dataclasses.replace(record, content="changed"), _vector(999))
    hits = store.vector_search("a", _vector(999), 1, Filters())
    assert hits[0][0] == "a-4" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert store._indexes.get("a") is held  # every change above went into the same index


def test_a_write_committed_during_a_load_is_not_lost(store: SQLiteStore) -> None:
    _put(store, "a", 20)

    def load_then_write() -> tuple[ExactIndex, int | None]:
        loaded = store._load_index("a")  # what a load read before the write below committed
        _put(store, "a", 1, start=20)
        return loaded

    index = store._indexes.get_or_load("a", load_then_write, lambda: store._user_version("a"))
    assert "a" not in store._indexes  # out of date: answered its own search, not kept
    assert len(index) == 20
    assert _top(store, "a", "a-20") == "a-20"  # the next search loads again and sees the write
    assert len(store._indexes.get("a") or []) == 21


def test_forgetting_a_user_during_a_load_drops_what_it_read(store: SQLiteStore) -> None:
    _put(store, "a", 5)

    def load_then_forget() -> tuple[ExactIndex, int | None]:
        loaded = store._load_index("a")
        store.forget_user("a")
        return loaded

    store._indexes.get_or_load("a", load_then_forget, lambda: store._user_version("a"))
    assert "a" not in store._indexes
    assert store.vector_search("a", _vector(1), 5, Filters()) == []


def test_a_load_holds_up_neither_other_users_nor_writes(store: SQLiteStore) -> None:
    _put(store, "a", 30)
    _put(store, "b", 30)
    assert _top(store, "b", "b-2") == "b-2"
    loading, release = threading.Event(), threading.Event()

    def slow_load() -> tuple[ExactIndex, int | None]:
        loading.set()
        assert release.wait(10)
        return store._load_index("a")

    loader = threading.Thread(target=lambda: store._indexes.get_or_load("a", slow_load, lambda: None))
    loader.start()
    try:
        assert loading.wait(10)
        assert _top(store, "b", "b-7") == "b-7"  # while a's load is under way
        _put(store, "b", 1, start=30)
        assert _top(store, "b", "b-30") == "b-30"
    finally:
        release.set()
        loader.join(10)
    assert not loader.is_alive()


def test_concurrent_first_searches_of_one_user_load_it_once(store: SQLiteStore) -> None:
    _put(store, "a", 30)
    loads: list[int] = []
    started, release = threading.Event(), threading.Event()

    def counted_load() -> tuple[ExactIndex, int | None]:
        loads.append(1)
        started.set()
        assert release.wait(10)
        return store._load_index("a")

    results: list[ExactIndex] = []
    def first_search() -> None:
        results.append(store._indexes.get_or_load("a", counted_load, lambda: None))

    threads = [threading.Thread(target=first_search) for _ in range(4)]
    for t in threads:
        t.start()
    assert started.wait(10)
    release.set()
    for t in threads:
        t.join(10)
    assert len(loads) == 1
    assert len(results) == 4 and all(r is results[0] for r in results)


def test_another_process_logging_a_retrieval_keeps_the_index_and_its_writes_reach_it(tmp_path: Path) -> None:
    here, there = SQLiteStore(tmp_path / "v.db"), SQLiteStore(tmp_path / "v.db")
    try:
        _put(here, "a", 20)
        assert _top(here, "a", "a-3") == "a-3"
        held = here._indexes.get("a")
        # What every retrieval of another worker commits: access counts (and its log).
        there.record_access("a", ["a-1", "a-2"], NOW)
        assert _top(here, "a", "a-4") == "a-4"
        assert here._indexes.get("a") is held  # checked against the user's version, kept
        _put(there, "a", 1, start=20)
        assert _top(here, "a", "a-20") == "a-20"  # the version moved by an insert: its row added in place
        assert here._indexes.get("a") is held
        assert there.delete("a", "a-5")
        assert _top(here, "a", "a-5") != "a-5"  # a delete: its row removed in place
        assert here._indexes.get("a") is held and len(held) == 20
    finally:
        here.close()
        there.close()


def test_bulk_load_equals_adding_row_by_row() -> None:
    rows = [(i + 1, f"m{i}", _vector(i), "fact" if i % 3 else "message", "active" if i % 4 else "superseded")
            for i in range(300)]
    one_by_one = ExactIndex(DIMS)
    for rowid, memory_id, vector, kind, status in rows:
        one_by_one.add(rowid, memory_id, vector, kind, status)
    rowids, ids, vectors, kinds, statuses = zip(*rows, strict=True)
    bulk = ExactIndex.load(DIMS, list(rowids), list(ids), [v.tobytes() for v in vectors], list(kinds), list(statuses))
    for seed in range(5):
        for kinds_filter in (None, ("fact",)):
            query = _vector(1000 + seed)
            assert bulk.search(query, 10, statuses=("active",), kinds=kinds_filter, allowed=None) == one_by_one.search(
                query, 10, statuses=("active",), kinds=kinds_filter, allowed=None)
    bulk.add(999, "new", _vector(7), "fact", "active")  # grows past the spare rows it was built with
    assert len(bulk) == 301


def test_cache_alone_drops_nothing_within_budget() -> None:
    cache = UserIndexCache(budget=10**9)
    for user in "abc":
        loaded = (ExactIndex.load(DIMS, [1], ["x"], [_vector(1).tobytes()], ["fact"], ["active"]), 1)
        cache.get_or_load(user, lambda: loaded, lambda: 1)  # noqa: B023 - called before the next round
    assert cache.users() == ["a", "b", "c"]
    cache.clear()
    assert cache.users() == [] and cache.nbytes == 0


def test_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_VECTOR_CACHE_MB", raising=False)
    assert vector_cache_bytes() == VECTOR_CACHE_BYTES
    monkeypatch.setenv("ENGRAM_VECTOR_CACHE_MB", "64")
    assert vector_cache_bytes() == 64 << 20
    monkeypatch.setenv("ENGRAM_VECTOR_CACHE_MB", "lots")
    with pytest.raises(ConfigError):
        vector_cache_bytes()


def test_rowids_find_their_positions_as_the_dict_does() -> None:
    """An approximate search maps the rowids an IVF probe returns to positions by bisection while the
    rowids ascend: through adds, removes, a reused rowid (no longer ascending) and compactions, it
    finds exactly the live rows the rowid -> position dict finds."""
    rng = np.random.default_rng(4)
    index = ExactIndex(DIMS)
    next_rowid = 1
    modes = set()
    for step in range(6000):
        if rng.random() < 0.6 or not index._pos:
            rowid = next_rowid if rng.random() > 0.002 else max(index._pos, default=next_rowid)  # reused rowid
            next_rowid += int(rng.integers(1, 4))
            index.add(rowid, f"m{step}", _vector(step), "message", "active")
        else:
            index.remove(int(rng.choice(list(index._pos))))
        if step % 100 == 0:
            asked = rng.integers(-1, next_rowid + 2, size=300).astype(np.int64)
            by_dict = sorted(p for r in asked.tolist() if (p := index._pos.get(r)) is not None)
            assert sorted(index._positions_of(asked).tolist()) == by_dict
            modes.add(index._ascending)
    assert modes == {True, False}  # both ways were checked: a reused rowid, then compactions


def test_an_index_of_no_rows_loads_again_for_vectors_of_another_size(tmp_path: Path) -> None:
    """A store never told its dimensions holds a user of no rows as a one-dimensional index; another
    process's insert of longer vectors cannot go into it in place: the user is loaded again."""
    here, there = SQLiteStore(tmp_path / "v.db"), SQLiteStore(tmp_path / "v.db")
    try:
        record = MemoryRecord(id="x", user_id="u", content="alpha", kind="message", content_hash="x",
                              created_at=NOW, recorded_at=NOW, importance=0.5)
        there.put_many([record], np.ones((1, 4), dtype=np.float32))
        assert there.delete("u", "x")
        assert here.vector_search("u", np.ones(4, dtype=np.float32), 5, Filters()) == []
        there.put_many([dataclasses.replace(record, id="y", content_hash="y")], np.ones((1, 4), dtype=np.float32))
        assert [m for m, _ in here.vector_search("u", np.ones(4, dtype=np.float32), 5, Filters())] == ["y"]
    finally:
        here.close()
        there.close()
