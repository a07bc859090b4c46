"""LangGraph's and LangChain's own conventions on Engram's adapters, against the real packages:
a store built as LangGraph's stores are (``index=``, ``ttl=``), ``put(..., index=False)``, a
retriever's ``search_kwargs`` and a remote memory, and a wrong argument refused at construction."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from engram import Memory, RetrievalConfig
from engram.client import EngramClient
from engram.errors import ConfigError
from engram.ext import Embedder
from engram.integrations.langchain import EngramRetriever
from engram.integrations.langgraph import MARK, EngramStore
from tests.service import harness, running


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "engram.db", embedder=embedder) as m:
        yield m


def test_a_store_takes_langgraph_index_config(memory: Memory) -> None:
    with pytest.warns(UserWarning, match="embedder"):
        store = EngramStore(memory, index={"dims": 1536, "embed": "openai:text-embedding-3-small", "fields": ["text"]})
    assert store.fields == ["text"]
    store.put(("alice",), "diet", {"text": "Alice is vegetarian", "note": "zebra crossing"})
    assert store.memory.get(_id(store, ("alice",), "diet"), user_id="alice").content == "Alice is vegetarian"
    assert EngramStore(memory, index={"fields": ["note"]}).fields == ["note"]
    with pytest.raises(ValueError, match="unknown index config keys"):
        EngramStore(memory, index={"field": ["text"]})
    with pytest.raises(ValueError, match="once"):
        EngramStore(memory, fields=["a"], index={"fields": ["b"]})


def test_a_wrong_first_argument_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"EngramStore\(Memory\('agent.db'\)\)"):
        EngramStore(str(tmp_path / "path.db"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Memory or EngramClient"):
        EngramRetriever("path.db", user_id="maya")
    with pytest.raises(ValueError, match="ttl config"):
        EngramStore(Memory(tmp_path / "x.db"), ttl={"default": 5})  # type: ignore[typeddict-unknown-key]


def test_items_put_with_index_false_are_not_found_by_a_query(memory: Memory) -> None:
    ours, theirs = EngramStore(memory), InMemoryStore()
    for store in (ours, theirs):
        store.put(("alice",), "diet", {"text": "Alice is vegetarian and never eats meat"})
        store.put(("alice",), "secret", {"text": "Alice eats meat at night, vegetarian by day"}, index=False)
    # LangGraph's store without an index config ranks nothing: compare what a query returns first.
    found = ours.search(("alice",), query="does Alice eat meat?", limit=1)
    assert [i.key for i in found] == ["diet"] and found[0].score is not None
    # A page longer than the ranked items is filled with the unindexed ones, unscored (as LangGraph does).
    filled = ours.search(("alice",), query="does Alice eat meat?", limit=5)
    assert [(i.key, i.score is None) for i in filled] == [("diet", False), ("secret", True)]
    assert ours.get(("alice",), "secret") is not None
    assert {i.key for i in ours.search(("alice",))} == {i.key for i in theirs.search(("alice",))} == {"diet", "secret"}
    ours.put(("alice",), "secret", {"text": "Alice eats meat at night, vegetarian by day"})  # indexed now
    assert {i.key for i in ours.search(("alice",), query="does Alice eat meat?", limit=2)
            if i.score is not None} == {"diet", "secret"}


def test_ttl_expires_items_refreshes_on_read_and_sweeps(memory: Memory) -> None:
    store = EngramStore(memory, ttl={"default_ttl": 60, "refresh_on_read": True})
    assert store.supports_ttl
    store.put(("alice",), "hour", {"text": "Alice's parcel tracking number"})  # default_ttl: an hour
    store.put(("alice",), "kept", {"text": "Alice's parcel address"}, ttl=None)
    store.put(("alice",), "soon", {"text": "Alice's parcel arrives today"}, ttl=0.03)  # 1.8 s
    mark = memory.get(_id(store, ("alice",), "hour"), user_id="alice").metadata[MARK]
    assert mark["ttl"] == 60
    assert abs(datetime.fromisoformat(mark["expires_at"]) - (datetime.now(UTC) + timedelta(hours=1))) < timedelta(
        seconds=30)
    assert "expires_at" not in memory.get(_id(store, ("alice",), "kept"), user_id="alice").metadata[MARK]
    assert store.get(("alice",), "soon", refresh_ttl=False) is not None
    time.sleep(2)
    assert store.get(("alice",), "soon") is None
    assert {i.key for i in store.search(("alice",))} == {"hour", "kept"}
    assert {i.key for i in store.search(("alice",), query="parcel", limit=5)} == {"hour", "kept"}
    before = memory.get(_id(store, ("alice",), "hour"), user_id="alice").metadata[MARK]["expires_at"]
    time.sleep(0.01)
    store.get(("alice",), "hour")
    after = memory.get(_id(store, ("alice",), "hour"), user_id="alice").metadata[MARK]["expires_at"]
    assert after > before  # a read starts the time to live again
    store.get(("alice",), "hour", refresh_ttl=False)
    assert memory.get(_id(store, ("alice",), "hour"), user_id="alice").metadata[MARK]["expires_at"] == after
    assert store.sweep() == 1
    assert len(memory.list(user_id="alice")) == 2
    with pytest.raises(ValueError, match="positive number of minutes"):
        store.batch([PutOp(("alice",), "bad", {"text": "x"}, ttl=-1)])


def test_retriever_search_kwargs_are_langchains(memory: Memory) -> None:
    memory.add("Acme prefers NET30 payment terms", user_id="maya", kind="fact", metadata={"team": "billing"})
    memory.add("Acme's warehouse is in Rotterdam", user_id="maya", kind="fact", metadata={"team": "logistics"})
    memory.add("Acme pays by bank transfer", user_id="maya", kind="fact", metadata={"team": "billing"})
    one = EngramRetriever(memory, user_id="maya", search_kwargs={"k": 1})
    assert len(one.invoke("Acme")) == 1
    billing = EngramRetriever(memory, user_id="maya", search_kwargs={"filter": {"team": "billing"}})
    found = billing.invoke("Acme")
    assert len(found) == 2 and all(d.metadata["metadata"]["team"] == "billing" for d in found)
    scores = [d.metadata["score"] for d in EngramRetriever(memory, user_id="maya").invoke("How does Acme pay?")]
    assert len(scores) == 3
    floor = (scores[1] + scores[2]) / 2
    strict = EngramRetriever(memory, user_id="maya", search_kwargs={"score_threshold": floor})
    assert [d.metadata["score"] for d in strict.invoke("How does Acme pay?")] == scores[:2]
    with pytest.raises(ValueError, match="unknown search_kwargs"):
        EngramRetriever(memory, user_id="maya", search_kwargs={"top_k": 1})
    with pytest.raises(ValueError, match="positive integer"):
        EngramRetriever(memory, user_id="maya", search_kwargs={"k": 0})
    with pytest.raises(ConfigError):
        EngramRetriever(memory, user_id="maya", search_kwargs={"score_threshold": 2})
    with pytest.raises(ValueError, match="extra"):
        EngramRetriever(memory, user_id="maya", top_k=3)


def test_retriever_over_an_engram_client(tmp_path: Path, embedder: Embedder) -> None:
    h = harness(tmp_path, embedder)
    h.memory.add("Acme prefers NET30 payment terms", user_id="maya", kind="fact", metadata={"team": "billing"})
    h.memory.add("Acme's warehouse is in Rotterdam", user_id="maya", kind="fact", metadata={"team": "logistics"})
    try:
        with running(h.app) as url, EngramClient(url, h.key("maya")) as client:
            retriever = EngramRetriever(client, user_id="maya", config=RetrievalConfig(top_k=5),
                                        search_kwargs={"filter": {"team": "logistics"}})
            found = retriever.invoke("Where is Acme's warehouse?")
            assert [d.page_content for d in found] == ["Acme's warehouse is in Rotterdam"]
            assert found[0].metadata["retrieval_id"]
    finally:
        h.close()


def _id(store: EngramStore, namespace: tuple[str, ...], key: str) -> str:
    from engram.integrations.langgraph import memory_id_for

    return memory_id_for(store._user(namespace), namespace, key)
