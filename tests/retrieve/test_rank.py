from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from engram.config import STRATEGY_WEIGHTS, RetrievalConfig
from engram.model import MemoryRecord, TimeRange
from engram.retrieve.columns import Known
from engram.retrieve.in_range import REQUEST_SCOPE_TRUST, WORK_SCOPE_TRUST, scope_trust
from engram.retrieve.keyword_evidence import SHORT_TEXT
from engram.retrieve.rank import (
    ALL_SIGNALS,
    BRIDGE_GAIN,
    BRIDGE_MENTION,
    KEYWORD_FULL_SHARE,
    KEYWORD_LENGTH,
    KEYWORD_LENGTH_POWER,
    KEYWORD_LENGTH_POWER_OWN,
    RANGE_MATCH,
    SCOPE_TRUST,
    SCORE_KNEE,
    apply_min_score,
    as_speakers,
    displayed,
    in_range_first,
    meaning_share,
    pointed_at,
    rank,
)
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
    ).scored()


def cosine_vec(c: float) -> np.ndarray:
    return np.array([c, math.sqrt(1 - c * c)], dtype=np.float32)


Q = np.array([1.0, 0.0], dtype=np.float32)


class TestMeaningShare:
    def test_by_search_type(self) -> None:
        assert meaning_share("hybrid", 0.25) == 0.75
        assert meaning_share("semantic", 0.25) == 1.0
        assert meaning_share("keyword", 0.25) == 0.0


class TestSignalsFusion:
    def test_hand_computed_score(self) -> None:
        v = cosine_vec(0.6)
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
            query_vec=Q,
            vectors={"m1": v},
            query_entities=["customer:acme", "customer:other"],
        )
        relevance = (0.6 - 0.15) / 0.5  # cosine through the default similarity range
        reinf = math.log(11) / 5
        # No time scope: temporal relevance gives its 0.15 back; entity, importance, reinforcement apply.
        context = (0.25 * 0.5 + 0.20 * 0.8 + 0.05 * reinf) / 0.50
        strength = relevance * (1 + 0.50 / 0.85 * (context - 0.5))
        assert strength > SCORE_KNEE  # reported bent towards 1: 0.8 + 0.2 * (1 - exp(-(x - 0.8) / 0.2))
        expected = SCORE_KNEE + (1 - SCORE_KNEE) * (1 - math.exp(-(strength - SCORE_KNEE) / (1 - SCORE_KNEE)))
        assert s.score == pytest.approx(expected, rel=1e-6)
        assert s.signals["semantic_similarity"] == pytest.approx(0.6, abs=1e-6)
        bent = SCORE_KNEE + (1 - SCORE_KNEE) * (1 - math.exp(-(relevance - SCORE_KNEE) / (1 - SCORE_KNEE)))
        assert s.signals["relevance"] == pytest.approx(bent, rel=1e-5)
        assert s.signals["entity_overlap"] == 0.5
        assert s.signals["temporal_relevance"] == pytest.approx(math.exp(-1.0))
        assert s.signals["reinforcement"] == pytest.approx(reinf)
        assert set(s.signals) == set(ALL_SIGNALS)
        assert s.weights["keyword_relevance"] == 0.0
        assert s.weights["temporal_relevance"] == 0.0  # gave its weight back
        assert sum(s.weights.values()) == pytest.approx(1.0)
        assert s.vector is v

    def test_irrelevant_memory_scores_zero_whatever_its_importance_and_time(self) -> None:
        tr = TimeRange(NOW - timedelta(days=7), NOW, "last week")
        r = rec("p", kind="procedure", importance=1.0, access_count=500)
        # Below even the lowest bottom the similarity range moves to (0.05 for the default range).
        [s] = run([r], query_vec=Q, vectors={"p": cosine_vec(0.03)}, time_range=tr)
        assert s.score == 0.0

    def test_when_every_memory_is_far_in_meaning_the_closest_keep_some(self) -> None:
        meaning_only = RetrievalConfig(search_type="semantic")
        far = {"a": cosine_vec(0.25), "b": cosine_vec(0.10)}
        scored = {s.record.id: s.signals["relevance"]
                  for s in run([rec("a"), rec("b")], meaning_only, query_vec=Q, vectors=far)}
        # Read from 0.2 under the best cosine (0.05 to 0.65) instead of 0.15 to 0.65.
        assert scored["a"] == pytest.approx((0.25 - 0.05) / 0.6, rel=1e-5)
        assert scored["b"] == pytest.approx((0.10 - 0.05) / 0.6, rel=1e-5)
        # A candidate near the range's bottom keeps the range as it is.
        near = {"a": cosine_vec(0.40), "b": cosine_vec(0.10)}
        scored = {s.record.id: s.signals["relevance"]
                  for s in run([rec("a"), rec("b")], meaning_only, query_vec=Q, vectors=near)}
        assert scored["a"] == pytest.approx((0.40 - 0.15) / 0.5, rel=1e-5)
        assert scored["b"] == 0.0

    def test_evidence_reorders_equally_relevant_memories(self) -> None:
        tr = TimeRange(NOW - timedelta(days=7), NOW, "last week")
        inside = rec("in", created_at=NOW - timedelta(days=2))
        outside = rec("out", created_at=NOW - timedelta(days=60))
        out = run([outside, inside], query_vec=Q, vectors={"in": cosine_vec(0.5), "out": cosine_vec(0.55)},
                  time_range=tr)
        assert [s.record.id for s in out] == ["in", "out"]
        assert out[0].weights["temporal_relevance"] > 0

    def test_hybrid_keyword_contribution(self) -> None:
        a, b = rec("a"), rec("b")
        cfg = RetrievalConfig(search_type="hybrid", keyword_weight=0.4)
        out = run([a, b], cfg, keyword_scores={"a": 1.7, "b": 0.5})
        by_id = {s.record.id: s for s in out}
        assert by_id["a"].signals["keyword_relevance"] == 1.0  # a share of the query's words, capped
        assert by_id["a"].signals["relevance"] == pytest.approx(0.4)
        assert by_id["b"].signals["relevance"] == pytest.approx(0.2)
        assert by_id["a"].score == pytest.approx(2 * by_id["b"].score)

    def test_summary_boost(self) -> None:
        plain = rec("a", importance=0.6)
        summary = rec("b", importance=0.6, kind="summary")
        vectors = {"a": cosine_vec(0.4), "b": cosine_vec(0.4)}
        out = {s.record.id: s for s in run([plain, summary], RetrievalConfig(search_type="semantic"),
                                            query_vec=Q, vectors=vectors)}
        assert out["b"].score == pytest.approx(out["a"].score * 1.15)
        assert out["b"].score > out["a"].score

    def test_config_weights_override_strategy(self) -> None:
        r = rec("a", importance=0.9)
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
        [s] = run([r], cfg, query_vec=Q, vectors={"a": cosine_vec(0.4)})
        assert s.score == pytest.approx(0.5 * (1 + (0.9 - 0.5)))
        assert s.weights["importance"] == 1.0

    def test_sorted_by_score_then_id(self) -> None:
        records = [rec("c"), rec("a"), rec("b")]
        out = run(records, keyword_scores={"a": 0.5, "b": 0.9, "c": 0.5})
        assert [s.record.id for s in out] == ["b", "a", "c"]

    def test_deterministic(self) -> None:
        records = [rec(f"m{i}", importance=(i % 3) / 3) for i in range(20)]
        kw = {f"m{i}": (i % 4) / 4 for i in range(20)}
        first = [(s.record.id, s.score) for s in run(records, keyword_scores=kw)]
        second = [(s.record.id, s.score) for s in run(list(reversed(records)), keyword_scores=kw)]
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


