"""What every store must do. Runs unchanged against each backend (see conftest ``store``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engram.errors import EmbedderMismatch, StoreError, ValidationError
from engram.ext import Store
from engram.ingest.normalize import content_hash
from engram.model import (
    Entity,
    EntityRelation,
    Filters,
    Link,
    LoggedItem,
    LoggedRetrieval,
    MemoryRecord,
    RelationType,
    new_id,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DIM = 8


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def rec(user: str, content: str, **kw: object) -> MemoryRecord:
    fields: dict[str, object] = {
        "id": new_id(), "user_id": user, "content": content, "kind": "message",
        "created_at": T0, "recorded_at": T0, "content_hash": content_hash(content),
    }
    fields.update(kw)
    return MemoryRecord(**fields)  # type: ignore[arg-type]


def put(store: Store, *records: MemoryRecord, seeds: list[int] | None = None) -> None:
    seeds = seeds or list(range(len(records)))
    store.put_many(list(records), np.stack([unit(s) for s in seeds]))


def test_round_trip_every_field(store: Store) -> None:
    r = rec(
        "u1", "Acme prefers NET30", kind="fact", agent_id="a", session_id="s", project_id="p",
        role="assistant", subject="customer:acme", predicate="prefers", object="NET30",
        trigger="an invoice is due", action="offer NET30", last_accessed_at=T0 + timedelta(days=1), access_count=4,
        tags=("billing", "terms"), entities=("customer:acme",), importance=0.75,
        valid_from=T0, valid_to=T0 + timedelta(days=3), metadata={"source": "chat", "n": 2},
        doc_key="k", version=3, status="archived",
        created_at=datetime(2024, 2, 3, 4, 5, 6, 789012, tzinfo=UTC),
    )
    put(store, r)
    assert store.get("u1", r.id) == r
    assert store.fetch("u1", [r.id]) == [r]


def test_reads_are_scoped_to_the_user(store: Store) -> None:
    mine, theirs = rec("u1", "shared words here"), rec("u2", "shared words here")
    put(store, mine, theirs, seeds=[1, 1])
    assert store.get("u1", theirs.id) is None
    assert store.fetch("u1", [mine.id, theirs.id]) == [mine]
    assert [h[0] for h in store.vector_search("u1", unit(1), 10, Filters())] == [mine.id]
    assert [h[0] for h in store.keyword_search("u1", "shared words", 10, Filters())] == [mine.id]
    assert [h[0] for h in store.most_recent("u1", 10, Filters())] == [mine.id]


def test_vector_search_orders_by_cosine(store: Store) -> None:
    records = [rec("u1", f"memory {i}") for i in range(5)]
    put(store, *records, seeds=[10, 11, 12, 13, 14])
    hits = store.vector_search("u1", unit(12), 3, Filters())
    assert hits[0][0] == records[2].id
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert len(hits) == 3


def test_keyword_search_is_bm25_like_and_inert_to_syntax(store: Store) -> None:
    a = rec("u1", "The invoice for Acme was paid late")
    b = rec("u1", "Lunch with Sarah about the garden")
    put(store, a, b)
    hits = store.keyword_search("u1", "acme invoice", 10, Filters())
    assert [h[0] for h in hits] == [a.id]
    assert hits[0][1] > 0
    for hostile in ['"unbalanced', "NEAR(a b)", "a AND OR NOT", "col:acme", "*", "'; DROP TABLE memories; --"]:
        store.keyword_search("u1", hostile, 10, Filters())  # must not raise
    assert store.get("u1", a.id) is not None


def test_filters(store: Store) -> None:
    a = rec("u1", "alpha note", kind="fact", tags=("x", "y"), session_id="s1", metadata={"src": "chat"})
    b = rec("u1", "alpha note two", kind="message", tags=("x",), session_id="s2", metadata={"src": "mail"})
    c = rec("u1", "alpha archived", status="archived", tags=("y",))
    put(store, a, b, c)

    def ids(f: Filters) -> set[str]:
        return {h[0] for h in store.keyword_search("u1", "alpha", 10, f)}

    assert ids(Filters()) == {a.id, b.id}
    assert ids(Filters(kinds=("fact",))) == {a.id}
    assert ids(Filters(tags_all=("x", "y"))) == {a.id}
    assert ids(Filters(tags_any=("y",))) == {a.id}
    assert ids(Filters(tags_any=("y",), statuses=("active", "archived"))) == {a.id, c.id}
    assert ids(Filters(session_id="s2")) == {b.id}
    assert ids(Filters(metadata={"src": "mail"})) == {b.id}
    vector_ids = {h[0] for h in store.vector_search("u1", unit(0), 10, Filters(tags_all=("x",)))}
    assert vector_ids == {a.id, b.id}


def test_time_entities_importance_access(store: Store) -> None:
    old = rec("u1", "old", created_at=T0, entities=("customer:acme",), importance=0.9)
    new = rec("u1", "new", created_at=T0 + timedelta(days=10), entities=("customer:acme", "order:1"))
    put(store, old, new)
    span = store.by_time_range("u1", T0 + timedelta(days=5), T0 + timedelta(days=15), 10, Filters())
    assert [h[0] for h in span] == [new.id]
    ents = store.by_entities("u1", ["customer:acme", "order:1"], 10, Filters())
    assert ents[0] == (new.id, 2.0) and ents[1] == (old.id, 1.0)
    assert store.entity_counts("u1", ["customer:acme", "order:1", "nobody"], 10) == {
        "customer:acme": 2, "order:1": 1, "nobody": 0}
    assert store.entity_counts("u1", ["customer:acme"], 1) == {"customer:acme": 1}  # counted only up to the cap
    assert store.entity_counts("u2", ["customer:acme"], 10) == {"customer:acme": 0}  # another user's are not counted
    assert store.entity_shares("u1", ["customer:acme", "order:1", "nobody"], 10) == (
        {"customer:acme": 2, "order:1": 1, "nobody": 0}, 2)
    # the newest only: every memory said after the second newest was
    assert store.entity_shares("u1", ["customer:acme", "order:1"], 1) == ({"customer:acme": 1, "order:1": 1}, 1)
    assert store.entity_shares("u2", ["customer:acme"], 10) == ({"customer:acme": 0}, 0)
    # a window never splits what was said at one moment, so every backend reads the same memories
    put(store, rec("u4", "first", created_at=T0, entities=("order:1",)),
        *(rec("u4", f"twin {n}", created_at=T0 + timedelta(days=1), entities=("order:1",)) for n in range(2)))
    assert store.entity_shares("u4", ["order:1"], 1) == ({"order:1": 0}, 0)
    assert store.entity_shares("u4", ["order:1"], 2) == ({"order:1": 2}, 2)
    put(store, rec("u3", "ancient", created_at=datetime(1901, 1, 1, tzinfo=UTC), entities=("customer:acme",)))
    assert store.entity_shares("u3", ["customer:acme"], 10) == ({"customer:acme": 1}, 1)
    assert store.most_important("u1", 1, Filters())[0][0] == old.id
    assert [h[0] for h in store.most_recent("u1", 2, Filters())] == [new.id, old.id]
    store.record_access("u1", [old.id], T0 + timedelta(days=20))
    store.record_access("u1", [old.id], T0 + timedelta(days=21))
    assert store.most_accessed("u1", 1, Filters())[0] == (old.id, 2.0)
    assert store.most_recently_accessed("u1", 1, Filters())[0][0] == old.id
    got = store.get("u1", old.id)
    assert got is not None and got.access_count == 2
    assert got.last_accessed_at == T0 + timedelta(days=21)


def test_links_one_hop_both_directions(store: Store) -> None:
    a, b, c, other = rec("u1", "a"), rec("u1", "b"), rec("u1", "c"), rec("u2", "x")
    put(store, a, b, c, other)
    store.add_link("u1", Link(a.id, b.id, "part_of", 0.5))
    store.add_link("u1", Link(c.id, a.id, "supersedes", 0.9))
    assert store.by_links("u1", [a.id], 10, None) == [(c.id, 0.9), (b.id, 0.5)]
    assert store.by_links("u1", [a.id], 10, ["part_of"]) == [(b.id, 0.5)]
    assert store.by_links("u2", [a.id], 10, None) == []
    assert {link.type for link in store.links("u1", a.id)} == {"part_of", "supersedes"}


def test_delete_removes_from_every_index(store: Store) -> None:
    a, b = rec("u1", "unique zebra words"), rec("u1", "other")
    put(store, a, b, seeds=[5, 6])
    store.add_link("u1", Link(a.id, b.id, "related", 1.0))
    assert store.vector_search("u1", unit(5), 1, Filters())[0][0] == a.id
    assert store.delete("u1", a.id) is True
    assert store.delete("u1", a.id) is False
    assert store.get("u1", a.id) is None
    assert store.keyword_search("u1", "zebra", 10, Filters()) == []
    assert a.id not in [h[0] for h in store.vector_search("u1", unit(5), 10, Filters())]
    assert store.links("u1", b.id) == []


def test_delete_is_scoped_to_the_owner(store: Store) -> None:
    a = rec("u1", "mine")
    put(store, a)
    assert store.delete("u2", a.id) is False
    assert store.get("u1", a.id) == a


def _knowledge(store: Store, user: str, memory_id: str) -> str:
    """Give ``user`` a row in every table beyond memories; returns the logged retrieval id."""
    store.define_relation(user, RelationType("customer", "HAS_MANY", "order"))
    store.relate_entities(user, EntityRelation("customer:acme", "HAS_MANY", "order:1", "customer", "order"))
    entry = logged(memory_id)
    store.log_retrieval(user, entry)
    store.record_feedback(user, entry.id, [memory_id], T0)
    store.save_weights(user, {"exploratory": {"semantic_similarity": 1.0}})
    return entry.id


def test_forget_user_leaves_others(store: Store) -> None:
    mine, theirs = rec("u1", "one zebra"), rec("u2", "three zebra")
    put(store, mine, rec("u1", "two"), theirs)
    store.upsert_entity("u1", Entity("customer:acme", "customer", "Acme", ("Acme Corp",)))
    mine_log, theirs_log = _knowledge(store, "u1", mine.id), _knowledge(store, "u2", theirs.id)
    assert store.forget_user("u1") == 2
    assert store.count("u1") == 0 and store.count("u2") == 1
    assert store.entities("u1") == []
    assert store.ontology("u1") == [] and store.related_entities("u1", ["customer:acme"], 10) == []
    assert store.get_retrieval("u1", mine_log) is None and store.feedback_log("u1", 10) == []
    assert store.load_weights("u1") == {}
    assert len(store.ontology("u2")) == 1 and len(store.related_entities("u2", ["customer:acme"], 10)) == 1
    assert [e.id for e in store.feedback_log("u2", 10)] == [theirs_log]
    assert store.load_weights("u2") == {"exploratory": {"semantic_similarity": 1.0}}
    assert store.keyword_search("u1", "zebra", 10, Filters()) == []
    assert store.vector_search("u1", unit(0), 10, Filters()) == []
    assert len(store.keyword_search("u2", "zebra", 10, Filters())) == 1
    assert not store.user_exists("u1") and store.user_exists("u2")


def test_replace_updates_row_and_indexes(store: Store) -> None:
    a = rec("u1", "before text")
    put(store, a, seeds=[1])
    changed = replace(a, content="after words", content_hash=content_hash("after words"), status="superseded")
    store.replace(changed, unit(2))
    assert store.get("u1", a.id) == changed
    assert store.keyword_search("u1", "before", 10, Filters()) == []
    assert store.vector_search("u1", unit(2), 10, Filters()) == []  # superseded is not active
    hits = store.vector_search("u1", unit(2), 10, Filters(statuses=("superseded",)))
    assert hits[0][0] == a.id


def test_facets_are_kept_replaced_and_erased_with_their_memory(store: Store) -> None:
    """Vectors of a memory's parts live and die with its row, and are read only by their owner."""
    a, b, theirs = rec("u1", "one. two."), rec("u1", "plain"), rec("u2", "one. two.")
    parts = np.stack([unit(20), unit(21)])
    store.put_many([a, b, theirs], np.stack([unit(1), unit(2), unit(1)]), facets=[parts, None, parts[:1]])
    found = store.facets("u1", [a.id, b.id, theirs.id, "nope"])
    assert set(found) == {a.id}
    np.testing.assert_allclose(found[a.id], parts, rtol=1e-6)
    assert set(store.facets("u2", [a.id, theirs.id])) == {theirs.id}
    # A change that keeps the text keeps its facets; new text brings its own, or none.
    store.replace(replace(a, importance=0.9), None)
    np.testing.assert_allclose(store.facets("u1", [a.id])[a.id], parts, rtol=1e-6)
    store.replace(replace(a, content="three. four."), unit(3), facets=parts[1:])
    np.testing.assert_allclose(store.facets("u1", [a.id])[a.id], parts[1:], rtol=1e-6)
    store.replace(replace(a, content="five"), unit(4))
    assert store.facets("u1", [a.id]) == {}
    store.replace(replace(a, content="six. seven."), unit(5), facets=parts)
    assert store.delete("u1", a.id)
    assert store.facets("u1", [a.id]) == {}
    store.forget_user("u2")
    assert store.facets("u2", [theirs.id]) == {}


