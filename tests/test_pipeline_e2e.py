"""The whole pipeline with the real embedder on the demo's small business memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engram import Memory, RedactionConfig, RetrievalConfig
from engram.demo import NOW, USER, build
from engram.ext import Embedder
from engram.retrieve.select import estimate_tokens


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path_factory.mktemp("e2e") / "demo.db", embedder=embedder) as m:
        build(m)
        yield m


def top(memory: Memory, query: str, **config: object) -> list[str]:
    cfg = RetrievalConfig(interleave="score_first", **config)  # type: ignore[arg-type]
    return [e.content for e in memory.retrieve(query, user_id=USER, now=NOW, config=cfg).memories]


def test_procedural_query_finds_the_procedure(memory: Memory) -> None:
    result = memory.retrieve("How do I usually handle rush orders?", user_id=USER, now=NOW)
    assert result.metadata.query_type == "procedural"
    procedures = [e for e in result.memories if e.type == "procedure"]
    assert procedures and "rush order" in procedures[0].content


def test_time_and_entity_query(memory: Memory) -> None:
    result = memory.retrieve("What did Acme order last month?", user_id=USER, now=NOW,
                             config=RetrievalConfig(interleave="score_first"))
    assert result.metadata.strategy == "factual_entity_focused"
    ordered = next(e for e in result.memories if "Acme ordered 40 kg" in e.content)
    assert "in time range 'last month'" in ordered.reasons
    assert any(r.startswith("mentions customer:acme") for r in ordered.reasons)
    assert all("Bluebird" not in e.content for e in result.memories[:3])


def test_budget_clip_and_payload_shape(memory: Memory) -> None:
    cfg = RetrievalConfig(max_tokens=60, clip_sentences=1)
    result = memory.retrieve("Tell me about Bluebird Bakery", user_id=USER, now=NOW, config=cfg)
    assert sum(estimate_tokens(e.content) for e in result.memories) <= 60
    assert result.metadata.total_tokens <= 60
    payload = result.to_dict()
    entry = payload["memories"][0]
    assert set(entry) >= {"id", "content", "score", "timestamp", "sessionId", "type", "provenance", "signals"}
    assert entry["provenance"]["collection"] == f"user:{USER}"
    assert "token_budget" in payload["metadata"]["appliedFilters"]
    assert result.to_prompt().startswith("## Relevant Context from Previous Conversations")


def test_duplicates_are_removed(memory: Memory) -> None:
    result = memory.retrieve("subscription box for home customers", user_id=USER, now=NOW)
    assert sum("subscription box" in e.content for e in result.memories) == 1
    assert result.metadata.dedup_removed >= 1


def test_redaction_hides_the_email(memory: Memory) -> None:
    cfg = RetrievalConfig(redaction=RedactionConfig(enabled=True), min_score=0.0)
    result = memory.retrieve("What is my accountant's e-mail?", user_id=USER, now=NOW, config=cfg)
    entry = next(e for e in result.memories if "accountant" in e.content)
    assert "[REDACTED]" in entry.content and "@" not in entry.content and entry.was_redacted


def test_fallbacks(memory: Memory) -> None:
    empty = memory.retrieve("   ", user_id=USER, now=NOW)
    assert empty.memories == () and empty.metadata.error is not None
    assert empty.metadata.error["code"] == "INVALID_QUERY"
    unknown = memory.retrieve("anything", user_id="nobody-here", now=NOW)
    assert unknown.metadata.error is not None and unknown.metadata.error["fallback"] == "empty"
    off = memory.retrieve("anything", user_id=USER, now=NOW, use_memory=False)
    assert off.memories == () and off.metadata.error is None


def test_cache_serves_identical_retrievals_and_writes_invalidate(memory: Memory) -> None:
    first = memory.retrieve("Harbor Hotel decaf", user_id=USER, now=NOW)
    again = memory.retrieve("Harbor Hotel decaf", user_id=USER, now=NOW)
    assert again.metadata.cached and again.ids() == first.ids()
    memory.add("Harbor Hotel switched to oat milk lattes", user_id=USER, created_at=NOW)
    fresh = memory.retrieve("Harbor Hotel decaf", user_id=USER, now=NOW)
    assert not fresh.metadata.cached


def test_deterministic_for_the_same_inputs(memory: Memory) -> None:
    cfg = RetrievalConfig(cache_ttl=0)
    a = memory.retrieve("Why are sales down this quarter?", user_id=USER, now=NOW, config=cfg)
    b = memory.retrieve("Why are sales down this quarter?", user_id=USER, now=NOW, config=cfg)
    assert [(e.id, e.score) for e in a.memories] == [(e.id, e.score) for e in b.memories]