class TestTimeScope:
    def test_in_range_memories_come_first_then_the_rest(self) -> None:
        tr = TimeRange(NOW - timedelta(days=7), NOW, "last week")
        inside = rec("in", created_at=NOW - timedelta(days=2))
        outside = rec("out", created_at=NOW - timedelta(days=60))
        scored = run([outside, inside], query_vec=Q, vectors={"in": cosine_vec(0.3), "out": cosine_vec(0.9)},
                     time_range=tr)
        assert [s.record.id for s in scored] == ["out", "in"]  # by score alone the old one wins
        ordered = in_range_first(scored, tr)
        assert [(s.record.id, s.tier) for s in ordered] == [("in", 0), ("out", 1)]

    def test_a_vague_range_favours_without_fencing(self) -> None:
        # "What did Melanie paint recently?": the painting she mentioned a month ago still leads.
        tr = TimeRange(NOW - timedelta(days=7), NOW, "recently", vague=True)
        inside = rec("in", created_at=NOW - timedelta(days=2))
        outside = rec("out", created_at=NOW - timedelta(days=30))
        scored = run([outside, inside], query_vec=Q, vectors={"in": cosine_vec(0.3), "out": cosine_vec(0.9)},
                     time_range=tr)
        assert scored[1].signals["temporal_relevance"] > scored[0].signals["temporal_relevance"]
        assert [(s.record.id, s.tier) for s in in_range_first(scored, tr)] == [("out", 0), ("in", 0)]

    @pytest.mark.parametrize("kind", ["fact", "procedure"])
    def test_timeless_kinds_stored_in_the_range_are_neither_lifted_nor_kept_under_the_floor(self, kind: str) -> None:
        # "What did Acme order last month?": a procedure written last month is not about last month.
        tr = TimeRange(NOW - timedelta(days=30), NOW, "last month")
        stored = rec("stored", kind=kind, created_at=NOW - timedelta(days=3))
        event = rec("event", kind="episode", created_at=NOW - timedelta(days=4))
        answer = rec("answer", created_at=NOW - timedelta(days=60))
        scored = [Scored(stored, 0.25), Scored(event, 0.1), Scored(answer, 0.9)]
        ordered = in_range_first(sorted(scored, key=lambda s: -s.score), tr)
        assert [(s.record.id, s.tier) for s in ordered] == [("event", 0), ("answer", 1), ("stored", 1)]
        kept, dropped = apply_min_score(ordered, 0.3, time_range=tr)
        assert [s.record.id for s in kept] == ["event", "answer"] and dropped == 1

    def test_the_rules_governing_a_request_stand_with_what_is_inside(self) -> None:
        # "Dennis had a fall at 4 this morning. What needs doing today?": the falls procedure, stored
        # months before, answers it; this morning's notes alone had put it under every one of them.
        tr = TimeRange(NOW - timedelta(hours=12), NOW, "this morning")
        rule = rec("rule", kind="procedure", created_at=NOW - timedelta(days=90))
        note = rec("note", created_at=NOW - timedelta(hours=3))
        other = rec("other", kind="procedure", created_at=NOW - timedelta(days=90))
        old = rec("old", created_at=NOW - timedelta(days=20))
        scored = [Scored(rule, 0.8), Scored(old, 0.7), Scored(note, 0.5), Scored(other, 0.4)]
        assert [s.record.id for s in in_range_first(scored, tr)] == ["note", "rule", "old", "other"]
        ordered = in_range_first(scored, tr, rules={"rule", "elsewhere"})
        assert [(s.record.id, s.tier) for s in ordered] == [("rule", 0), ("note", 0), ("old", 1), ("other", 1)]
        # A scope that points at nothing leaves the order as ranked, rules or not.
        far = TimeRange(NOW - timedelta(days=400), NOW - timedelta(days=300), "two years ago")
        assert [s.tier for s in in_range_first(scored, far, rules={"rule"})] == [0, 0, 0, 0]

    def test_a_scope_that_points_at_nothing_relevant_neither_lifts_nor_keeps(self) -> None:
        # "The rotation for Admon on a Sunday" once read as last Sunday: that day's unrelated messages
        # (0.04) went above the answer (0.99) and past the floor.
        tr = TimeRange(NOW - timedelta(days=2), NOW - timedelta(days=1), "on Sunday")
        junk = [Scored(rec(f"junk{i}", created_at=NOW - timedelta(days=1, hours=i)), 0.04) for i in range(3)]
        answer = Scored(rec("answer", created_at=NOW - timedelta(days=6)), 0.99)
        scored = [answer, *junk]
        assert pointed_at(scored, tr) == set()
        assert next((s.record.id, s.tier) for s in in_range_first(scored, tr)) == ("answer", 0)
        assert [s.record.id for s in apply_min_score(scored, 0.1, time_range=tr)[0]] == ["answer"]
        # At SCOPE_TRUST of the best and above, the scope is evidence again.
        near = [Scored(rec("near", created_at=NOW - timedelta(days=1)), SCOPE_TRUST * 0.99), answer]
        assert pointed_at(near, tr) == {"near"}
        assert [s.record.id for s in in_range_first(near, tr)] == ["near", "answer"]

    def test_what_tells_of_the_scope_joins_it_on_the_same_terms(self) -> None:
        # "What did web sales come to last month?", asked in December: "November was my biggest month
        # ever ... Online: $14,860", said on December 14, scored 0.96 of November's best message.
        tr = TimeRange(NOW - timedelta(days=60), NOW - timedelta(days=30), "last month")
        inside = Scored(rec("inside", created_at=NOW - timedelta(days=40)), 0.44)
        report = Scored(rec("report", created_at=NOW - timedelta(days=10)), 0.42)
        faint = Scored(rec("faint", created_at=NOW - timedelta(days=10)), 0.44 * RANGE_MATCH * 0.9)
        other = Scored(rec("other", created_at=NOW - timedelta(days=5)), 0.9)
        scored = [other, inside, report, faint]
        assert pointed_at(scored, tr, naming={"report", "faint"}) == {"inside", "report"}
        assert [s.record.id for s in in_range_first(scored, tr, naming={"report", "faint"})] == [
            "inside", "report", "other", "faint"]
        assert pointed_at(scored, tr) == {"inside"}  # said outside and naming nothing: not pointed at

    def test_a_request_s_scope_must_point_at_a_close_match(self) -> None:
        # "A customer who bought an annual plan six weeks ago wants their money back. How should I
        # handle it?": that week's unrelated message (0.12) went above the refund policy (0.80).
        tr = TimeRange(NOW - timedelta(days=43), NOW - timedelta(days=41), "six weeks ago")
        that_week = Scored(rec("that_week", created_at=NOW - timedelta(days=42)), 0.12)
        policy = Scored(rec("policy", created_at=NOW - timedelta(days=90)), 0.80)
        scored = [policy, that_week]
        assert pointed_at(scored, tr) == {"that_week"}  # a question's scope would lift it
        assert pointed_at(scored, tr, trust=REQUEST_SCOPE_TRUST) == set()
        assert [s.record.id for s in in_range_first(scored, tr, trust=REQUEST_SCOPE_TRUST)] == ["policy", "that_week"]
        # "Summarize what we discussed yesterday": yesterday's messages are among the best matches.
        yesterday = Scored(rec("yesterday", created_at=NOW - timedelta(days=42)), 0.20)
        older = Scored(rec("older", created_at=NOW - timedelta(days=90)), 0.34)
        assert [s.record.id for s in in_range_first([older, yesterday], tr, trust=REQUEST_SCOPE_TRUST)] == [
            "yesterday", "older"]

    def test_a_request_for_work_takes_its_scope_for_the_work_s(self) -> None:
        # "Write the Q3 churn query": Q3 is the data's quarter; the new churn rule, said in Q4, is
        # the best match and stays first, and nothing of Q3 is kept under the floor for its date.
        assert scope_trust("Write the Q3 churn query for me.", requests=True) == WORK_SCOPE_TRUST
        assert scope_trust("Summarize what we discussed yesterday", requests=True) == REQUEST_SCOPE_TRUST
        for review in ("Summarize last weekend", "List what I did last weekend", "Show me my notes from Monday",
                       "Give me a recap of yesterday", "Write up the minutes from yesterday's sync"):
            assert scope_trust(review, requests=True) == REQUEST_SCOPE_TRUST, review  # the user's own days
        assert scope_trust("What did we discuss in Q3?", requests=False) == SCOPE_TRUST
        tr = TimeRange(NOW - timedelta(days=150), NOW - timedelta(days=60), "Q3")
        in_q3 = Scored(rec("in_q3", created_at=NOW - timedelta(days=100)), 0.80)
        rule = Scored(rec("rule", created_at=NOW - timedelta(days=20)), 0.99)
        assert pointed_at([rule, in_q3], tr, trust=SCOPE_TRUST) == {"in_q3"}
        assert pointed_at([rule, in_q3], tr, trust=WORK_SCOPE_TRUST) == set()
        assert [s.record.id for s in in_range_first([rule, in_q3], tr, trust=WORK_SCOPE_TRUST)] == ["rule", "in_q3"]
        faint = Scored(rec("faint", created_at=NOW - timedelta(days=100)), 0.01)
        kept, _ = apply_min_score([rule, faint], 0.1, time_range=tr, trust=WORK_SCOPE_TRUST)
        assert [s.record.id for s in kept] == ["rule"]

    def test_only_in_range_memories_whose_content_matches_are_lifted(self) -> None:
        # "What did Acme order last month?": last month's serviced afterburner (0.064) is in range
        # but about nothing asked; Acme's order (0.96) is. The first is neither lifted nor kept.
        tr = TimeRange(NOW - timedelta(days=30), NOW - timedelta(days=1), "last month")
        order = Scored(rec("order", created_at=NOW - timedelta(days=20)), 0.96)
        afterburner = Scored(rec("afterburner", created_at=NOW - timedelta(days=10)), 0.064)
        summary = Scored(rec("summary", created_at=NOW - timedelta(days=60)), 0.95)
        scored = [order, summary, afterburner]
        assert pointed_at(scored, tr) == {"order"}
        assert [s.record.id for s in in_range_first(scored, tr)] == ["order", "summary", "afterburner"]
        assert [s.record.id for s in apply_min_score(scored, 0.1, time_range=tr)[0]] == ["order", "summary"]
        # "What did I do last weekend?": every answer scores low, each at least RANGE_MATCH of the best.
        weekend = [Scored(rec(f"w{i}", created_at=NOW - timedelta(days=3)), v) for i, v in enumerate((0.113, 0.015))]
        assert pointed_at([*weekend, summary], tr) == {"w0", "w1"}

    def test_an_empty_range_falls_back_to_the_best_overall(self) -> None:
        tr = TimeRange(NOW - timedelta(days=7), NOW, "last week")
        scored = run([rec("old", created_at=NOW - timedelta(days=60))], query_vec=Q, vectors={"old": cosine_vec(0.9)},
                     time_range=tr)
        assert [(s.record.id, s.tier) for s in in_range_first(scored, tr)] == [("old", 0)]


