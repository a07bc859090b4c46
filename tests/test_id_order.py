"""Keyword rows' places in id order (engram.stores.id_order): ties between equal scores go to the
smaller id however rows arrive, and a row out of order does not make the next search sort every id."""

from __future__ import annotations

import numpy as np

from engram.stores.id_order import IdOrder
from engram.stores.matches import best
from engram.stores.postings import Postings
from engram.stores.untracked import string_array


def _agrees(order: IdOrder, ids: list[str]) -> None:
    """The placed rows' places sort them as their ids do."""
    assert order.rank is not None
    placed = ids[: order.placed]
    by_place = np.argsort(order.rank[: order.placed], kind="stable").tolist()
    assert [placed[i] for i in by_place] == sorted(placed)


def test_places_follow_the_ids_through_adds_placing_and_compaction() -> None:
    rng = np.random.default_rng(4)
    ids = [f"m{int(x):05d}" for x in rng.permutation(50_000)[:200]]
    order = IdOrder()
    order.ranks(string_array(ids, 300), len(ids), 300)  # every id sorted: the first search
    assert order.placed == len(ids)
    for step in range(400):
        in_order = rng.random() < 0.5
        new = f"z{step:05d}" if in_order else f"m{int(rng.integers(0, 50_000)):05d}x"
        ids.append(new)
        order.added(len(ids) - 1, new, len(ids) + 64)
        _agrees(order, ids)
        if step % 97 == 96:
            order.complete(string_array(ids), len(ids), len(ids) + 64)
            assert order.placed == len(ids)
            _agrees(order, ids)
            alive = rng.random(len(ids)) < 0.8
            order.compacted(alive, int(alive.sum()) + 64)
            ids = [i for i, a in zip(ids, alive.tolist(), strict=True) if a]
            _agrees(order, ids)
            assert order.placed == len(ids)


def test_a_row_out_of_order_is_left_unplaced_without_sorting_again() -> None:
    ids = [f"m{i:03d}" for i in range(100)]
    order = IdOrder()
    rank = order.ranks(string_array(ids), 100, 164)
    order.added(100, "m050x", 164)  # between two placed ids
    order.added(101, "z", 164)  # after every id, but after an unplaced row
    assert order.ranks(string_array([*ids, "m050x", "z"]), 102, 164) is rank  # no sort of every id
    assert order.placed == 100


def test_searches_break_ties_by_id_whatever_the_order_rows_arrived_in() -> None:
    """Every row scores the same: the best n are the n smallest ids, as an index built from scratch
    finds them, while rows arrive out of order, past the count that places them, and after a merge."""
    rng = np.random.default_rng(9)
    ids = [f"m{int(x):06d}" for x in rng.permutation(10**6)[:300]]
    index = Postings.build(range(1, 301), ids, [0] * 300, [" tea"] * 300)

    def top(p: Postings, n: int) -> list[str]:
        found = p.scores(["tea"])
        assert found is not None
        return [i for i, _ in best(found, n, lambda _rows: None)]

    assert top(index, 10) == sorted(ids)[:10]
    for k in range(1500):
        new = f"m{int(rng.integers(0, 10**6)):06d}y" if k % 3 else f"n{k:05d}"
        ids.append(new)
        index.add(301 + k, new, ["tea"], 0)
        if k in (5, 200, 1100, 1499):
            fresh = Postings.build(range(1, len(ids) + 1), ids, [0] * len(ids), [" tea"] * len(ids))
            assert top(index, 50) == top(fresh, 50) == sorted(ids)[:50], k
    for gone in ids[::7]:
        index.remove(gone)
    ids = [i for j, i in enumerate(ids) if j % 7]
    assert top(index, 60) == sorted(ids)[:60]
    loaded = Postings.of_parts(index.parts())
    assert loaded is not None and top(loaded, 60) == sorted(ids)[:60]
