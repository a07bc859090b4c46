"""The second hop: entities the best results name bring in the memories about them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.ext import Embedder
from engram.model import MemoryRecord
from engram.retrieve.hop import COMMON_AMONG, HOP_LIMIT, bridge_entities, bridged
from engram.retrieve.rank import RELEVANCE_SIGNAL
from engram.retrieve.types import Scored

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


Counts = Callable[[list[str], int], Mapping[str, int]]


def item(mid: str, entities: tuple[str, ...], relevance: float, tier: int = 0) -> Scored:
    record = MemoryRecord(id=mid, user_id="u", content=mid, recorded_at=NOW, created_at=NOW, content_hash=mid,
                          kind="message", entities=entities)
    return Scored(record=record, score=relevance, signals={RELEVANCE_SIGNAL: relevance}, tier=tier)


def bridges_of(
    scored: list[Scored], query_entities: list[str], counts: Counts | None = None
) -> dict[str, dict[str, float]]:
    """The bridges of a first pass whose candidates are ``scored`` (best first)."""
    return bridge_entities(scored, [s.record for s in scored], query_entities, RELEVANCE_SIGNAL, counts)


def test_bridges_are_what_top_results_name_and_the_query_does_not() -> None:
    scored = [item("a", ("leo", "patel"), 0.7), item("b", ("leo",), 0.5), item("c", ("mark",), 0.4),
              item("d", ("zoe",), 0.3)]
    assert bridges_of(scored, ["leo"]) == {"patel": {"a": 0.7}, "mark": {"c": 0.4}}


def test_an_entity_most_candidates_name_is_no_bridge() -> None:
    # A conversation's speaker is named by every turn: it would lift everything alike.
    scored = [item(f"t{i}", ("caroline", f"topic{i}"), 0.9 - i / 100) for i in range(40)]
    assert set(bridges_of(scored, [])) == {"topic0", "topic1", "topic2"}


def test_what_most_of_few_candidates_name_is_no_bridge() -> None:
    # Ten candidates, all naming Acme: under COMMON_MIN, yet common ground.
    scored = [item(f"t{i}", ("acme", "maya") if i == 0 else ("acme",), 0.9 - i / 100) for i in range(10)]
    assert set(bridges_of(scored, ["maya"])) == set()


def test_a_thing_a_few_candidates_name_still_bridges() -> None:
    # A tool named in 8 of 77 candidates is how "the tool Priya liked" reaches its price.
    scored = [item("liked", ("priya", "ledgerly"), 0.7)]
    scored += [item(f"trial{i}", ("ledgerly",), 0.3) for i in range(7)]
    scored += [item(f"o{i}", ("priya",), 0.2) for i in range(69)]
    assert set(bridges_of(scored, ["priya"])) == {"ledgerly"}


def test_common_ground_is_read_among_the_first_candidates_loaded() -> None:
    # Ten of the first 66 name Bright Smiles; twenty more further down (a deeper pool) do not make it
    # common ground: the bridge does not depend on how many candidates are scored.
    scored = [item("seed", ("patel", "bright smiles"), 0.8)]
    scored += [item(f"near{i}", ("bright smiles",), 0.5) for i in range(9)]
    scored += [item(f"o{i}", (f"o{i}",), 0.3) for i in range(COMMON_AMONG - len(scored))]
    assert set(bridges_of(scored, ["patel"])) == {"bright smiles"}
    deeper = scored + [item(f"far{i}", ("bright smiles",), 0.1) for i in range(20)]
    assert set(bridges_of(deeper, ["patel"])) == {"bright smiles"}
    # Within the first 66, eleven naming it are common ground.
    crowded = [*scored[:10], item("near9", ("bright smiles",), 0.5), *scored[10:COMMON_AMONG - 1]]
    assert set(bridges_of(crowded, ["patel"])) == set()


def test_who_speaks_among_the_candidates_is_no_bridge() -> None:
    # A colleague in the team chat is common ground, however few candidates name her.
    scored = [item("a", ("acme", "maya", "po-5531"), 0.8), item("b", ("maya",), 0.3), item("c", ("acme",), 0.2)]
    scored += [item(f"x{i}", (f"x{i}",), 0.1) for i in range(5)]
    assert set(bridges_of(scored, ["acme"])) == {"maya", "po-5531"}
    found = bridge_entities(scored, [s.record for s in scored], ["acme"], RELEVANCE_SIGNAL, speakers={"maya"})
    assert set(found) == {"po-5531"}


def test_a_name_the_question_says_as_a_word_is_no_bridge() -> None:
    # "Rush orders are stressful" names "Rush"; "What's the process for a rush order?" says the word.
    scored = [item("proc", ("mention:rush", "mention:stockpilot"), 0.8), item("chat", ("mention:rush",), 0.3)]
    scored += [item(f"x{i}", (), 0.1) for i in range(5)]
    assert set(bridges_of(scored, [])) == {"mention:rush", "mention:stockpilot"}
    found = bridge_entities(scored, [s.record for s in scored], [], RELEVANCE_SIGNAL, words=("process", "rush"))
    assert set(found) == {"mention:stockpilot"}


def test_out_of_range_and_irrelevant_results_do_not_bridge() -> None:
    scored = [item("a", ("x",), 0.0), item("b", ("y",), 0.8, tier=1)]
    assert bridges_of(scored, []) == {}


def test_a_seed_is_not_its_own_bridge() -> None:
    bridges = {"patel": {"a": 0.7}, "bright smiles": {"b": 0.5}}
    named = {"a": ("patel",), "p": ("patel", "bright smiles"), "q": ("other",)}
    assert bridged(named, bridges) == {"p": (0.7, "patel")}


@pytest.fixture
def dentist_memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "hop.db", embedder=embedder) as memory:
        day = NOW - timedelta(days=60)
        memory.add_many([
            {"content": "Leo sees the same dentist as I do, Dr. Patel.", "user_id": "dana", "created_at": day},
            {"content": "Dr. Patel's practice is Bright Smiles on Hawthorne, 503-555-0142.", "user_id": "dana",
             "created_at": day + timedelta(minutes=5)},
            *({"content": text, "user_id": "dana", "created_at": day + timedelta(days=i + 1)} for i, text in enumerate((
                "Mark's mobile is 503-555-0199, call after six.",
                "The plumber, Ortiz Plumbing, can be reached on 503-555-0101.",
                "Leo's piano lesson moved to Thursday at 4pm.",
                "Leo needs new football boots, size 3.",
                "The pediatrician, Dr. Okafor, wants to see Leo in January.",
                "Our vet is Dr. Ruiz at Hawthorne Animal Clinic.",
                "Jess lives in Porto with her husband Tiago.",
                "Book the car service before the long drive in December.",
            ))),
        ])
        yield memory


def test_the_second_hop_answers_a_question_through_its_first_answer(dentist_memory: Memory) -> None:
    result = dentist_memory.retrieve("What's the phone number of Leo's dentist?", user_id="dana", now=NOW,
                                     config=RetrievalConfig(top_k=5, interleave="score_first"))
    order = [m.content[:12] for m in result.memories]
    assert order[0] == "Leo sees the"
    # Nothing in the question names Dr. Patel; the first answer does, and brings the number in,
    # ahead of the other phone numbers that match the question's words as well.
    phone = result.memories[order.index("Dr. Patel's ")]
    assert phone.signals["entity_bridge"] == pytest.approx(result.memories[0].signals[RELEVANCE_SIGNAL])
    assert "mentions mention:patel, as a top result does" in phone.reasons
    assert order.index("Dr. Patel's ") < order.index("Mark's mobil") if "Mark's mobil" in order else True


def test_bridges_are_capped_rarest_first() -> None:
    many = tuple(f"e{i}" for i in range(10))
    scored = [item("a", many, 0.9), *(item(f"f{i}", many[: 10 - i], 0.1) for i in range(5)),
              *(item(f"g{i}", (), 0.05) for i in range(200))]
    # Named by the top result a and by 1 to 5 of the others: the rarest first, then by name.
    assert list(bridges_of(scored, [])) == ["e9", "e8", "e7", "e6", "e0", "e1"]


def test_an_entity_more_memories_name_than_the_hop_reads_is_a_topic_not_a_bridge() -> None:
    scored = [item("a", ("patel", "coffee"), 0.7), item("b", ("zoe",), 0.0)]
    asked: list[tuple[list[str], int]] = []

    def counts(ids: list[str], cap: int) -> dict[str, int]:
        asked.append((ids, cap))
        return {"patel": 2, "coffee": cap}  # coffee: at least cap memories name it

    assert bridges_of(scored, [], counts) == {"patel": {"a": 0.7}}
    assert asked == [(["coffee", "patel"], HOP_LIMIT + 1)]


def test_the_hop_skips_a_topic_named_by_many_memories(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "topic.db", embedder=embedder) as memory:
        day = NOW - timedelta(days=30)
        memory.add_many([
            {"content": "Leo sees the same dentist as I do, Dr. Patel.", "user_id": "dana", "created_at": day,
             "kind": "message"},
            {"content": "Dr. Patel's practice is Bright Smiles on Hawthorne, 503-555-0142.", "user_id": "dana",
             "created_at": day + timedelta(minutes=1), "kind": "message"},
            # Outside the filter below, so no candidate: only the store knows how many name Dr. Patel.
            *({"content": f"Dr. Patel billing note {i}.", "user_id": "dana", "kind": "fact",
               "created_at": day + timedelta(minutes=i + 2)} for i in range(HOP_LIMIT)),
        ])
        result = memory.retrieve("What's the phone number of Leo's dentist?", user_id="dana", now=NOW,
                                 filters={"kinds": ["message"]}, config=RetrievalConfig(top_k=5))
        # Dr. Patel is named by more memories than the hop reads: no memory gains from the first answer.
        assert len(result.memories) == 2
        assert all(m.signals.get("entity_bridge", 0.0) == 0.0 for m in result.memories)