def test_min_score_never_empties_a_filtered_retrieval() -> None:
    scored = [Scored(record=rec(i), score=sc) for i, sc in (("a", 0.05), ("b", 0.02))]
    assert apply_min_score(scored, 0.1) == ([], 2)
    kept, dropped = apply_min_score(scored, 0.1, keep_best=True)
    assert [s.record.id for s in kept] == ["a", "b"] and dropped == 0


def test_keyword_evidence_is_read_against_the_best_keyword_match() -> None:
    # A question's filler words are in no memory: the best match holding 0.6 of the query's
    # keyword weight is a full keyword match, and the others keep their proportion to it.
    records = [rec("best", content="graduation"), rec("half", content="graduation too"), rec("none")]
    out = {s.record.id: s for s in run(records, keyword_scores={"best": 0.6, "half": 0.3})}
    assert out["best"].signals["keyword_relevance"] == pytest.approx(1.0)
    assert out["half"].signals["keyword_relevance"] == pytest.approx(0.5)
    assert out["none"].signals["keyword_relevance"] == 0.0
    # A weak best match (under KEYWORD_FULL_SHARE of the query) is not inflated into a full one.
    weak = {s.record.id: s for s in run(records, keyword_scores={"best": 0.2})}
    assert weak["best"].signals["keyword_relevance"] == pytest.approx(0.2 / KEYWORD_FULL_SHARE)


