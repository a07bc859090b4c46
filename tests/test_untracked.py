"""What stores hold in memory for long stays out of the cyclic garbage collector's walks: a list of a
million ids cost every full collection ~18 ms, 300k cached records ~80 ms (engram.stores.untracked)."""

from __future__ import annotations

import gc
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram.model import MemoryRecord
from engram.stores.postings import Postings
from engram.stores.sqlite.store import SQLiteStore
from engram.stores.sqlite.vectors import ExactIndex
from engram.stores.untracked import string_array, untrack
from engram.stores.vocabulary import Vocabulary


def test_string_array_holds_the_strings_untracked_with_spare_slots() -> None:
    ids = string_array(["a", "bc"], capacity=5)
    assert ids.tolist() == ["a", "bc", None, None, None]
    assert not gc.is_tracked(ids)
    assert string_array(["x"] * 3).tolist() == ["x"] * 3


def test_postings_ids_stay_untracked_through_adds_removals_and_merges() -> None:
    index = Postings.build([1, 2], ["m1", "m2"], [0, 0], [" apple pie", " apple tart"])
    for i in range(3, 200):
        index.add(i, f"m{i}", ["apple", f"w{i}"], 0)
    index.remove("m2")
    index.remove("m7")
    assert not gc.is_tracked(index._ids)
    found = index.scores(["apple"])
    assert found is not None
    ids = found.ids(np.arange(len(found.positions)))
    assert sorted(ids) == sorted(["m1", *(f"m{i}" for i in range(3, 200) if i != 7)])


def test_vector_ids_stay_untracked_through_growth_and_compaction() -> None:
    index = ExactIndex(4, capacity=2)
    for i in range(3000):
        index.add(i, f"m{i}", np.ones(4, dtype=np.float32), "fact", "active")
    for i in range(0, 3000, 2):
        index.remove(i)  # more than a quarter removed: compacted
    assert not gc.is_tracked(index._ids)
    assert list(index.ids()) == [f"m{i}" for i in range(1, 3000, 2)]


def test_a_saved_vocabulary_is_untracked_after_a_collection() -> None:
    vocabulary = Vocabulary.of_sorted([f"t{i:05d}" for i in range(1000)], np.arange(1000, dtype=np.int64))
    assert vocabulary is not None
    gc.collect()
    assert not gc.is_tracked(vocabulary._sorted)
    assert vocabulary.get("t00500") == 500


cpython = pytest.mark.skipif(sys.implementation.name != "cpython", reason="untracking is CPython's C API")


@cpython
def test_records_the_record_cache_holds_are_untracked_and_still_freed(tmp_path: Path) -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    store = SQLiteStore(tmp_path / "u.db")
    try:
        records = [MemoryRecord(id=f"m{i}", user_id="u", content=f"note {i}", kind="fact", content_hash=f"h{i}",
                                created_at=now, recorded_at=now, tags=("a",), metadata={"k": i}) for i in range(3)]
        store.put_many(records, np.ones((3, 4), dtype=np.float32))
        held = store.fetch("u", ["m0", "m1", "m2"])
        tracked = [gc.is_tracked(r) for r in held]
        answered_again = store.fetch("u", ["m1"])[0] is held[1]  # held by the cache
        # Freed by reference counting alone, which untracking leaves as it was: the cache's
        # reference goes with the user's entry (counted before any assert keeps a value around).
        before = sys.getrefcount(held[0])
        store._records.clear()
        after = sys.getrefcount(held[0])
        assert [r.metadata for r in held] == [{"k": 0}, {"k": 1}, {"k": 2}]
        assert tracked == [False, False, False]
        assert answered_again
        assert after == before - 1
    finally:
        store.close()


@cpython
def test_an_untracked_object_is_left_out_of_full_collections() -> None:
    kept = [MemoryRecord(id=str(i), user_id="u", content="x", kind="fact", content_hash="h",
                         created_at=datetime(2026, 1, 1, tzinfo=UTC), recorded_at=datetime(2026, 1, 1, tzinfo=UTC))
            for i in range(50)]
    assert all(gc.is_tracked(r) for r in kept)
    untrack(kept)
    untrack(kept)  # twice is harmless
    assert not any(gc.is_tracked(r) for r in kept)
    walked = {id(o) for o in gc.get_objects()}
    assert not walked & {id(r) for r in kept}
