"""The facade end to end, with the real embedder and a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import EmbedderMismatch, MemoryNotFound, ValidationError
from engram.ext import Embedder
from engram.model import Filters

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=embedder) as m:
        yield m


def test_add_get_round_trip(memory: Memory) -> None:
    r = memory.add("Acme prefers NET30", user_id="u1", kind="fact", tags=["billing"], importance=0.7,
                   metadata={"source": "call"}, created_at="2024-01-02T03:04:05+02:00")
    got = memory.get(r.id, user_id="u1")
    assert got == r
    assert got.created_at == datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC)
    with pytest.raises(MemoryNotFound):
        memory.get(r.id, user_id="u2")


def test_paraphrase_found_by_meaning_that_keywords_miss(memory: Memory) -> None:
    memory.add_many([
        {"user_id": "u1", "content": "I purchased a new automobile last week."},
        {"user_id": "u1", "content": "My sister is visiting in June."},
        {"user_id": "u1", "content": "The garden needs watering twice a week."},
    ])
    query = "Did I buy a car?"
    keyword = memory.retrieve(query, user_id="u1", now=NOW,
                              config=RetrievalConfig(search_type="keyword", min_score=0.0))
    assert all("automobile" not in m.content for m in keyword.memories)
    hybrid = memory.retrieve(query, user_id="u1", now=NOW, config=RetrievalConfig(min_score=0.0))
    assert hybrid.memories[0].content == "I purchased a new automobile last week."
    assert "semantic" in " ".join(hybrid.memories[0].reasons)


def test_identical_content_is_embedded_once(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    with Memory(tmp_path / "m.db", embedder=fake) as memory:
        memory.add_many([{"user_id": "u1", "content": "same text"}, {"user_id": "u2", "content": "same text"}])
        memory.add("same text", user_id="u3")  # another user's vector is never reused (a timing oracle)
        memory.add("other text", user_id="u3")
        memory.add("same text", user_id="u3")  # the user's own is
    assert fake.texts_embedded == 3


def test_update_re_embeds_only_on_content_change(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    with Memory(tmp_path / "m.db", embedder=fake) as memory:
        r = memory.add("alpha beta", user_id="u1")
        memory.update(r.id, user_id="u1", importance=0.9)
        assert fake.texts_embedded == 1
        changed = memory.update(r.id, user_id="u1", content="gamma delta")
        assert fake.texts_embedded == 2
        assert memory.get(r.id, user_id="u1").content == "gamma delta"
        assert changed.importance == 0.9
        hits = memory.store.keyword_search("u1", "gamma", 5, Filters())
        assert [h[0] for h in hits] == [r.id]


def test_delete_and_forget_user_leave_no_trace(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder=FakeEmbedder()) as memory:
        a = memory.add("zebra crossing secret", user_id="u1")
        memory.add("another zebra fact, due on Dec 3", user_id="u1")  # a day the store indexes
        keep = memory.add("zebra of someone else", user_id="u2")
        memory.add_entity("customer:acme", user_id="u1", aliases=["Acme"])
        assert memory.retrieve("zebra", user_id="u1", now=NOW).memories
        assert memory.delete(a.id, user_id="u1")
        assert all(m.id != a.id for m in memory.retrieve("zebra", user_id="u1", now=NOW).memories)
        assert memory.forget_user("u1") == 1
        assert memory.retrieve("zebra", user_id="u1", now=NOW).memories == ()
        assert memory.get(keep.id, user_id="u2").content == "zebra of someone else"
    conn = sqlite3.connect(db)
    for table, column in [("memories", "user_id"), ("memory_tags", "user_id"),
                          ("memory_entities", "user_id"), ("memory_days", "user_id"), ("links", "user_id"),
                          ("entities", "user_id")]:
        assert conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {column} = 'u1'").fetchone()[0] == 0
    fts = conn.execute("SELECT COUNT(*) FROM keyword_fts WHERE terms LIKE '%zebra%'").fetchone()[0]
    assert fts == 1  # only u2's row remains in the keyword index
    assert conn.execute("SELECT COUNT(*) FROM keyword_stats WHERE user_id = 'u1'").fetchone()[0] == 0


def test_bad_input_is_typed_and_changes_nothing(memory: Memory) -> None:
    memory.add("first", user_id="u1")
    cases = [
        ({"content": ""}, "content"),
        ({"content": 42}, "content"),
        ({"content": "x", "user_id": ""}, "user_id"),
        ({"content": "x", "importance": 1.5}, "importance"),
        ({"content": "x", "importance": float("nan")}, "importance"),
        ({"content": "x", "created_at": datetime(2024, 1, 1)}, "created_at"),
        ({"content": "x", "created_at": "yesterday-ish"}, "created_at"),
        ({"content": "x", "kind": "gossip"}, "kind"),
        ({"content": "x" * 200_001}, "content"),
        ({"content": "x", "tags": "notalist"}, "tags"),
        ({"content": "x", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}}, "metadata"),
        ({"content": "x", "colour": "red"}, "colour"),
    ]
    for fields, field in cases:
        item = {"user_id": "u1", **fields}
        with pytest.raises(ValidationError) as info:
            memory.add_many([{"content": "valid one", "user_id": "u1"}, item])
        assert info.value.field == f"memories[1].{field}", fields
    assert [r.content for r in memory.list(user_id="u1")] == ["first"]


def test_model_mismatch_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("hello", user_id="u1")
    with Memory(db, embedder=FakeEmbedder(32)) as memory, pytest.raises(EmbedderMismatch):
        memory.add("hello again", user_id="u1")


def test_list_filters_and_stats(memory: Memory) -> None:
    memory.add_many([
        {"user_id": "u1", "content": "a", "kind": "fact", "created_at": NOW - timedelta(days=2)},
        {"user_id": "u1", "content": "b", "tags": ["t"], "created_at": NOW - timedelta(days=1)},
    ])
    assert [r.content for r in memory.list(user_id="u1")] == ["b", "a"]
    assert [r.content for r in memory.list(user_id="u1", filters={"kinds": ("fact",)})] == ["a"]
    assert [r.content for r in memory.list(user_id="u1", filters={"tags_all": ("t",)})] == ["b"]
    assert memory.stats()["memories"] == 2


def test_vectors_are_normalized(embedder: Embedder) -> None:
    v = embedder.embed_batch(["one", "two words here", ""])
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v[:2], axis=1), 1.0, rtol=1e-5)


def test_retrieve_with_another_embedder_raises_mismatch_not_an_outage(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("hello", user_id="u1")
    # An empty answer marked "temporarily unavailable" would hide a permanent configuration error.
    with Memory(db, embedder=FakeEmbedder(32)) as memory, pytest.raises(EmbedderMismatch):
        memory.retrieve("hello", user_id="u1")


def test_entity_table_is_read_once_until_the_user_writes(tmp_path: Path) -> None:
    from engram.config import RetrievalConfig

    with Memory(tmp_path / "m.db", embedder=FakeEmbedder()) as memory:
        memory.add_entity("customer:acme", user_id="u1", name="Acme Corporation", aliases=["Acme"])
        memory.add("Globex ordered docks", user_id="u1")
        indexes = memory.pipeline.entity_indexes
        loads, builds = indexes.loads, indexes.builds
        fresh = RetrievalConfig(cache_ttl=0)
        memory.retrieve("What did Acme order?", user_id="u1", config=fresh)
        memory.retrieve("What did Acme buy?", user_id="u1", config=fresh)
        # Read again once after the add (a write to the user), but the table was unchanged: not re-indexed.
        assert (indexes.loads, indexes.builds) == (loads + 1, builds)
        # A new entity is seen by the very next query: the write moved the user's generation.
        memory.add_entity("customer:globex", user_id="u1", name="Globex")
        memory.add("Globex paid the invoice", user_id="u1")  # tagged customer:globex when written
        result = memory.retrieve("What did Globex pay?", user_id="u1", config=fresh)
        assert indexes.builds == builds + 1
        assert any(e.signals["entity_overlap"] == 1.0 for e in result.memories)


def test_no_public_method_of_memory_takes_untyped_options() -> None:
    """Every ``**options`` of the facade is a TypedDict: mypy checks what callers pass."""
    import inspect
    import typing

    from engram import Memory as Facade

    hints_missing = []
    for name, method in inspect.getmembers(Facade, inspect.isfunction):
        if name.startswith("_"):
            continue
        for param in inspect.signature(method).parameters.values():
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                hint = typing.get_type_hints(method).get(param.name)
                if typing.get_origin(hint) is not typing.Unpack:
                    hints_missing.append(f"{name}(**{param.name}: {hint})")
    assert hints_missing == []
