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
