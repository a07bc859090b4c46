"""Per-row strings of the in-memory indexes stay out of the cyclic garbage collector's walks: a list
of a million ids cost every full collection ~18 ms (engram.stores.untracked)."""

from __future__ import annotations

import gc

import numpy as np

from engram.stores.postings import Postings
from engram.stores.sqlite.vectors import ExactIndex
from engram.stores.untracked import string_array
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
