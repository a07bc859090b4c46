"""What a retrieval's metadata says happened: the time range the query was read to mean, and how many
candidates each stage dropped, counted exactly where they were dropped.

``select`` is checked on hand-built candidates (vectors chosen so MMR must act); the whole pipeline on
a real SQLite store, where every candidate must be either returned or counted at one stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram import Memory
from engram.config import RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.model import MemoryRecord
from engram.retrieve.select import select
from engram.retrieve.types import Retrieval, RetrievalMetadata, Scored
from engram.timeparse import parse_time_scope
from engram.wire import decode_retrieval

NOW = datetime(2024, 2, 15, 12, 0, tzinfo=UTC)
#: Every stage off that these tests do not look at, so each count is the stage's own.
PLAIN = RetrievalConfig(top_k=20, min_score=0.0, max_tokens=None, clip_sentences=None, mmr_lambda=1.0,
                        cache_ttl=0.0)


def scored(mid: str, score: float, content: str, vector: list[float]) -> Scored:
    record = MemoryRecord(id=mid, user_id="u1", content=content, kind="message", created_at=NOW, recorded_at=NOW,
                          content_hash=mid)
    return Scored(record=record, score=score, vector=np.array(vector, dtype=np.float32))


def accounted(meta: RetrievalMetadata) -> int:
    return (meta.included_results + meta.below_min_score + meta.dedup_removed + meta.mmr_removed
            + meta.beyond_top_k + meta.budget_removed)


def test_select_counts_mmr_top_k_and_budget_drops() -> None:
    items = [
        scored("a", 0.9, "Acme pays invoices within thirty days", [1, 0, 0]),
        scored("b", 0.8, "Acme pays invoices within thirty days, net", [1, 0, 0]),  # a's near-duplicate
        scored("c", 0.7, "Globex ships on Mondays", [0, 1, 0]),
        scored("d", 0.6, "Initech moved offices", [0, 0, 1]),
        scored("e", 0.5, "Umbrella renewed early", [0, 0, 1]),
    ]
    diverse = replace(PLAIN, top_k=2, mmr_lambda=0.0, dedup=False)
    chosen = select(items, diverse, collection="user:u1")
    assert [e.id for e in chosen.entries] == ["a", "c"]
    assert (chosen.mmr_removed, chosen.beyond_top_k, chosen.budget_removed) == (1, 2, 0)

    by_score = select(items, replace(diverse, mmr_lambda=1.0), collection="user:u1")
    assert [e.id for e in by_score.entries] == ["a", "b"]
    assert (by_score.mmr_removed, by_score.beyond_top_k) == (0, 3)

    # 9 and 11 tokens: the first fits, the second is cut to what is left, the other three are dropped.
    budget = select(items, replace(PLAIN, max_tokens=13, dedup=False), collection="user:u1")
    assert len(budget.entries) == 2 and budget.entries[1].content.endswith("…")
    assert (budget.budget_removed, budget.mmr_removed, budget.beyond_top_k) == (3, 0, 0)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "engram.db", embedder=FakeEmbedder(32)) as m:
        yield m


def run(memory: Memory, query: str, **changes: Any) -> Retrieval:
    return memory.retrieve(query, user_id="u1", config=replace(PLAIN, **changes), now=NOW)


def test_three_memories_below_min_score(memory: Memory) -> None:
    for text in ("Acme pays by wire", "Globex prefers cheques", "Initech pays late"):
        memory.add(text, user_id="u1", created_at="2024-02-01T09:00:00+00:00")
    meta = run(memory, "How does Acme pay?", min_score=1.0).metadata
    assert (meta.total_results, meta.below_min_score, meta.included_results) == (3, 3, 0)
    assert "score_threshold" in meta.applied_filters


def test_below_min_score_is_the_count_under_the_floor(memory: Memory) -> None:
    for i in range(12):
        memory.add(f"Acme note {i}: invoice {i * 7} paid by wire" if i % 2 else f"Globex memo {i} about shipping",
                   user_id="u1", created_at=f"2024-02-{i + 1:02d}T09:00:00+00:00")
    everything = run(memory, "How does Acme pay invoices?")
    scores = sorted(m.score for m in everything.memories)
    assert len(scores) == everything.metadata.total_results == 12
    assert scores[7] < scores[8]
    floor = (scores[7] + scores[8]) / 2  # between the 8th and 9th lowest: exactly 8 under it
    meta = run(memory, "How does Acme pay invoices?", min_score=floor).metadata
    assert meta.below_min_score == 8 and meta.included_results == 4
    assert accounted(meta) == meta.total_results


def test_dedup_and_budget_counts_over_the_pipeline(memory: Memory) -> None:
    for text in ("Acme pays by wire.", "acme pays by WIRE", "Acme pays by wire!!", "Globex prefers cheques"):
        memory.add(text, user_id="u1", created_at="2024-02-01T09:00:00+00:00")
    for i in range(4):
        memory.add(f"Acme's payment history, part {i}: " + "net thirty, paid on time. " * 8, user_id="u1",
                   created_at="2024-02-02T09:00:00+00:00")
    meta = run(memory, "How does Acme pay?").metadata
    assert meta.dedup_removed == 2 and meta.total_results == 8
    small = run(memory, "How does Acme pay?", max_tokens=70)
    kept = small.metadata.included_results
    # Every entry up to the one cut to fit (ending "…") is returned; the rest is the budget's drop.
    assert small.memories[-1].content.endswith("…") or small.metadata.total_tokens <= 70
    assert small.metadata.budget_removed == 6 - kept > 0
    assert accounted(small.metadata) == small.metadata.total_results
    topped = run(memory, "How does Acme pay?", top_k=2).metadata
    assert topped.beyond_top_k + topped.mmr_removed == 4 and topped.included_results == 2
    assert accounted(topped) == topped.total_results


def test_the_time_range_the_query_was_read_to_mean(memory: Memory) -> None:
    memory.add("Acme called about the invoice", user_id="u1", created_at="2024-02-07T09:00:00+00:00")
    scoped = run(memory, "What did Acme say last week?").metadata
    expected = parse_time_scope("What did Acme say last week?", NOW)
    assert expected is not None and scoped.time_range == expected
    wire = scoped.to_dict()["timeRange"]
    assert wire == {"start": expected.start.isoformat(), "end": expected.end.isoformat(),
                    "expression": expected.expression, "vague": expected.vague,
                    "about": expected.about}
    assert run(memory, "How does Acme pay?").metadata.time_range is None


def test_the_counts_and_range_survive_the_wire(memory: Memory) -> None:
    for text in ("Acme pays by wire", "acme pays by wire", "Globex prefers cheques"):
        memory.add(text, user_id="u1", created_at="2024-02-07T09:00:00+00:00")
    result = run(memory, "What did Acme pay last week?", min_score=0.5)
    back = decode_retrieval(result.to_dict(), result.query).metadata
    meta = result.metadata
    assert back.time_range == meta.time_range and back.time_range is not None
    assert (back.below_min_score, back.dedup_removed, back.mmr_removed, back.beyond_top_k, back.budget_removed) == (
        meta.below_min_score, meta.dedup_removed, meta.mmr_removed, meta.beyond_top_k, meta.budget_removed)
    payload = result.to_dict()["metadata"]
    assert {"belowMinScore", "mmrRemoved", "beyondTopK", "budgetRemoved", "timeRange"} <= set(payload)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"min_score": 0.3, "top_k": 3},
        {"mmr_lambda": 0.0, "top_k": 4, "overfetch": 3},
        {"max_tokens": 40, "dedup": False},
        {"min_score": 0.2, "top_k": 2, "max_tokens": 15, "mmr_lambda": 0.5},
    ],
)
def test_every_candidate_is_returned_or_counted_once(memory: Memory, changes: dict[str, Any]) -> None:
    texts = ["Acme pays by wire.", "acme pays by wire", "Acme pays by wire, usually", "Globex prefers cheques",
             "Acme's invoices are due in thirty days", "Initech pays Acme late", "Acme moved to NET45"]
    for i, text in enumerate(texts * 2):
        memory.add(f"{text} ({i // len(texts)})" if i >= len(texts) else text, user_id="u1",
                   created_at=f"2024-02-{i + 1:02d}T09:00:00+00:00")
    meta = run(memory, "How does Acme pay its invoices?", **changes).metadata
    assert meta.total_results > meta.included_results > 0
    assert accounted(meta) == meta.total_results, meta