def test_by_standing_reads_the_owners_newest_memories_with_facets(store: Store) -> None:
    """What a request reads of standing statements: only memories with facets, the owner's, newest
    first, the filters holding; a memory that loses its facets (new text) leaves the list."""
    older, plain, newer = (rec("u1", "one. two.", created_at=T0), rec("u1", "plain", created_at=T0 + timedelta(1)),
                           rec("u1", "three. four.", created_at=T0 + timedelta(2)))
    theirs = rec("u2", "five. six.", created_at=T0 + timedelta(3))
    parts = np.stack([unit(20), unit(21)])
    store.put_many([older, plain, newer, theirs], np.stack([unit(1), unit(2), unit(3), unit(4)]),
                   facets=[parts, None, parts, parts])
    assert [i for i, _ in store.by_standing("u1", 10, Filters())] == [newer.id, older.id]
    assert [i for i, _ in store.by_standing("u1", 1, Filters())] == [newer.id]
    assert [i for i, _ in store.by_standing("u2", 10, Filters())] == [theirs.id]
    assert store.by_standing("u1", 10, Filters(created_before=T0 + timedelta(hours=1))) == [
        (older.id, pytest.approx(T0.timestamp()))]
    assert store.by_standing("u1", 10, Filters(kinds=("fact",))) == []
    old_fact = rec("u1", "eight. nine.", kind="fact", status="superseded", created_at=T0 + timedelta(4))
    store.put_many([old_fact], np.stack([unit(6)]), facets=[parts])
    assert [i for i, _ in store.by_standing("u1", 10, Filters())] == [newer.id, older.id]  # active only
    assert [i for i, _ in store.by_standing("u1", 10, Filters(statuses=("superseded",), kinds=("fact",)))] == [
        old_fact.id]
    store.replace(replace(newer, content="seven"), unit(5))
    assert [i for i, _ in store.by_standing("u1", 10, Filters())] == [older.id]
    assert store.by_standing("nobody", 10, Filters()) == []


