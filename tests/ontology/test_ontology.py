"""Entity relations, the ontology that allows them, and ontology-aware expansion at retrieval."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from engram import Memory, RetrievalConfig
from engram.errors import ValidationError
from engram.ext import Embedder, Store
from engram.model import EntityRelation, RelationType

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
USER = "maya"


@pytest.fixture
def memory(store: Store, embedder: Embedder) -> Iterator[Memory]:
    """A Memory over each backend (the contract ``store`` fixture)."""
    yield Memory(store=store, embedder=embedder)


def _acme(memory: Memory) -> None:
    memory.add_entity("customer:acme", user_id=USER, name="Acme Corporation", aliases=["Acme"])
    memory.add_entity("order:a-1042", user_id=USER, name="A-1042")
    memory.define_relation("customer", "HAS_MANY", "order", user_id=USER)


def test_entities_accessor_lists_and_relates(memory: Memory) -> None:
    _acme(memory)
    assert [e.id for e in memory.entities(user_id=USER)] == ["customer:acme", "order:a-1042"]
    rel = memory.entities.relate("customer:acme", "HAS_MANY", "order:a-1042", user_id=USER)
    assert rel == EntityRelation("customer:acme", "HAS_MANY", "order:a-1042", "customer", "order")
    assert memory.entities.related("customer:acme", user_id=USER) == [rel]
    assert memory.entities.ontology(user_id=USER) == [RelationType("customer", "HAS_MANY", "order")]
    assert memory.entities.related("customer:acme", user_id="someone-else") == []


def test_relate_requires_the_ontology(memory: Memory) -> None:
    _acme(memory)
    with pytest.raises(ValidationError, match="define_relation"):
        memory.relate("order:a-1042", "HAS_MANY", "customer:acme", user_id=USER)  # the wrong way round
    with pytest.raises(ValidationError, match="define_relation"):
        memory.relate("customer:acme", "HAS_MANY", "order:x", user_id="other")  # other user's ontology
    for bad in ("", "has many", "x" * 65):
        with pytest.raises(ValidationError):
            memory.define_relation("customer", bad, "order", user_id=USER)
    # Unregistered ids take their type from the prefix, as add_entity does.
    rel = memory.relate("customer:bluebird", "HAS_MANY", "order:b-7", user_id=USER)
    assert (rel.from_type, rel.to_type) == ("customer", "order")


def test_expansion_finds_memories_of_related_entities_and_says_why(memory: Memory) -> None:
    _acme(memory)
    memory.relate("customer:acme", "HAS_MANY", "order:a-1042", user_id=USER)
    shipped = memory.add(
        "Order A-1042 left the roastery on Tuesday: 40 kg Huila, 20 kg house espresso.",
        user_id=USER, kind="episode", entities=["order:a-1042"], created_at="2026-03-10T10:00:00+00:00",
    )
    memory.add("The farmers market stall sold out of the house blend.", user_id=USER, kind="episode",
               created_at="2026-03-11T10:00:00+00:00")
    config = RetrievalConfig(top_k=5, cache_ttl=0)
    result = memory.retrieve("What is the status of Acme's order?", user_id=USER, now=NOW, config=config)
    entry = next(m for m in result.memories if m.id == shipped.id)
    assert "related to customer:acme via HAS_MANY" in entry.reasons
    assert "mentions customer:acme" not in entry.reasons and "found by ontology" not in entry.reasons
    assert entry.signals["entity_overlap"] == 1.0  # a memory about Acme's order is about Acme
    # The stored record: the tagged entity first, then what extraction found in the text (not Acme).
    assert entry.record is not None and entry.record.entities[0] == "order:a-1042"
    assert "customer:acme" not in entry.record.entities
    assert "candidates.expand" in result.metadata.stage_ms and "candidates.ontology" in result.metadata.stage_ms


def test_expansion_follows_only_declared_relations(memory: Memory) -> None:
    _acme(memory)
    memory.relate("customer:acme", "HAS_MANY", "order:a-1042", user_id=USER)
    memory.define_relation("customer", "KNOWS", "person", user_id=USER)
    memory.relate("customer:acme", "KNOWS", "person:bo", user_id=USER)
    related = memory.entities.related("customer:acme", user_id=USER)
    assert {r.to_id for r in related} == {"order:a-1042", "person:bo"}


def test_expansion_is_bounded_per_entity(memory: Memory) -> None:
    _acme(memory)
    for i in range(15):
        memory.relate("customer:acme", "HAS_MANY", f"order:{i:03d}", user_id=USER)
    assert len(memory.entities.related("customer:acme", user_id=USER)) == 10


def test_no_entities_no_expansion(memory: Memory) -> None:
    _acme(memory)
    memory.add("Roasting on Tuesdays and Fridays.", user_id=USER)
    result = memory.retrieve("when do we roast", user_id=USER, now=NOW, config=RetrievalConfig(cache_ttl=0))
    assert "candidates.expand" not in result.metadata.stage_ms


def test_forget_user_removes_relations_and_ontology(memory: Memory) -> None:
    _acme(memory)
    memory.relate("customer:acme", "HAS_MANY", "order:a-1042", user_id=USER)
    memory.add("anything", user_id=USER)
    memory.forget_user(USER)
    assert memory.entities.ontology(user_id=USER) == []
    assert memory.entities.related("customer:acme", user_id=USER) == []