def test_a_turn_next_to_a_relevant_question_gains_from_it() -> None:
    question = rec("q", content="What did you research?", role="Melanie", session_id="s1")
    answer = rec("a", content="Adoption agencies.", role="Caroline", session_id="s1")
    stranger = rec("s", content="Adoption agencies.", role="Caroline", session_id="s2")
    kw = {"q": 0.9, "a": 0.2, "s": 0.2}
    out = {s.record.id: s for s in run([question, answer, stranger], keyword_scores=kw)}
    alone = out["a"].score
    out = {s.record.id: s for s in rank(
        [question, answer, stranger], query_vec=None, vectors={}, query_entities=(), time_range=None, now=NOW,
        weights=EXPLORATORY, keyword_scores=kw, sources={}, source_ranks={}, config=RetrievalConfig(),
        neighbors={"a": ("q",), "q": ("a",)},
    ).scored()}
    # Keyword scores read against the best match (0.9 counts as a full match): q 1.0, a 0.2 / 0.9.
    assert out["a"].signals["conversation_context"] == pytest.approx(0.5 * 1.0)
    together = 0.4 * out["a"].signals["same_conversation"]  # a conversation between people, too
    assert out["a"].signals["relevance"] == pytest.approx(0.5 * 0.2 / 0.9 + 0.3 * 0.5 * 1.0 + together)
    assert out["a"].score > alone and out["a"].score > out["s"].score
    assert out["s"].signals["conversation_context"] == 0.0