def test_put_facets_sets_only_the_owners_unchanged_memories(store: Store) -> None:
    a, b, theirs = rec("u1", "one. two."), rec("u1", "three. four."), rec("u2", "one. two.")
    put(store, a, b, theirs, seeds=[1, 2, 3])
    parts = np.stack([unit(20), unit(21)])
    assert store.put_facets("u1", [(a.id, a.content_hash, parts), (b.id, "another hash", parts),
                                   (theirs.id, theirs.content_hash, parts)]) == 1
    assert set(store.facets("u1", [a.id, b.id])) == {a.id}
    assert store.facets("u2", [theirs.id]) == {}
    np.testing.assert_allclose(store.facets("u1", [a.id])[a.id], parts, rtol=1e-6)
    assert store.put_facets("u1", [(b.id, b.content_hash, np.ones((1, DIM + 1), dtype=np.float32))]) == 0
    assert store.put_facets("u1", [(a.id, a.content_hash, parts[:1])]) == 0  # it has facets already
    # ... unless they are replaced, still only while the content is what they were read from.
    assert store.put_facets("u1", [(a.id, "another hash", parts[:1])], replace=True) == 0
    assert store.put_facets("u1", [(a.id, a.content_hash, parts[:1])], replace=True) == 1
    assert len(store.facets("u1", [a.id])[a.id]) == 1
    assert store.put_facets("u1", [(theirs.id, theirs.content_hash, parts[:1])], replace=True) == 0  # not theirs
    assert store.put_facets("u1", []) == 0


