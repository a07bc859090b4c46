"""Current truth: newer facts supersede older ones; history stays reachable with as_of."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.ext import Embedder

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=100)
RAW = RetrievalConfig(min_score=0.0, clip_sentences=None, max_tokens=None, cache_ttl=0)


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "t.db", embedder=embedder) as m:
        yield m


def fact(obj: str, days: int) -> dict[str, object]:
    return {"user_id": "u", "kind": "fact", "subject": "Acme", "predicate": "prefers",
            "object": obj, "created_at": T0 + timedelta(days=days)}


def test_newer_fact_supersedes_older_with_links(memory: Memory) -> None:
    old = memory.add_many([fact("NET30 payment terms", 0)])[0]
    new = memory.add_many([fact("NET60 payment terms", 10)])[0]
    stored_old = memory.get(old.id, user_id="u")
    assert stored_old.status == "superseded"
    assert stored_old.valid_to == T0 + timedelta(days=10)
    assert memory.get(new.id, user_id="u").status == "active"
    types = {(link.from_id, link.to_id, link.type) for link in memory.links(new.id, user_id="u")}
    assert types == {(new.id, old.id, "supersedes"), (new.id, old.id, "contradicts")}

    result = memory.retrieve("What payment terms does Acme prefer?", user_id="u", now=NOW, config=RAW)
    ids = result.ids()
    assert new.id in ids and old.id not in ids
    assert result.metadata.suppressed_superseded == 1

    history = memory.retrieve("What payment terms does Acme prefer?", user_id="u", now=NOW,
                              config=RAW.with_(include_superseded=True))
    assert {old.id, new.id} <= set(history.ids())


def test_as_of_answers_what_was_true_then(memory: Memory) -> None:
    old = memory.add_many([fact("NET30 payment terms", 0)])[0]
    new = memory.add_many([fact("NET60 payment terms", 10)])[0]
    then = memory.retrieve("Acme payment terms", user_id="u", now=NOW, config=RAW, as_of=T0 + timedelta(days=5))
    assert old.id in then.ids() and new.id not in then.ids()
    later = memory.retrieve("Acme payment terms", user_id="u", now=NOW, config=RAW, as_of=T0 + timedelta(days=50))
    assert new.id in later.ids() and old.id not in later.ids()


def test_backfilled_older_fact_does_not_supersede_newer(memory: Memory) -> None:
    new = memory.add_many([fact("NET60 payment terms", 10)])[0]
    backfilled = memory.add_many([fact("NET30 payment terms", 0)])[0]
    assert memory.get(new.id, user_id="u").status == "active"
    assert memory.get(backfilled.id, user_id="u").status == "superseded"


def test_same_object_restated_supersedes_nothing(memory: Memory) -> None:
    a = memory.add_many([fact("NET30", 0)])[0]
    b = memory.add_many([fact("net30", 5)])[0]
    assert memory.get(a.id, user_id="u").status == "active"
    assert memory.get(b.id, user_id="u").status == "active"


def test_fifty_versions_never_flood_results(memory: Memory) -> None:
    """graphiti#1804: stale facts flooding results."""
    memory.add_many([fact(f"blend number {i}", i) for i in range(50)])
    result = memory.retrieve("Which blend does Acme prefer?", user_id="u", now=NOW, config=RAW.with_(top_k=20))
    facts = [e for e in result.memories if e.type == "fact"]
    assert len(facts) == 1 and facts[0].content.endswith("blend number 49")
    assert sum(1 for r in memory.list(user_id="u", filters={"statuses": ("superseded",)}, limit=100)) == 49


def test_other_users_facts_are_untouched(memory: Memory) -> None:
    mine = memory.add_many([fact("NET30", 0)])[0]
    memory.add_many([{**fact("NET90", 5), "user_id": "someone-else"}])
    assert memory.get(mine.id, user_id="u").status == "active"