def test_a_memory_naming_what_a_top_result_names_gains_from_it() -> None:
    dentist = rec("d", content="Leo sees Dr. Patel.", entities=("mention:leo", "mention:patel"))
    phone = rec("p", content="Dr. Patel's phone is 503-555-0142.", entities=("mention:patel",))
    other = rec("o", content="The phone bill is due.", entities=())
    kw = {"d": 0.8, "p": 0.2, "o": 0.2}

    def scores(bridges: Mapping[str, tuple[float, str]] | None) -> dict[str, Scored]:
        return {s.record.id: s for s in rank(
            [dentist, phone, other], query_vec=None, vectors={}, query_entities=("mention:leo",), time_range=None,
            now=NOW, weights=EXPLORATORY, keyword_scores=kw, sources={}, source_ranks={}, config=RetrievalConfig(),
            bridges=bridges,
        ).scored()}

    plain = scores(None)
    assert plain["p"].score == pytest.approx(plain["o"].score)
    hop = scores({"p": (0.4, "mention:patel")})
    assert hop["p"].signals["entity_bridge"] == 0.4
    assert hop["p"].signals["relevance"] == pytest.approx(plain["p"].signals["relevance"] + BRIDGE_GAIN * 0.4)
    assert hop["p"].score > hop["o"].score
    assert "mentions mention:patel, as a top result does" in hop["p"].reasons
    assert hop["o"].signals["entity_bridge"] == 0.0 and hop["d"].score == plain["d"].score
    # It names the query's entity at one remove: half a mention, instead of none.
    assert plain["p"].signals["entity_overlap"] == 0.0
    assert hop["p"].signals["entity_overlap"] == BRIDGE_MENTION and hop["o"].signals["entity_overlap"] == 0.0


def test_a_bridge_is_no_entity_overlap_when_the_query_names_none() -> None:
    # Entity overlap does not apply to a query that names no entity; a bridge does not make it apply.
    dentist = rec("d", content="Leo sees Dr. Patel.", entities=("mention:leo", "mention:patel"))
    phone = rec("p", content="Dr. Patel's phone is 503-555-0142.", entities=("mention:patel",))
    out = {s.record.id: s for s in rank(
        [dentist, phone], query_vec=None, vectors={}, query_entities=(), time_range=None, now=NOW,
        weights=EXPLORATORY, keyword_scores={"d": 0.8, "p": 0.2}, sources={}, source_ranks={},
        config=RetrievalConfig(), bridges={"p": (0.4, "mention:patel")},
    ).scored()}
    assert out["p"].signals["entity_overlap"] == 0.0
    assert "entity_overlap" not in out["p"].weights or out["p"].weights["entity_overlap"] == 0.0


def test_a_query_entity_no_candidate_names_gives_its_weight_back() -> None:
    # "How many albums or EPs did I buy?": no memory carries "EPs" as an entity, so entity overlap
    # is no evidence; it must not lower every score towards min_score.
    records = [rec("a", entities=()), rec("b", entities=("mention:bob",))]
    kw = {"a": 0.6, "b": 0.3}
    plain = {s.record.id: s for s in run(records, keyword_scores=kw)}
    unknown = {s.record.id: s for s in run(records, keyword_scores=kw, query_entities=("mention:eps",))}
    assert unknown["a"].score == pytest.approx(plain["a"].score)
    assert unknown["a"].weights["entity_overlap"] == 0.0
    known = {s.record.id: s for s in run(records, keyword_scores=kw, query_entities=("mention:bob",))}
    assert known["a"].weights["entity_overlap"] > 0 and known["b"].score > plain["b"].score