def test_facets_of_another_width_are_refused(store: Store) -> None:
    a = rec("u1", "one. two.")
    with pytest.raises(StoreError):
        store.put_many([a], np.stack([unit(1)]), facets=[np.ones((2, DIM + 1), dtype=np.float32)])
    assert store.get("u1", a.id) is None


def test_embedding_cache_and_model_binding(store: Store) -> None:
    store.bind_embedder("model-a", DIM)
    a = rec("u1", "cached text")
    put(store, a, seeds=[3])
    cached = store.cached_vectors("u1", "model-a", [a.content_hash, "nope"])
    assert set(cached) == {a.content_hash}
    np.testing.assert_allclose(cached[a.content_hash], unit(3), rtol=1e-6)
    # Never across users (an oracle: "did someone store this text?"), never a speaker's message.
    assert store.cached_vectors("u2", "model-a", [a.content_hash]) == {}
    spoken = replace(rec("u1", "spoken text"), role="Priya")
    put(store, spoken, seeds=[4])
    assert store.cached_vectors("u1", "model-a", [spoken.content_hash]) == {}
    with pytest.raises(EmbedderMismatch):
        store.bind_embedder("model-b", DIM)


def test_entities_round_trip(store: Store) -> None:
    e = Entity("customer:acme", "customer", "Acme Corporation", ("Acme", "Acme Corp"))
    store.upsert_entity("u1", e)
    assert store.entities("u1") == [e]
    assert store.entities("u2") == []


