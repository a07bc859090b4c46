"""Retrieval log and feedback: every computed retrieval is logged, feedback is checked and reinforces."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.errors import NotFound, StoreError, ValidationError
from engram.ext import Embedder, Store
from engram.model import LoggedRetrieval
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
USER = "maya"
CONFIG = RetrievalConfig(top_k=3, cache_ttl=0, min_score=0.0)


@pytest.fixture
def memory(store: Store, embedder: Embedder) -> Iterator[Memory]:
    m = Memory(store=store, embedder=embedder)
    m.add_many([
        {"user_id": USER, "content": "Acme Corporation prefers NET30 payment terms.", "kind": "message"},
        {"user_id": USER, "content": "Acme pays its invoices late, usually after 40 days.", "kind": "message"},
        {"user_id": USER, "content": "The roaster's afterburner was serviced.", "kind": "message"},
        {"user_id": "other", "content": "Acme is someone else's customer too.", "kind": "message"},
    ])
    yield m


def test_each_computed_retrieval_is_logged_with_its_signals(memory: Memory) -> None:
    result = memory.retrieve("How does Acme pay?", user_id=USER, now=NOW, config=CONFIG)
    rid = result.metadata.retrieval_id
    assert rid is not None and result.metadata.config["weightsSource"] == "default"
    entry = memory.store.get_retrieval(USER, rid)
    assert isinstance(entry, LoggedRetrieval)
    assert entry.returned_ids() == result.ids() and entry.query == "How does Acme pay?"
    assert entry.strategy == result.metadata.strategy and entry.category == result.metadata.query_type
    assert entry.items[0].signals["semantic_similarity"] == pytest.approx(
        result.memories[0].signals["semantic_similarity"], abs=1e-6
    )
    assert entry.settings == {"searchType": "hybrid", "keywordWeight": 0.5, "fusion": "signals",
                              "weightsSource": "default",
                              "applicable": ["entity_overlap", "importance", "reinforcement"]}
    assert memory.store.get_retrieval("other", rid) is None


def test_feedback_validates_then_reinforces(memory: Memory) -> None:
    result = memory.retrieve("How does Acme pay?", user_id=USER, now=NOW, config=CONFIG)
    rid = result.metadata.retrieval_id
    assert rid is not None
    used = result.ids()[0]
    with pytest.raises(NotFound):
        memory.feedback("no-such-retrieval", [used], user_id=USER)
    with pytest.raises(NotFound):
        memory.feedback(rid, [used], user_id="other")  # another user's retrieval looks unknown
    with pytest.raises(ValidationError, match="was not returned"):
        memory.feedback(rid, [used, "never-returned"], user_id=USER)
    with pytest.raises(ValidationError):
        memory.feedback(rid, used, user_id=USER)  # a bare string is not a list of ids
    assert memory.feedback(rid, [], user_id=USER).recorded == 0
    assert memory.feedback(rid, [used, used], user_id=USER).recorded == 1
    assert memory.feedback(rid, [used], user_id=USER).recorded == 0  # reported twice, counted once
    assert memory.get(used, user_id=USER).access_count == 1
    again = memory.retrieve("How does Acme pay?", user_id=USER, now=NOW, config=CONFIG)
    entry = next(m for m in again.memories if m.id == used)
    assert entry.signals["reinforcement"] == pytest.approx(math.log(2) / 5)


def test_logging_can_be_switched_off(store: Store, embedder: Embedder) -> None:
    memory = Memory(store=store, embedder=embedder, log_retrievals=False)
    memory.add("Acme prefers NET30 payment terms.", user_id=USER)
    result = memory.retrieve("Acme payment terms", user_id=USER, now=NOW, config=CONFIG)
    assert result.memories and result.metadata.retrieval_id is not None
    with pytest.raises(NotFound):
        memory.feedback(result.metadata.retrieval_id, result.ids(), user_id=USER)


def test_empty_and_cached_retrievals_are_not_logged_again(memory: Memory) -> None:
    cached = RetrievalConfig(top_k=3, min_score=0.0)
    first = memory.retrieve("How does Acme pay?", user_id=USER, now=NOW, config=cached)
    second = memory.retrieve("How does Acme pay?", user_id=USER, now=NOW, config=cached)
    assert second.metadata.cached and second.metadata.retrieval_id == first.metadata.retrieval_id
    empty = memory.retrieve("anything", user_id="nobody", now=NOW, config=CONFIG)
    assert empty.metadata.retrieval_id is not None
    assert memory.store.get_retrieval("nobody", empty.metadata.retrieval_id) is None


class _NoLog(SQLiteStore):
    def log_retrieval(self, user_id: str, entry: LoggedRetrieval) -> None:
        raise StoreError("disk full")


def test_a_failing_log_never_fails_the_retrieval(tmp_path: Path, embedder: Embedder) -> None:
    memory = Memory(store=_NoLog(tmp_path / "m.db"), embedder=embedder)
    memory.add("Acme prefers NET30 payment terms.", user_id=USER)
    result = memory.retrieve("Acme payment terms", user_id=USER, now=NOW, config=CONFIG)
    assert result.memories and result.metadata.error is None
    memory.close()