def test_min_score_keeps_what_the_query_time_scope_points_at() -> None:
    week = TimeRange(NOW - timedelta(days=7), NOW, "a week ago")
    inside = Scored(record=rec("in", created_at=NOW - timedelta(days=3)), score=0.05)
    outside = Scored(record=rec("out", created_at=NOW - timedelta(days=60)), score=0.05)
    nothing = Scored(record=rec("zero", created_at=NOW - timedelta(days=2)), score=0.0)
    kept, dropped = apply_min_score([inside, outside, nothing], 0.1, time_range=week)
    assert [s.record.id for s in kept] == ["in"] and dropped == 2
    # A vague scope ("recently") is a preference, not a scope: the floor applies as without one.
    vague = TimeRange(NOW - timedelta(days=7), NOW, "recently", vague=True)
    assert apply_min_score([inside, outside], 0.1, time_range=vague) == ([], 2)


def test_a_second_ranking_sharing_what_the_first_computed_scores_as_a_fresh_one() -> None:
    """The second hop ranks again with a ``Known`` from the first: signals already computed are
    reused, and entity overlap is computed again once another query entity is seen speaking."""
    caroline = rec("c", content="I researched adoption agencies.", role="Caroline", entities=("mention:caroline",))
    melanie = rec("m", content="Caroline told me about agencies.", role="Melanie", entities=("mention:caroline",))
    later = rec("l", content="Caroline again.", role="Caroline", entities=("mention:caroline",))
    vectors = {"c": cosine_vec(0.6), "m": cosine_vec(0.5), "l": cosine_vec(0.4)}

    def ranked(records: list[MemoryRecord], speakers: dict[str, str], known: Known | None) -> list[Scored]:
        return rank(
            records, query_vec=Q, vectors=vectors, query_entities=("mention:caroline",), time_range=None, now=NOW,
            weights=EXPLORATORY, keyword_scores={"c": 0.4, "m": 0.9}, sources={}, source_ranks={},
            config=RetrievalConfig(), speakers=speakers, known=known,
        ).scored()

    def view(items: list[Scored]) -> list[tuple[str, float, dict[str, float]]]:
        return [(s.record.id, s.score, dict(s.signals)) for s in items]

    known = Known()
    first = ranked([caroline, melanie], {}, known)
    assert view(first) == view(ranked([caroline, melanie], {}, None))
    # The hop adds a memory Caroline said: she now speaks, so Melanie's mention of her counts half.
    said = {"c": "mention:caroline", "l": "mention:caroline"}
    second = ranked([caroline, melanie, later], said, known)
    assert view(second) == view(ranked([caroline, melanie, later], said, None))
    assert {s.record.id: s.signals["entity_overlap"] for s in second} == {"c": 1.0, "m": 0.5, "l": 1.0}
    assert {s.record.id: s.signals["entity_overlap"] for s in first} == {"c": 1.0, "m": 1.0}


def test_a_second_ranking_that_reads_a_short_name_otherwise_scores_as_a_fresh_one() -> None:
    # "Mel" reads as Melanie while she is the only speaker it begins; once Melvin speaks too, it is
    # ambiguous and stays "mel": what the first ranking computed must not be reused.
    a = rec("a", content="My wedding was five years ago.", entities=("mention:melanie",))
    b = rec("b", content="Mel, Melanie and Melvin went hiking.", entities=("mention:mel", "mention:melanie"))
    c = rec("c", content="I fixed the bike.", entities=("mention:melvin",))

    def overlaps(records: list[MemoryRecord], speakers: dict[str, str], known: Known | None) -> dict[str, float]:
        return {s.record.id: s.signals["entity_overlap"] for s in rank(
            records, query_vec=None, vectors={}, query_entities=("mention:mel", "mention:melanie"), time_range=None,
            now=NOW, weights=EXPLORATORY, keyword_scores={"a": 0.3, "b": 0.3, "c": 0.3}, sources={}, source_ranks={},
            config=RetrievalConfig(), speakers=speakers, known=known,
        ).scored()}

    known = Known()
    assert overlaps([a, b], {"a": "mention:melanie"}, known) == {"a": 1.0, "b": 0.5}
    # Melanie speaks in both rankings (the same voices); only how "mel" reads changed.
    both = {"a": "mention:melanie", "c": "mention:melvin"}
    assert overlaps([a, b, c], both, known) == overlaps([a, b, c], both, None) == {"a": 0.5, "b": 0.75, "c": 0.0}