def test_set_entities_changes_the_ids_alone(store: Store) -> None:
    named = rec("u1", "Acme Corp ordered monitors", entities=("mention:acme corp", "project:x"))
    other = rec("u2", "Acme Corp again", entities=("mention:acme corp",))
    put(store, named, other)
    setter = store.set_entities  # both bundled stores have it; another Store is re-tagged by replace()
    changes = [(named.id, named.content_hash, ("customer:acme", "project:x", "customer:acme")),
               ("no-such-id", "h", ("x:y",))]
    assert setter("u1", changes) == 1
    assert store.get("u1", named.id) == replace(named, entities=("customer:acme", "project:x"))
    assert store.by_entities("u1", ["customer:acme"], 10, Filters()) == [(named.id, 1.0)]
    assert store.by_entities("u1", ["mention:acme corp"], 10, Filters()) == []
    assert store.by_entities("u2", ["mention:acme corp"], 10, Filters()) == [(other.id, 1.0)]  # another user's stay
    assert setter("u2", [(named.id, named.content_hash, ("x:y",))]) == 0  # one user cannot re-tag another's
    # Ids read from a text that has changed since are not written: the edit tagged it anew.
    assert setter("u1", [(named.id, "an older text's hash", ("x:y",))]) == 0
    assert store.get("u1", named.id).entities == ("customer:acme", "project:x")
    with pytest.raises(ValidationError, match="entities"):
        setter("u1", [(named.id, named.content_hash, "customer:acme")])
    assert [e.event for e in store.history("u1", named.id)] == ["add"]


def test_list_and_stats(store: Store) -> None:
    put(store, rec("u1", "a", created_at=T0), rec("u1", "b", created_at=T0 + timedelta(1)), rec("u2", "c"))
    listed = store.list("u1", Filters(), limit=10)
    assert [r.content for r in listed] == ["b", "a"]
    assert store.list("u1", Filters(), limit=1, offset=1)[0].content == "a"
    stats = store.stats()
    assert stats["memories"] == 3 and stats["users"] == 2


# -- entity relations and ontology ----------------------------------------------------------------------
def test_ontology_round_trip_and_idempotence(store: Store) -> None:
    has_many = RelationType("customer", "HAS_MANY", "order")
    supplies = RelationType("supplier", "SUPPLIES", "product")
    for edge in (supplies, has_many, has_many):
        store.define_relation("u1", edge)
    assert store.ontology("u1") == [has_many, supplies]
    assert store.ontology("u2") == []


def test_related_entities_follow_only_declared_relations(store: Store) -> None:
    store.define_relation("u1", RelationType("customer", "HAS_MANY", "order"))
    allowed = EntityRelation("customer:acme", "HAS_MANY", "order:1", "customer", "order")
    undeclared = EntityRelation("customer:acme", "KNOWS", "person:bo", "customer", "person")
    for rel in (allowed, undeclared, allowed):
        store.relate_entities("u1", rel)
    assert store.related_entities("u1", ["customer:acme"], 10) == [allowed]
    assert store.related_entities("u1", ["order:1"], 10) == []  # one direction: from the query entity out
    assert store.related_entities("u2", ["customer:acme"], 10) == []
    store.define_relation("u2", RelationType("customer", "HAS_MANY", "order"))
    assert store.related_entities("u2", ["customer:acme"], 10) == []  # u1's relation is not u2's


