"""EngramStore against the real langgraph package: LangGraph's documented store semantics with the real
embedder, on a SQLite file and on PostgreSQL, in both namespace mappings (first label as user, one user)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp

from engram import Memory
from engram.ext import Embedder
from engram.integrations.filters import split_filter
from engram.integrations.langgraph import MARK, EngramStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def memory(request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    if request.param == "postgres":  # the fixture owns (and closes) the PostgreSQL store
        yield Memory(store=request.getfixturevalue("postgres_store"), embedder=embedder)
        return
    with Memory(tmp_path / "engram.db", embedder=embedder) as m:
        yield m


@pytest.fixture(params=["label-user", "fixed-user"])
def store(request: pytest.FixtureRequest, memory: Memory) -> EngramStore:
    return EngramStore(memory) if request.param == "label-user" else EngramStore(memory, user_id="tenant")


FACTS = {
    "diet": "Alice is vegetarian and never eats meat or fish",
    "job": "Alice works night shifts as a nurse at the city hospital",
    "pet": "Alice has a grey cat called Pixel",
}


def test_put_get_update_delete(store: EngramStore) -> None:
    ns = ("alice", "memories")
    assert store.get(ns, "diet") is None
    store.put(ns, "diet", {"text": FACTS["diet"], "confidence": 0.9})
    first = store.get(ns, "diet")
    assert isinstance(first, Item) and not isinstance(first, SearchItem)
    assert (first.namespace, first.key) == (ns, "diet")
    assert first.value == {"text": FACTS["diet"], "confidence": 0.9}
    assert first.created_at == first.updated_at and first.created_at.tzinfo is not None

    time.sleep(0.01)
    store.put(ns, "diet", {"text": "Alice started eating fish again"})
    second = store.get(ns, "diet")
    assert second is not None
    assert second.value == {"text": "Alice started eating fish again"}  # replaced, not merged
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert [i.key for i in store.search(ns)] == ["diet"]  # one item per key, not a second memory

    store.delete(ns, "diet")
    assert store.get(ns, "diet") is None
    store.put(ns, "pet", {"text": FACTS["pet"]})
    store.put(ns, "pet", None)  # type: ignore[arg-type]  # a None value deletes, as LangGraph's PutOp says
    assert store.get(ns, "pet") is None
    assert store.search(ns) == []


def test_same_key_in_two_namespaces_are_two_items(store: EngramStore) -> None:
    store.put(("alice", "memories"), "k", {"text": "in alice's memories"})
    store.put(("alice", "notes"), "k", {"text": "in alice's notes"})
    store.put(("bob", "memories"), "k", {"text": "in bob's memories"})
    got = [store.get(ns, "k") for ns in [("alice", "memories"), ("alice", "notes"), ("bob", "memories")]]
    texts = [g.value["text"] for g in got if g is not None]
    assert texts == ["in alice's memories", "in alice's notes", "in bob's memories"]
    store.delete(("alice", "notes"), "k")
    assert store.get(("alice", "notes"), "k") is None
    assert store.get(("alice", "memories"), "k") is not None


def test_query_search_ranks_by_meaning_within_the_prefix(store: EngramStore) -> None:
    for key, text in FACTS.items():
        store.put(("alice", "memories"), key, {"text": text})
    store.put(("bob", "memories"), "diet", {"text": "Bob is vegetarian too"})
    results = store.search(("alice",), query="what food should I cook for her dinner?")
    assert results[0].key == "diet"
    assert {r.key for r in results} == set(FACTS)
    assert all(r.namespace == ("alice", "memories") for r in results)
    scores = [r.score for r in results]
    assert all(isinstance(s, float) for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert store.search(("alice",), query="What pet does Alice have?")[0].key == "pet"
    # A prefix that names nothing finds nothing, even with a query every item would match.
    assert store.search(("carol",), query="vegetarian") == []


def test_prefix_search_covers_deeper_namespaces_only(store: EngramStore) -> None:
    store.put(("a", "b"), "1", {"text": "one"})
    store.put(("a", "b", "c"), "2", {"text": "two"})
    store.put(("a", "bc"), "3", {"text": "three"})
    store.put(("x",), "4", {"text": "four"})
    assert {i.key for i in store.search(("a", "b"))} == {"1", "2"}
    assert {i.key for i in store.search(("a", "b", "c"))} == {"2"}
    assert {i.key for i in store.search(("a",))} == {"1", "2", "3"}
    assert {i.key for i in store.search(())} == {"1", "2", "3", "4"}  # the whole store, every user
    assert {i.key for i in store.search((), query="four")} == {"1", "2", "3", "4"}
    assert store.search((), query="four")[0].key == "4"


def test_search_without_query_is_newest_update_first_and_pages(store: EngramStore) -> None:
    ns = ("alice", "log")
    for i in range(7):
        store.put(ns, f"k{i}", {"text": f"entry number {i}", "n": i})
    store.put(ns, "k2", {"text": "entry number 2, edited", "n": 2})
    keys = [i.key for i in store.search(ns, limit=100)]
    assert keys == ["k2", "k6", "k5", "k4", "k3", "k1", "k0"]
    assert all(i.score is None for i in store.search(ns))
    assert [i.key for i in store.search(ns, limit=3, offset=2)] == keys[2:5]
    assert store.search(ns, limit=3, offset=10) == []
    assert len(store.search(ns)) == 7  # LangGraph's default limit is 10


def test_query_search_pages(store: EngramStore) -> None:
    ns = ("alice", "memories")
    for i in range(6):
        store.put(ns, f"k{i}", {"text": f"Alice visited museum number {i} in Paris"})
    everything = [i.key for i in store.search(ns, query="museums in Paris", limit=6)]
    assert sorted(everything) == [f"k{i}" for i in range(6)]
    assert [i.key for i in store.search(ns, query="museums in Paris", limit=2, offset=3)] == everything[3:5]


def test_filters_follow_langgraph_semantics(store: EngramStore) -> None:
    ns = ("alice", "memories")
    store.put(ns, "diet", {"text": FACTS["diet"], "type": "preference", "rank": 1, "meta": {"source": "chat"}})
    store.put(ns, "job", {"text": FACTS["job"], "type": "fact", "rank": 5, "meta": {"source": "form"}})
    store.put(ns, "pet", {"text": FACTS["pet"], "type": "fact", "rank": 3, "tags": ["cat", "home"]})

    def keys(**kwargs: object) -> set[str]:
        return {i.key for i in store.search(ns, **kwargs)}  # type: ignore[arg-type]

    assert keys(filter={"type": "fact"}) == {"job", "pet"}
    assert keys(filter={"type": "fact", "rank": 3}) == {"pet"}
    assert keys(filter={"type": {"$eq": "preference"}}) == {"diet"}
    assert keys(filter={"type": {"$ne": "fact"}}) == {"diet"}
    assert keys(filter={"rank": {"$gt": 1}}) == {"job", "pet"}
    assert keys(filter={"rank": {"$gte": 3, "$lt": 5}}) == {"pet"}
    assert keys(filter={"rank": {"$lte": 1}}) == {"diet"}
    assert keys(filter={"meta": {"source": "form"}}) == {"job"}
    assert keys(filter={"tags": ["cat", "home"]}) == {"pet"}
    assert keys(filter={"tags": ["cat"]}) == set()
    assert keys(filter={"missing": None}) == {"diet", "job", "pet"}
    assert keys(filter={"type": "nope"}) == set()
    # With a query: the filter narrows what retrieval ranks, so the best match of the rest comes first.
    found = store.search(ns, query="what does she eat?", filter={"type": "fact"})
    assert {i.key for i in found} == {"job", "pet"}
    found = store.search(ns, query="what does she eat?", filter={"rank": {"$lt": 4}})
    assert found[0].key == "diet" and {i.key for i in found} == {"diet", "pet"}


def test_equality_on_plain_top_level_fields_is_what_the_store_checks() -> None:
    conditions = {"type": "fact", "t": {"$eq": True}, "rank": {"$gt": 1}, "odd key": "x", "meta": {"a": 1},
                  "big": 2**70, "nan": float("nan"), MARK: "x", "none": None}
    pushed, remaining = split_filter(conditions, MARK)
    assert pushed == {"type": "fact", "t": True, "none": None}
    assert set(remaining) == {"rank", "odd key", "meta", "big", "nan", MARK}


def test_filter_on_field_names_the_store_cannot_index(store: EngramStore) -> None:
    ns = ("alice", "memories")
    store.put(ns, "a", {"text": "first", "odd key.with dots": "x"})
    store.put(ns, "b", {"text": "second", "odd key.with dots": "y"})
    assert [i.key for i in store.search(ns, filter={"odd key.with dots": "y"})] == ["b"]
    assert [i.key for i in store.search(ns, query="second", filter={"odd key.with dots": "y"})] == ["b"]


NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


def test_list_namespaces_prefix_suffix_depth_and_pages(store: EngramStore) -> None:
    for i, ns in enumerate(NAMESPACES):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    store.put(("a", "b", "c"), "second", {"data": "a second item, one namespace"})
    assert store.list_namespaces() == sorted(NAMESPACES)
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"),
                                                        ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("*", "users")) == [("admin", "users", "789")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    store.delete(("users", "123"), "id_6")
    assert store.list_namespaces(prefix=("users",)) == [("users", "456", "settings")]


def test_list_namespaces_pagination_over_many(store: EngramStore) -> None:
    store.batch([PutOp(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": f"v{i}"}) for i in range(20)])
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)
    ]
    assert len(store.list_namespaces(prefix=("namespace",), limit=100)) == 20


def test_invalid_namespaces_are_refused(store: EngramStore) -> None:
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", doc)
    # Ops handed to batch skip BaseStore's checks; a label with a dot must still not pass.
    for op in [PutOp(("a.b",), "k", doc), PutOp((), "k", doc), GetOp(("a.b",), "k"), SearchOp(("a.b",))]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([op])
    # As in InMemoryStore, the reserved root label is only refused by the public put.
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    got = store.get(("langgraph", "foo"), "bar")
    assert got is not None and got.value == doc


def test_values_keep_their_shape_and_the_reserved_key_is_refused(store: EngramStore) -> None:
    value = {"text": "nested", "list": [1, 2.5, "x", None, True], "obj": {"a": {"b": ["c"]}}, "empty": {}}
    store.put(("alice",), "k", value)
    got = store.get(("alice",), "k")
    assert got is not None and got.value == value
    store.put(("alice",), "no-text", {"n": 1})
    assert store.get(("alice",), "no-text") is not None
    with pytest.raises(ValueError, match=MARK):
        store.put(("alice",), "bad", {MARK: "mine"})


def test_batch_runs_ops_in_order(store: EngramStore) -> None:
    ns = ("alice", "memories")
    results = store.batch([
        PutOp(ns, "k", {"text": "v1"}),
        PutOp(ns, "k", {"text": "v2"}),  # the later put of a key wins
        GetOp(ns, "k"),
        SearchOp(("alice",), query="v2"),
        PutOp(ns, "k", None),
        GetOp(ns, "k"),
        ListNamespacesOp(),
    ])
    assert results[0] is None and results[1] is None
    assert isinstance(results[2], Item) and results[2].value == {"text": "v2"}
    assert isinstance(results[3], list) and [i.key for i in results[3]] == ["k"]
    assert results[5] is None
    assert results[6] == []


def test_index_fields_choose_what_retrieval_reads(memory: Memory) -> None:
    store = EngramStore(memory, fields=["summary"])
    store.put(("alice",), "trip", {"summary": "Trip to Lisbon in May", "raw": "zzz qqq"})
    store.put(("alice",), "call", {"summary": "Call with the bank", "raw": "Lisbon"}, index=["raw"])
    records = {r.metadata[MARK]["key"]: r for r in memory.list(user_id="alice")}
    assert records["trip"].content == "Trip to Lisbon in May"
    assert records["call"].content == "Lisbon"


def test_items_are_engram_memories_of_the_first_label(memory: Memory) -> None:
    store = EngramStore(memory)
    store.put(("alice", "memories"), "diet", {"text": FACTS["diet"]})
    result = memory.retrieve("Does Alice eat meat?", user_id="alice")
    assert result.memories and result.memories[0].content == FACTS["diet"]
    assert memory.retrieve("Does Alice eat meat?", user_id="memories").memories == ()
    # A memory added without the store is not an item, and never shows in the store's answers.
    memory.add("Alice said hello", user_id="alice")
    assert [i.key for i in store.search(("alice",))] == ["diet"]
    assert store.list_namespaces() == [("alice", "memories")]
    assert memory.forget_user("alice") == 2
    assert store.get(("alice", "memories"), "diet") is None


def test_items_persist_across_processes(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "p.db", embedder=embedder) as m:
        EngramStore(m).put(("alice",), "k", {"text": "kept on disk"})
    with Memory(tmp_path / "p.db", embedder=embedder) as m:
        got = EngramStore(m).get(("alice",), "k")
    assert got is not None and got.value == {"text": "kept on disk"}


def test_long_namespaces_still_search_by_prefix(store: EngramStore) -> None:
    long_label = "x" * 150
    ns = ("alice", long_label, "deeper")
    store.put(ns, "k", {"text": "deep"})
    store.put(("alice", "y" * 150), "other", {"text": "elsewhere"})
    assert [i.key for i in store.search(("alice", long_label))] == ["k"]
    assert [i.key for i in store.search(ns, query="deep")] == ["k"]
    assert store.list_namespaces(prefix=("alice", long_label)) == [ns]


def test_async_methods_batch_and_leave_the_loop_free(store: EngramStore) -> None:
    async def scenario() -> tuple[int, list[object]]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                await asyncio.sleep(0.005)
                ticks += 1

        task = asyncio.create_task(ticker())
        # Fifty puts embed fifty texts: long enough that a blocking call would stop the ticker.
        await store.abatch([PutOp(("alice", "notes"), f"n{i}", {"text": f"note {i} about topic {i % 7}"})
                            for i in range(50)])
        results = await asyncio.gather(
            store.aget(("alice", "notes"), "n3"),
            store.asearch(("alice",), query="topic 3", limit=3),
            store.alist_namespaces(prefix=("alice",)),
        )
        await store.aput(("alice", "notes"), "n3", {"text": "replaced"})
        await store.adelete(("alice", "notes"), "n4")
        results += [await store.aget(("alice", "notes"), "n3"), await store.aget(("alice", "notes"), "n4")]
        done.set()
        await task
        return ticks, results

    ticks, (got, found, namespaces, replaced, deleted) = asyncio.run(scenario())
    assert ticks >= 5  # the loop kept running while the engine worked in a thread
    assert isinstance(got, Item) and got.value["text"] == "note 3 about topic 3"
    assert isinstance(found, list) and len(found) == 3
    assert all(i.value["text"].endswith("about topic 3") for i in found)
    assert namespaces == [("alice", "notes")]
    assert isinstance(replaced, Item) and replaced.value == {"text": "replaced"}
    assert deleted is None


def test_overdeep_namespaces_are_refused(store: EngramStore) -> None:
    with pytest.raises(ValueError, match="deeper"):
        store.put(tuple(f"l{i}" for i in range(100)), "k", {"text": "x"})
    store.put(tuple(f"l{i}" for i in range(99)), "k", {"text": "x"})


def test_two_stores_for_two_users_share_one_file(memory: Memory) -> None:
    acme, globex = EngramStore(memory, user_id="acme"), EngramStore(memory, user_id="globex")
    acme.put(("memories",), "terms", {"text": "Acme pays NET30"})
    globex.put(("memories",), "terms", {"text": "Globex pays upfront"})
    got = [s.get(("memories",), "terms") for s in (acme, globex)]
    assert [g.value["text"] for g in got if g is not None] == ["Acme pays NET30", "Globex pays upfront"]
    assert [i.value["text"] for i in acme.search((), query="payment terms")] == ["Acme pays NET30"]


def test_concurrent_puts_of_one_new_key_leave_one_item(store: EngramStore) -> None:
    async def race() -> None:
        await asyncio.gather(*(store.aput(("alice",), "k", {"text": f"version {i}"}) for i in range(8)))

    asyncio.run(race())
    items = store.search(("alice",))
    assert [i.key for i in items] == ["k"]
    assert items[0].value["text"].startswith("version ")