def test_explaining_the_unexplained_items_gives_what_scored_gives() -> None:
    """A retrieval explains only the items it returns; each reads as if all had been explained."""
    records = [
        rec("a", content="Leo sees Dr. Patel.", entities=("mention:leo",), created_at=NOW - timedelta(days=2)),
        rec("b", content="Patel moved.", entities=("mention:patel",), kind="summary"),
        rec("c", content="Nothing here."),
    ]
    ranking = rank(
        records, query_vec=Q, vectors={r.id: cosine_vec(0.3 + 0.2 * i) for i, r in enumerate(records)},
        query_entities=("mention:leo",), time_range=TimeRange(NOW - timedelta(days=7), NOW, "last week"), now=NOW,
        weights=EXPLORATORY, keyword_scores={"a": 0.5}, sources={"a": ["keyword", "semantic"], "b": ["summary"]},
        source_ranks={}, config=RetrievalConfig(), bridges={"b": (0.3, "mention:patel")},
    )
    plain = ranking.unexplained()
    assert [s.record.id for s in plain] == [s.record.id for s in ranking.scored()]
    assert all(not s.signals and not s.reasons and not s.weights for s in plain)

    def view(items: list[Scored]) -> list[tuple[Any, ...]]:
        return [(s.record.id, s.score, dict(s.signals), dict(s.weights), s.reasons, s.tier) for s in items]

    assert view(ranking.explained(plain)) == view(ranking.scored())
    # In any order and after a tier change, each item keeps its own explanation.
    shuffled = [replace(plain[2], tier=1), plain[0]]
    scored = {s.record.id: s for s in ranking.scored()}
    assert view(ranking.explained(shuffled)) == view([replace(scored[plain[2].record.id], tier=1),
                                                      scored[plain[0].record.id]])
    assert any("in time range" in r for r in scored["a"].reasons)


class TestScoresWithoutCeiling:
    """Scores keep the order of their evidence: no two memories tie at a ceiling, and the id never
    decides between memories whose evidence differs."""

    def test_clear_matches_keep_their_order_below_one(self) -> None:
        # Cosines 0.70, 0.80 and 0.95 are all past the range's top (0.65): once all three scored 1.0,
        # ordered by id ("a" first); now by how close each is.
        records = [rec("a"), rec("b"), rec("c")]
        vectors = {"a": cosine_vec(0.70), "b": cosine_vec(0.80), "c": cosine_vec(0.95)}
        scored = run(records, RetrievalConfig(search_type="semantic"), query_vec=Q, vectors=vectors)
        assert [s.record.id for s in scored] == ["c", "b", "a"]
        scores = [s.score for s in scored]
        assert scores[0] > scores[1] > scores[2]
        assert all(0.8 < score < 1.0 for score in scores)

    def test_context_gain_lifts_past_a_full_match(self) -> None:
        # Equal keyword relevance (a full match each); "b"'s neighbour is relevant too.
        records = [rec("a", session_id="s", role="Jon"), rec("b", session_id="s", role="Gina"),
                   rec("n", session_id="s", role="Jon")]
        ranking = rank(
            records, query_vec=None, vectors={}, query_entities=(), time_range=None, now=NOW,
            weights=EXPLORATORY, keyword_scores={"a": 1.0, "b": 1.0, "n": 0.9}, sources={}, source_ranks={},
            config=RetrievalConfig(search_type="keyword"), neighbors={"b": ("n",)},
        )
        scored = ranking.scored()
        assert scored[0].record.id == "b"
        assert scored[0].score > scored[1].score

    def test_displayed_is_identity_below_the_knee_and_never_reaches_one(self) -> None:
        strengths = np.array([0.0, 0.1, 0.5, SCORE_KNEE, 0.9, 1.0, 2.0, 4.0])
        shown = displayed(strengths)
        assert shown[:4].tolist() == pytest.approx(strengths[:4].tolist())
        assert all(np.diff(shown) > 0)
        assert shown.max() < 1.0


def test_a_long_memory_keeps_less_of_its_keyword_evidence_a_persons_own_more() -> None:
    # A 2,000-character answer holds many of a query's words by chance: at the same keyword score
    # as a short message it keeps (KEYWORD_LENGTH / 2000) ** KEYWORD_LENGTH_POWER of it.
    text = "graduation " + "x" * (2000 - len("graduation "))
    short = rec("short", content="graduation ceremony", role="assistant")
    long = rec("long", content=text, role="assistant")
    limit = rec("limit", content="y" * KEYWORD_LENGTH, role="assistant")
    # What a person pasted or wrote keeps more of it (a rare word in a long itinerary is what it was
    # kept for); a note stored without a role, a summary or a tool's output is read as the answer is.
    pasted, friend = rec("pasted", content=text, role="user"), rec("friend", content=text, role="Priya")
    note, tool = rec("note", content=text), rec("tool", content=text, role="tool")
    scores = dict.fromkeys(("short", "long", "limit", "pasted", "friend", "note", "tool"), 0.6)
    out = {s.record.id: s for s in run([short, long, limit, pasted, friend, note, tool], keyword_scores=scores)}
    for full in ("short", "limit"):
        assert out[full].signals["keyword_relevance"] == pytest.approx(1.0)
    kept = (KEYWORD_LENGTH / 2000) ** KEYWORD_LENGTH_POWER
    for answer in ("long", "note", "tool"):
        assert out[answer].signals["keyword_relevance"] == pytest.approx(kept)
    own = (KEYWORD_LENGTH / 2000) ** KEYWORD_LENGTH_POWER_OWN
    assert out["pasted"].signals["keyword_relevance"] == pytest.approx(own) and own > kept
    assert out["friend"].signals["keyword_relevance"] == pytest.approx(own)
    assert out["long"].score < out["short"].score