def test_related_entities_limit_applies_per_entity(store: Store) -> None:
    store.define_relation("u1", RelationType("customer", "HAS_MANY", "order"))
    for customer in ("customer:a", "customer:b"):
        for i in range(12):
            store.relate_entities("u1", EntityRelation(customer, "HAS_MANY", f"order:{customer[-1]}{i:02d}",
                                                       "customer", "order"))
    related = store.related_entities("u1", ["customer:a", "customer:b", "customer:none"], 10)
    assert [sum(r.from_id == c for r in related) for c in ("customer:a", "customer:b")] == [10, 10]
    assert all(r.to_id.startswith(f"order:{r.from_id[-1]}") for r in related)
    assert store.related_entities("u1", [], 10) == []


# -- retrieval log, feedback and tuned weights -----------------------------------------------------------
def logged(*ids: str, at: datetime = T0, rid: str | None = None) -> LoggedRetrieval:
    items = tuple(
        LoggedItem(i, "fact", {"semantic_similarity": 0.5 + n / 10, "entity_overlap": 1.0, "reinforcement": 0.0})
        for n, i in enumerate(ids)
    )
    return LoggedRetrieval(
        id=rid or new_id(), query="What did Acme order?", category="factual", strategy="factual_entity_focused",
        created_at=at, items=items, settings={"searchType": "hybrid", "keywordWeight": 0.25, "fusion": "signals"},
    )


def test_retrieval_log_round_trip_is_scoped(store: Store) -> None:
    entry = logged("m1", "m2")
    store.log_retrieval("u1", entry)
    store.log_retrieval("u1", replace(entry, query="changed"))  # the first log of an id stands
    assert store.get_retrieval("u1", entry.id) == entry
    assert store.get_retrieval("u2", entry.id) is None
    assert store.get_retrieval("u1", "unknown") is None


def test_feedback_counts_each_use_once_and_reinforces(store: Store) -> None:
    a, b, c = rec("u1", "a"), rec("u1", "b"), rec("u1", "c")
    put(store, a, b, c)
    first, second, unused = logged(a.id, b.id, at=T0), logged(a.id, c.id, at=T0 + timedelta(1)), logged(b.id)
    for entry in (first, second, unused):
        store.log_retrieval("u1", entry)
    assert store.record_feedback("u1", first.id, [a.id, b.id, a.id], T0 + timedelta(2)) == 2
    assert store.record_feedback("u1", first.id, [a.id], T0 + timedelta(3)) == 0  # repeated: not a new use
    assert store.record_feedback("u1", second.id, [a.id], T0 + timedelta(4)) == 1
    got = {r.id: r for r in store.fetch("u1", [a.id, b.id, c.id])}
    assert (got[a.id].access_count, got[b.id].access_count, got[c.id].access_count) == (2, 1, 0)
    assert got[a.id].last_accessed_at == T0 + timedelta(4)
    log = store.feedback_log("u1", 10)
    assert [e.id for e in log] == [first.id, second.id]  # oldest first, only those with feedback
    assert log[0].used == tuple(sorted([a.id, b.id])) and log[1].used == (a.id,)
    assert [e.id for e in store.feedback_log("u1", 1)] == [second.id]  # the newest ``limit``
    assert store.feedback_log("u2", 10) == []
    fetched = store.get_retrieval("u1", first.id)
    assert fetched is not None and fetched.used == tuple(sorted([a.id, b.id]))


def test_feedback_does_not_touch_another_users_memory(store: Store) -> None:
    theirs = rec("u2", "theirs")
    put(store, theirs)
    entry = logged(theirs.id)
    store.log_retrieval("u1", entry)
    store.record_feedback("u1", entry.id, [theirs.id], T0)
    got = store.get("u2", theirs.id)
    assert got is not None and got.access_count == 0