# -- deleting a version: the history is walked again as if it had never been stored -----------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_memory(request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    if request.param == "sqlite":
        with Memory(tmp_path / "t.db", embedder=embedder) as m:
            yield m
    else:
        yield Memory(store=request.getfixturevalue("postgres_store"), embedder=embedder)


def _links(memory: Memory, memory_id: str) -> set[tuple[str, str, str]]:
    return {(link.from_id, link.to_id, link.type) for link in memory.links(memory_id, user_id="u")}


def test_deleting_the_newest_version_makes_the_previous_current_again(any_memory: Memory) -> None:
    memory = any_memory
    old = memory.add_many([fact("NET30 payment terms", 0)])[0]
    new = memory.add_many([fact("NET60 payment terms", 10)])[0]
    memory.retrieve("What payment terms does Acme prefer?", user_id="u", now=NOW, config=RAW)  # warm caches

    assert memory.delete(new.id, user_id="u")

    restored = memory.get(old.id, user_id="u")
    assert restored.status == "active" and restored.valid_to is None
    assert _links(memory, old.id) == set()
    result = memory.retrieve("What payment terms does Acme prefer?", user_id="u", now=NOW, config=RAW)
    assert old.id in result.ids() and result.metadata.suppressed_superseded == 0
    later = memory.retrieve("Acme payment terms", user_id="u", now=NOW, config=RAW, as_of=T0 + timedelta(days=50))
    assert old.id in later.ids()
    # Current truth keeps working: the next version supersedes the reinstated one.
    newest = memory.add_many([fact("NET90 payment terms", 20)])[0]
    assert memory.get(old.id, user_id="u").status == "superseded"
    assert _links(memory, newest.id) == {(newest.id, old.id, "supersedes"), (newest.id, old.id, "contradicts")}


def test_deleting_a_middle_version_links_its_neighbours(any_memory: Memory) -> None:
    memory = any_memory
    v1, v2, v3 = (memory.add_many([fact(f"NET{d} payment terms", d)])[0] for d in (30, 60, 90))
    assert memory.delete(v2.id, user_id="u")
    first = memory.get(v1.id, user_id="u")
    assert first.status == "superseded" and first.valid_to == T0 + timedelta(days=90)
    assert memory.get(v3.id, user_id="u").status == "active"
    assert _links(memory, v1.id) == {(v3.id, v1.id, "supersedes"), (v3.id, v1.id, "contradicts")}
    # Deleting the oldest changes nobody.
    assert memory.delete(v1.id, user_id="u")
    assert memory.get(v3.id, user_id="u").status == "active"


def test_deleting_the_newest_after_a_backfill_reinstates_only_the_latest(any_memory: Memory) -> None:
    memory = any_memory
    newest = memory.add_many([fact("NET90", 10)])[0]
    earliest = memory.add_many([fact("NET30", 0)])[0]  # backfilled: superseded by the newest at once
    middle = memory.add_many([fact("NET60", 5)])[0]  # also superseded by the newest
    assert memory.delete(newest.id, user_id="u")
    assert memory.get(middle.id, user_id="u").status == "active"
    assert memory.get(middle.id, user_id="u").valid_to is None
    first = memory.get(earliest.id, user_id="u")
    assert first.status == "superseded" and first.valid_to == T0 + timedelta(days=5)
    assert (middle.id, earliest.id, "supersedes") in _links(memory, earliest.id)


def test_deleting_a_restatement_or_another_kind_changes_no_status(any_memory: Memory) -> None:
    memory = any_memory
    a = memory.add_many([fact("NET30", 0)])[0]
    b = memory.add_many([fact("net30", 5)])[0]
    note = memory.add("Acme called about NET30", user_id="u")
    memory.link(note.id, a.id, "supersedes", user_id="u")  # a hand-made link between a note and a fact
    assert memory.delete(note.id, user_id="u") and memory.delete(b.id, user_id="u")
    assert memory.get(a.id, user_id="u").status == "active"
