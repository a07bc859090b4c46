from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from engram.config import STRATEGY_WEIGHTS, RetrievalConfig
from engram.model import MemoryRecord, TimeRange
from engram.retrieve.rank import ALL_SIGNALS, apply_min_score, effective_weights, rank
from engram.retrieve.types import Scored

NOW = datetime(2024, 2, 15, 12, 0, tzinfo=UTC)
EXPLORATORY = STRATEGY_WEIGHTS["exploratory"]


def rec(mid: str, content: str = "text", **kw: Any) -> MemoryRecord:
    kw.setdefault("kind", "message")
    kw.setdefault("created_at", NOW)
    return MemoryRecord(
        id=mid, user_id="u1", content=content, recorded_at=kw["created_at"], content_hash=mid, **kw
    )


def run(
    records: Sequence[MemoryRecord],
    config: RetrievalConfig | None = None,
    *,
    query_vec: np.ndarray | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    query_entities: Sequence[str] = (),
    time_range: TimeRange | None = None,
    weights: Mapping[str, float] = EXPLORATORY,
    keyword_scores: Mapping[str, float] | None = None,
    sources: Mapping[str, Sequence[str]] | None = None,
    source_ranks: Mapping[str, Mapping[str, int]] | None = None,
) -> list[Scored]:
    return rank(
        records,
        query_vec=query_vec,
        vectors=vectors or {},
        query_entities=query_entities,
        time_range=time_range,
        now=NOW,
        weights=weights,
        keyword_scores=keyword_scores or {},
        sources=sources or {},
        source_ranks=source_ranks or {},
        config=config or RetrievalConfig(),
    )


class TestEffectiveWeights:
    def test_hybrid_scales_strategy_and_adds_keyword(self) -> None:
        w = effective_weights(EXPLORATORY, "hybrid", 0.25)
        assert w["semantic_similarity"] == pytest.approx(0.35 * 0.75)
        assert w["entity_overlap"] == pytest.approx(0.25 * 0.75)
        assert w["importance"] == pytest.approx(0.20 * 0.75)
        assert w["keyword_relevance"] == 0.25
        assert sum(w.values()) == pytest.approx(1.0)
        assert set(w) == set(ALL_SIGNALS)

    def test_semantic_has_no_keyword(self) -> None:
        w = effective_weights(EXPLORATORY, "semantic", 0.25)
        assert w["keyword_relevance"] == 0.0
        assert w["semantic_similarity"] == 0.35
        assert w["temporal_relevance"] == 0.15

    def test_keyword_takes_semantic_weight(self) -> None:
        w = effective_weights(STRATEGY_WEIGHTS["procedural"], "keyword", 0.25)
        assert w["semantic_similarity"] == 0.0
        assert w["keyword_relevance"] == 0.45
        assert w["reinforcement"] == 0.30
        assert sum(w.values()) == pytest.approx(1.0)

    @pytest.mark.parametrize("strategy", sorted(STRATEGY_WEIGHTS))
    @pytest.mark.parametrize("search_type", ["hybrid", "semantic", "keyword"])
    def test_every_combination_sums_to_one(self, strategy: str, search_type: str) -> None:
        w = effective_weights(STRATEGY_WEIGHTS[strategy], search_type, 0.4)
        assert sum(w.values()) == pytest.approx(1.0)