def test_tuned_weights_replace_and_are_scoped(store: Store) -> None:
    first = {"procedural": {"semantic_similarity": 0.6, "reinforcement": 0.4}, "analytical": {"importance": 1.0}}
    store.save_weights("u1", first)
    assert store.load_weights("u1") == first
    store.save_weights("u1", {"analytical": {"importance": 0.5, "temporal_relevance": 0.5}})
    assert store.load_weights("u1") == {"analytical": {"importance": 0.5, "temporal_relevance": 0.5}}
    assert store.load_weights("u2") == {}
    store.save_weights("u1", {})
    assert store.load_weights("u1") == {}


def test_delete_drops_the_logged_retrievals_that_returned_the_memory(store: Store) -> None:
    victim, kept = rec("u1", "victim"), rec("u1", "kept")
    put(store, victim, kept)
    with_victim, without = logged(victim.id, kept.id), logged(kept.id)
    mine_elsewhere = logged(victim.id)
    for entry in (with_victim, without):
        store.log_retrieval("u1", entry)
        store.record_feedback("u1", entry.id, [kept.id], T0)
    store.log_retrieval("u2", mine_elsewhere)  # same id under another user: not u1's to delete
    assert store.delete("u1", victim.id)
    assert store.get_retrieval("u1", with_victim.id) is None
    assert [e.id for e in store.feedback_log("u1", 10)] == [without.id]
    assert store.get_retrieval("u2", mine_elsewhere.id) is not None