def test_a_short_name_of_a_speaker_is_that_speaker() -> None:
    speakers = frozenset({"mention:melanie", "mention:caroline"})
    assert as_speakers(("mention:mel", "mention:kids"), speakers) == ("mention:melanie", "mention:kids")
    assert as_speakers(("mention:caro",), speakers) == ("mention:caroline",)
    # Too short, ambiguous, not a prefix at a letter, or already a speaker: as it was.
    assert as_speakers(("mention:me",), speakers) == ("mention:me",)
    assert as_speakers(("mention:mel",), speakers | {"mention:melvin"}) == ("mention:mel",)
    assert as_speakers(("mention:melanie",), speakers) == ("mention:melanie",)
    assert as_speakers(("customer:mel",), speakers) == ("customer:mel",)
    # A speaker's full name begins with the short one too.
    assert as_speakers(("mention:mel",), frozenset({"mention:melanie smith"})) == ("mention:melanie smith",)
    # Not a name the speaker's own turns use: Annabel's "my aunt Ann" is someone else.
    annabel = frozenset({"mention:annabel", "mention:bob"})
    assert as_speakers(("mention:ann",), annabel, {"mention:annabel": {"mention:ann"}}) == ("mention:ann",)
    assert as_speakers(("mention:ann",), annabel, {"mention:bob": {"mention:ann"}}) == ("mention:annabel",)


def test_a_question_about_mel_is_about_what_melanie_says() -> None:
    hers = rec("h", content="5 years already! Feels like yesterday I put this dress on.", entities=("mention:melanie",))
    other = rec("o", content="Married life suits you both, five years is lovely.", entities=("mention:caroline",))
    ranked = {s.record.id: s for s in rank(
        [hers, other], query_vec=None, vectors={}, query_entities=("mention:mel",), time_range=None, now=NOW,
        weights=EXPLORATORY, keyword_scores={"h": 0.3, "o": 0.3}, sources={}, source_ranks={},
        config=RetrievalConfig(), speakers={"h": "mention:melanie", "o": "mention:caroline"},
    ).scored()}
    assert ranked["h"].signals["entity_overlap"] == 1.0 and ranked["o"].signals["entity_overlap"] == 0.0
    assert "mentions mention:melanie" in ranked["h"].reasons and ranked["h"].score > ranked["o"].score
    # "What did Mel say ...?" asks for Melanie's words.
    spoken = {s.record.id: s for s in rank(
        [hers, other], query_vec=None, vectors={}, query_entities=("mention:mel",), time_range=None, now=NOW,
        weights=EXPLORATORY, keyword_scores={"h": 0.3, "o": 0.3}, sources={}, source_ranks={},
        config=RetrievalConfig(), speakers={"h": "mention:melanie", "o": "mention:caroline"}, speaking=("mention:mel",),
    ).scored()}
    assert spoken["h"].signals["voice"] == 1.0 and spoken["o"].signals["voice"] == 0.0


def test_a_short_memory_meaning_nothing_like_the_query_keeps_little_of_a_weak_keyword_match() -> None:
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    about = np.array([0.6, 0.8, 0.0], dtype=np.float32)  # cosine 0.6: it means what the query asks
    other = np.array([0.0, 1.0, 0.0], dtype=np.float32)  # cosine 0: about something else
    long_text = "First day at the new job. " * 10
    records = [rec("about", content="We got engaged on the 20th!"), rec("other", content="First day tomorrow."),
               rec("strong", content="Ticket PAY-1234 first day."), rec("long", content=long_text),
               rec("unread", content="First day tomorrow.")]
    vectors = {"about": about, "other": other, "strong": other, "long": other}
    half, full = KEYWORD_FULL_SHARE / 2, KEYWORD_FULL_SHARE  # keyword evidence 0.5 and 1.0
    scores = {"about": half, "other": half, "strong": full, "long": half, "unread": half}
    out = {s.record.id: s.signals["keyword_relevance"] for s in run(records, query_vec=query, vectors=vectors,
                                                                     keyword_scores=scores)}
    assert len(long_text) > SHORT_TEXT
    assert out["about"] == pytest.approx(0.5)  # meaning enough: as read against the best match
    assert out["other"] == 0.0  # one ordinary word of the question, in a short text about something else
    assert out["strong"] == pytest.approx(1.0)  # a strong match keeps its weight whatever the meaning
    assert out["long"] > 0.0  # a long text's vector averages many things: little meaning is no evidence
    assert out["unread"] == pytest.approx(0.5)  # no vector, no meaning to read
    # With no query vector (a keyword search), every keyword match counts as it is.
    plain = {s.record.id: s.signals["keyword_relevance"] for s in run(records, vectors=vectors, keyword_scores=scores)}
    assert plain["other"] == pytest.approx(0.5)