class TestSignalsFusion:
    def test_hand_computed_score(self) -> None:
        q = np.array([1.0, 0.0], dtype=np.float32)
        v = np.array([0.6, 0.8], dtype=np.float32)  # cosine 0.6
        r = rec(
            "m1",
            created_at=NOW - timedelta(days=100),
            entities=("customer:acme", "x"),
            importance=0.8,
            access_count=10,
        )
        [s] = run(
            [r],
            RetrievalConfig(search_type="semantic"),
            query_vec=q,
            vectors={"m1": v},
            query_entities=["customer:acme", "customer:other"],
        )
        expected = 0.35 * 0.6 + 0.25 * 0.5 + 0.15 * math.exp(-1.0) + 0.20 * 0.8 + 0.05 * math.log(11) / 5
        assert s.score == pytest.approx(expected, rel=1e-6)
        assert s.signals["semantic_similarity"] == pytest.approx(0.6, abs=1e-6)
        assert s.signals["entity_overlap"] == 0.5
        assert s.signals["temporal_relevance"] == pytest.approx(math.exp(-1.0))
        assert s.signals["reinforcement"] == pytest.approx(math.log(11) / 5)
        assert set(s.signals) == set(ALL_SIGNALS)
        assert s.weights["keyword_relevance"] == 0.0
        assert s.vector is v

    def test_hybrid_keyword_contribution(self) -> None:
        a, b = rec("a", importance=0.0), rec("b", importance=0.0)
        cfg = RetrievalConfig(search_type="hybrid", keyword_weight=0.4)
        out = run([a, b], cfg, keyword_scores={"a": 10.0, "b": 5.0}, weights={"importance": 1.0})
        by_id = {s.record.id: s for s in out}
        # temporal is 1.0 (created now) but weighs 0 with these weights; only keyword counts.
        assert by_id["a"].score == pytest.approx(0.4)
        assert by_id["b"].score == pytest.approx(0.2)
        assert by_id["b"].signals["keyword_relevance"] == 0.5

    def test_summary_boost(self) -> None:
        plain = rec("a", importance=0.6)
        summary = rec("b", importance=0.6, kind="summary")
        out = {s.record.id: s for s in run([plain, summary], RetrievalConfig(search_type="semantic"))}
        assert out["b"].score == pytest.approx(out["a"].score * 1.15)
        assert out["b"].score > out["a"].score

    def test_config_weights_override_strategy(self) -> None:
        r = rec("a", importance=0.5)
        cfg = RetrievalConfig(
            search_type="semantic",
            weights={
                "semantic_similarity": 0.0,
                "entity_overlap": 0.0,
                "temporal_relevance": 0.0,
                "importance": 1.0,
                "reinforcement": 0.0,
            },
        )
        [s] = run([r], cfg)
        assert s.score == pytest.approx(0.5)
        assert s.weights["importance"] == 1.0

    def test_sorted_by_score_then_id(self) -> None:
        records = [rec("c", importance=0.5), rec("a", importance=0.5), rec("b", importance=0.9)]
        out = run(records)
        assert [s.record.id for s in out] == ["b", "a", "c"]

    def test_deterministic(self) -> None:
        records = [rec(f"m{i}", importance=(i % 3) / 3) for i in range(20)]
        first = [(s.record.id, s.score) for s in run(records)]
        second = [(s.record.id, s.score) for s in run(list(reversed(records)))]
        assert first == second


class TestRRF:
    def test_normalised_to_best_achievable(self) -> None:
        cfg = RetrievalConfig(fusion="rrf", rrf_k=60)
        ranks = {"semantic": {"a": 1, "b": 2}, "keyword": {"a": 1, "c": 1}}
        out = {s.record.id: s for s in run([rec("a"), rec("b"), rec("c")], cfg, source_ranks=ranks)}
        best = 2 / 61
        assert out["a"].score == pytest.approx(1.0)
        assert out["b"].score == pytest.approx((1 / 62) / best)
        assert out["c"].score == pytest.approx((1 / 61) / best)
        assert out["c"].score == pytest.approx(0.5)
        assert out["a"].weights == {"rrf": 1.0}
        assert set(ALL_SIGNALS) <= set(out["a"].signals)

    def test_no_summary_boost_and_in_unit_interval(self) -> None:
        cfg = RetrievalConfig(fusion="rrf")
        out = run([rec("s", kind="summary")], cfg, source_ranks={"summary": {"s": 1}})
        assert out[0].score == pytest.approx(1.0)

    def test_unranked_memory_scores_zero(self) -> None:
        cfg = RetrievalConfig(fusion="rrf")
        out = run([rec("a"), rec("z")], cfg, source_ranks={"semantic": {"a": 3}})
        assert {s.record.id: s.score for s in out}["z"] == 0.0


class TestReasons:
    def test_reasons_from_sources_and_facts(self) -> None:
        q = np.array([1.0, 0.0], dtype=np.float32)
        v = np.array([0.82, math.sqrt(1 - 0.82**2)], dtype=np.float32)
        tr = TimeRange(NOW - timedelta(days=30), NOW, "last month")
        r = rec("m", created_at=NOW - timedelta(days=3), entities=("customer:acme",), kind="summary")
        [s] = run(
            [r],
            query_vec=q,
            vectors={"m": v},
            query_entities=["customer:acme"],
            time_range=tr,
            sources={"m": ["keyword", "semantic", "links:01ABC"]},
        )
        assert s.reasons == (
            "semantic match 0.82",
            "keyword match",
            "mentions customer:acme",
            "in time range 'last month'",
            "summary",
            "linked from 01ABC",
        )

    def test_out_of_range_has_no_time_reason(self) -> None:
        tr = TimeRange(NOW - timedelta(days=30), NOW - timedelta(days=20), "")
        [s] = run([rec("m", created_at=NOW)], time_range=tr, sources={"m": ["temporal"]})
        assert not any("time range" in r for r in s.reasons)


def test_apply_min_score() -> None:
    scored = [Scored(record=rec(i), score=sc) for i, sc in (("a", 0.9), ("b", 0.3), ("c", 0.29))]
    kept, dropped = apply_min_score(scored, 0.3)
    assert [s.record.id for s in kept] == ["a", "b"]
    assert dropped == 1