def test_session_neighbors_are_the_turns_around_a_memory(store: Store) -> None:
    store.bind_embedder("model-a", DIM)
    turns = [replace(rec("u1", f"turn {i}", role="Jon" if i % 2 else "Gina"), session_id="s1",
                     created_at=T0 + timedelta(minutes=i // 2)) for i in range(6)]
    # No turns: a fact, a note without a role, an archived message (all in the session, between turns)
    asides = [replace(rec("u1", "a fact", kind="fact"), session_id="s1", created_at=T0 + timedelta(seconds=30)),
              replace(rec("u1", "a note"), session_id="s1", created_at=T0 + timedelta(seconds=90)),
              replace(rec("u1", "archived", role="Jon", status="archived"), session_id="s1",
                      created_at=T0 + timedelta(seconds=75))]
    other = replace(rec("u1", "other session", role="Jon"), session_id="s2")
    foreign = replace(rec("u2", "another user's turn", role="Jon"), session_id="s1")
    for i, record in enumerate([*turns, *asides, other, foreign]):
        put(store, record, seeds=[i])
    # Two turns at each instant: their order is the id's (ids sort by creation), as they were written.
    ordered = sorted(turns, key=lambda r: (r.created_at, r.id))
    got = store.session_neighbors("u1", [t.id for t in ordered] + [a.id for a in asides] + [other.id, foreign.id])
    assert got[ordered[0].id] == (ordered[1].id,)
    for at in range(1, 5):
        assert got[ordered[at].id] == (ordered[at - 1].id, ordered[at + 1].id)
    assert got[ordered[5].id] == (ordered[4].id,)
    assert got[other.id] == ()
    assert asides[0].id not in got and asides[1].id not in got  # no turns
    assert got[asides[2].id] == (ordered[3].id, ordered[4].id)  # asked about, it has turns next to it
    assert foreign.id not in got  # another user's


def test_messages_without_a_session_are_one_stream_of_turns_per_agent(store: Store) -> None:
    store.bind_embedder("model-a", DIM)
    at = [T0 + timedelta(minutes=i) for i in range(6)]
    first, second, third = (rec("u1", f"turn {i}", role="user", created_at=at[2 * i]) for i in range(3))
    between = [rec("u1", "a fact said between", kind="fact", created_at=at[1]),
               rec("u1", "a note without a role", created_at=at[1]),
               replace(rec("u1", "a turn of a session", role="user", created_at=at[3]), session_id="s1"),
               rec("u1", "another agent's reply", role="assistant", agent_id="concierge", created_at=at[3]),
               rec("u1", "an archived turn", role="user", status="archived", created_at=at[3]),
               rec("u1", "a tool's output", role="Tool", created_at=at[3]),
               rec("u2", "another user's turn", role="user", created_at=at[3])]
    fourth = rec("u1", "turn 3", role="assistant", created_at=at[4])  # the third's instant: the id orders them
    put(store, first, second, third, fourth, *between)
    got = store.session_neighbors("u1", [first.id, second.id, third.id, fourth.id, between[0].id, between[1].id])
    assert got[first.id] == (second.id,)
    assert got[second.id] == (first.id, third.id)
    assert got[third.id] == (second.id, fourth.id) and got[fourth.id] == (third.id,)
    assert between[0].id not in got and between[1].id not in got  # a fact, a note: no turns
    assert store.session_neighbors("u1", [between[3].id]) == {between[3].id: ()}  # the concierge's own stream
    assert store.session_neighbors("u2", [first.id]) == {}  # u1's turns are not u2's to read


def test_session_neighbors_answer_every_id_however_many(store: Store) -> None:
    store.bind_embedder("model-a", DIM)
    # More ids than one statement sends on either backend (they were cut at the first 1,000).
    turns = [replace(rec("u1", f"turn {i}", role="user"), session_id="s1", created_at=T0 + timedelta(seconds=i))
             for i in range(1_205)]
    vectors = np.stack([unit(i % 7) for i in range(len(turns))])
    store.put_many(turns, vectors)
    got = store.session_neighbors("u1", [t.id for t in reversed(turns)])
    assert len(got) == len(turns)
    assert got[turns[-1].id] == (turns[-2].id,)
    assert got[turns[600].id] == (turns[599].id, turns[601].id)


def test_substring_search_finds_any_term_in_every_searched_field_newest_first(store: Store) -> None:
    day = timedelta(days=1)
    content = rec("u1", "Invoice for ACME Corp", created_at=T0)
    fact = rec("u1", "a fact", kind="fact", subject="customer:globex", predicate="prefers", object="NET30",
               created_at=T0 + day)
    procedure = rec("u1", "a procedure", kind="procedure", trigger="on refund", action="reissue the bill",
                    created_at=T0 + 2 * day)
    tagged = rec("u1", "tagged", tags=("billing",), created_at=T0 + 3 * day)
    nested = rec("u1", "nested", metadata={"source": {"via": ["Initech mail"]}, "n": 5, "q": 'say "hi" \\o/'},
                 created_at=T0 + 4 * day)
    theirs = rec("u2", "ACME again", created_at=T0 + 5 * day)
    put(store, content, fact, procedure, tagged, nested, theirs)

    def ids(*terms: str, n: int = 10, filters: Filters | None = None) -> list[str]:
        return [h[0] for h in store.substring_search("u1", list(terms), n, filters or Filters())]

    assert ids("acm") == [content.id]  # a substring, case ignored, only the user's own
    assert ids("lobe") == [fact.id] and ids("net3") == [fact.id] and ids("refers") == [fact.id]
    assert ids("refun") == [procedure.id] and ids("eissue") == [procedure.id]
    assert ids("illin") == [tagged.id] and ids("nitech m") == [nested.id]
    assert ids("acm", "illin", "nitech") == [nested.id, tagged.id, content.id]  # any term, newest first
    assert ids("acm", "illin", "nitech", n=2) == [nested.id, tagged.id]
    assert ids('"hi" \\o') == [nested.id]  # as written, not as JSON escapes it
    assert ids("source") == [] and ids("via") == []  # metadata keys are not searched text
    assert ids("tagged", filters=Filters(kinds=("fact",))) == []
    [(_, when)] = store.substring_search("u1", ["tagged"], 5, Filters())
    assert when == pytest.approx((T0 + 3 * day).timestamp())
    for hostile in ['"acm', "a%c", "ac_", "x\\y", "NEAR(a b)", "col:acme"]:
        assert ids(hostile) == []  # quotes and wildcards are plain characters
    with pytest.raises(ValidationError):
        store.substring_search("u1", ["ac"], 10, Filters())


def test_substring_search_follows_writes(store: Store) -> None:
    r = rec("u1", "the zebra escaped")
    put(store, r)
    assert [h[0] for h in store.substring_search("u1", ["zebr"], 10, Filters())] == [r.id]
    store.replace(replace(r, content="the lion escaped", tags=("striped",)), unit(2))
    assert store.substring_search("u1", ["zebr"], 10, Filters()) == []
    assert [h[0] for h in store.substring_search("u1", ["ripe"], 10, Filters())] == [r.id]
    store.delete("u1", r.id)
    assert store.substring_search("u1", ["lion", "ripe"], 10, Filters()) == []
