"""The preset engine: sources read as far as the answer needs, filters checked again, one explanation."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.model import Filters, Hit, MemoryRecord
from engram.retrieve.engine import Evidence, Raw, Source, Strategy, Weighting, run
from engram.retrieve.types import Scored

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)
U = "u1"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    # What the engine reads here needs no meaning: a small deterministic embedder stores the notes.
    with Memory(tmp_path / "engine.db", embedder=FakeEmbedder(16)) as m:
        yield m


@pytest.fixture
def notes(memory: Memory) -> list[MemoryRecord]:
    """Ten notes, newest first, importance rising with age (0.0 newest .. 0.9 oldest)."""
    records = memory.add_many([
        {"id": f"n{i}", "content": f"note {i}", "user_id": U, "importance": i / 10,
         "created_at": NOW - timedelta(days=i)}
        for i in range(10)
    ])
    return sorted(records, key=lambda r: r.created_at, reverse=True)


def importance(record: MemoryRecord, _raw: Raw) -> Evidence:
    return Evidence({"importance": record.importance}, (f"importance {record.importance:.1f}",))


BY_IMPORTANCE = Weighting({"importance": 1.0})


def newest(memory: Memory, reads: list[int]) -> Callable[[int], list[Hit]]:
    def read(n: int) -> list[Hit]:
        reads.append(n)
        return memory.store.most_recent(U, n, Filters())

    return read


def test_weighting_gates_and_adds() -> None:
    gated = Weighting({"salience": 0.4}, gate="similarity", base=0.6)
    assert gated.score({"similarity": 0.5, "salience": 1.0}) == pytest.approx(0.5)
    assert gated.score({"similarity": 0.0, "salience": 1.0}) == 0.0  # nothing lifts what does not match
    assert gated.reported() == {"similarity": 1.0, "salience": 0.4}
    summed = Weighting({"a": 0.25, "b": 0.75})
    assert summed.score({"a": 1.0, "b": 0.5}) == pytest.approx(0.625)


def test_every_result_is_explained(memory: Memory, notes: list[MemoryRecord]) -> None:
    strategy = Strategy("t", (Source("recent", newest(memory, []), 10),), Filters(), importance, BY_IMPORTANCE, 3)
    found = run(memory.store, U, strategy)
    assert [s.record.id for s in found] == ["n9", "n8", "n7"]
    assert [s.score for s in found] == pytest.approx([0.9, 0.8, 0.7])
    assert found[0].signals == {"importance": 0.9} and found[0].weights == {"importance": 1.0}
    assert found[0].reasons == ("importance 0.9",)


def test_filters_are_checked_again_after_fetch(memory: Memory, notes: list[MemoryRecord]) -> None:
    archived = memory.add("archived note", user_id=U, status="archived", importance=1.0)
    theirs = memory.add("their note", user_id="u2", importance=1.0)
    # A source that ignores the filters (as a store bug or a link would) still cannot leak them.
    listed: list[Hit] = [(archived.id, 1.0), (theirs.id, 1.0), ("n1", 1.0)]
    strategy = Strategy("t", (Source("loose", lambda n: listed[:n], 3),), Filters(), importance, BY_IMPORTANCE, 5)
    assert [s.record.id for s in run(memory.store, U, strategy)] == ["n1"]


def test_source_order_reads_only_as_far_as_the_limit(memory: Memory, notes: list[MemoryRecord]) -> None:
    reads: list[int] = []
    strategy = Strategy(
        "t", (Source("recent", newest(memory, reads), 2, grows=True),), Filters(),
        lambda r, raw: importance(r, raw) if r.importance >= 0.3 else None, BY_IMPORTANCE, 3, order="source",
    )
    assert [s.record.id for s in run(memory.store, U, strategy)] == ["n3", "n4", "n5"]  # newest first
    assert reads == [2, 8]  # the first two were not admitted: read four-fold further, once


def test_score_order_reads_to_the_end_without_a_bound(memory: Memory, notes: list[MemoryRecord]) -> None:
    reads: list[int] = []
    strategy = Strategy("t", (Source("recent", newest(memory, reads), 2, grows=True),), Filters(), importance,
                        BY_IMPORTANCE, 2)
    assert [s.record.id for s in run(memory.store, U, strategy)] == ["n9", "n8"]  # the oldest, past any count
    assert reads == [2, 8, 32]


def test_a_stated_most_caps_the_reading(memory: Memory, notes: list[MemoryRecord]) -> None:
    reads: list[int] = []
    strategy = Strategy("t", (Source("recent", newest(memory, reads), 2, grows=True, most=5),), Filters(),
                        importance, BY_IMPORTANCE, 2)
    # The best two (n9, n8) are older than the cap: the answer is the best of the five newest.
    assert [s.record.id for s in run(memory.store, U, strategy)] == ["n4", "n3"]
    assert reads == [2, 5]


def test_a_bound_ends_the_reading_once_nothing_unseen_can_rank(memory: Memory, notes: list[MemoryRecord]) -> None:
    reads: list[int] = []
    # Newest first and importance rising with age: nothing unseen is bounded. Score by recency
    # instead (the hit's timestamp): then nothing older than the last read can beat what was read.
    def fresh(record: MemoryRecord, raw: Raw) -> Evidence:
        return Evidence({"time": raw["recent"][record.id]})

    def bound(lists: Mapping[str, list[Hit]]) -> float:
        return lists["recent"][-1][1]

    strategy = Strategy("t", (Source("recent", newest(memory, reads), 2, grows=True),), Filters(), fresh,
                        Weighting({"time": 1.0}), 2, bound=bound)
    assert [s.record.id for s in run(memory.store, U, strategy)] == ["n0", "n1"]
    assert reads == [2, 8]  # at 2 the second result ties the bound: an unseen memory could still tie


def test_a_bound_below_the_floor_ends_the_reading(memory: Memory, notes: list[MemoryRecord]) -> None:
    reads: list[int] = []
    strategy = Strategy("t", (Source("recent", newest(memory, reads), 2, grows=True),), Filters(), importance,
                        BY_IMPORTANCE, 5, floor=0.5, bound=lambda _lists: 0.4)
    assert run(memory.store, U, strategy) == []  # n0 and n1 are below the floor, and so is anything unseen
    assert reads == [2]


def test_a_pick_sees_every_admitted_memory(memory: Memory, notes: list[MemoryRecord]) -> None:
    seen: list[str] = []

    def pick(items: list[Scored]) -> list[Scored]:
        seen.extend(s.record.id for s in items)
        return items[-1:]

    strategy = Strategy("t", (Source("recent", newest(memory, []), 3, grows=True),), Filters(), importance,
                        BY_IMPORTANCE, 1, order="source", pick=pick)
    [chosen] = run(memory.store, U, strategy)
    assert chosen.record.id == "n9" and len(seen) == 10


def test_ties_go_to_the_smaller_or_the_larger_id(memory: Memory) -> None:
    memory.add_many([{"id": name, "content": "same", "user_id": U, "created_at": NOW} for name in ("b", "a", "c")])
    same = Weighting({"one": 1.0})

    def flat(_r: MemoryRecord, _raw: Raw) -> Evidence:
        return Evidence({"one": 1.0})

    source = Source("recent", newest(memory, []), 10)
    smaller = Strategy("t", (source,), Filters(), flat, same, 3)
    larger = Strategy("t", (source,), Filters(), flat, same, 3, ties="larger_id")
    assert [s.record.id for s in run(memory.store, U, smaller)] == ["a", "b", "c"]
    assert [s.record.id for s in run(memory.store, U, larger)] == ["c", "b", "a"]
