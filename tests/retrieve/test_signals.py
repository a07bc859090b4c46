from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.model import TimeRange
from engram.retrieve.signals import (
    SUMMARY_BOOST,
    calibrated_similarity,
    entity_overlap,
    keyword_relevance,
    reinforcement,
    semantic_similarity,
    temporal_relevance,
    type_boost,
)

NOW = datetime(2024, 2, 15, 12, 0, tzinfo=UTC)
JAN = TimeRange(datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 31, 23, 59, tzinfo=UTC), "last month")


def unit(values: list[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


class TestSemantic:
    def test_identical_is_one(self) -> None:
        v = unit([1, 2, 3])
        assert semantic_similarity(v, v) == pytest.approx(1.0, abs=1e-6)

    def test_known_angle(self) -> None:
        # 60 degrees apart -> cos = 0.5
        a = unit([1, 0])
        b = unit([0.5, math.sqrt(3) / 2])
        assert semantic_similarity(a, b) == pytest.approx(0.5, abs=1e-6)

    def test_negative_clamped_to_zero(self) -> None:
        a = unit([1, 0])
        assert semantic_similarity(a, -a) == 0.0

    def test_zero_vector_and_none(self) -> None:
        a = unit([1, 0])
        assert semantic_similarity(a, np.zeros(2, dtype=np.float32)) == 0.0
        assert semantic_similarity(np.zeros(2, dtype=np.float32), a) == 0.0
        assert semantic_similarity(a, None) == 0.0
        assert semantic_similarity(None, a) == 0.0

    @given(
        st.lists(st.floats(-10, 10), min_size=3, max_size=3),
        st.lists(st.floats(-10, 10), min_size=3, max_size=3),
    )
    def test_always_in_unit_interval(self, a: list[float], b: list[float]) -> None:
        va, vb = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
        na, nb = np.linalg.norm(va), np.linalg.norm(vb)
        if na > 0:
            va = va / na
        if nb > 0:
            vb = vb / nb
        assert 0.0 <= semantic_similarity(va, vb) <= 1.0


class TestEntityOverlap:
    def test_fraction_of_query(self) -> None:
        assert entity_overlap(["a", "b", "c", "d"], ["b", "d", "x"]) == 0.5

    def test_full_and_empty(self) -> None:
        assert entity_overlap(["a"], ["a", "b"]) == 1.0
        assert entity_overlap([], ["a"]) == 0.0
        assert entity_overlap(["a"], []) == 0.0
        assert entity_overlap(["a"], ["b"]) == 0.0


class TestTemporal:
    def test_inside_range_is_one(self) -> None:
        assert temporal_relevance(datetime(2024, 1, 15, tzinfo=UTC), JAN, NOW) == 1.0
        assert temporal_relevance(JAN.start, JAN, NOW) == 1.0
        assert temporal_relevance(JAN.end, JAN, NOW) == 1.0

    def test_ten_days_after_range(self) -> None:
        created = JAN.end + timedelta(days=10, hours=1)
        assert temporal_relevance(created, JAN, NOW) == pytest.approx(math.exp(-1.0))

    def test_ten_days_before_range_uses_nearer_edge(self) -> None:
        created = JAN.start - timedelta(days=10)
        assert temporal_relevance(created, JAN, NOW) == pytest.approx(math.exp(-1.0))

    def test_hours_outside_count_as_zero_days(self) -> None:
        # abs(timedelta).days: 5 hours before the start is 0 whole days away.
        created = JAN.start - timedelta(hours=5)
        assert temporal_relevance(created, JAN, NOW) == 1.0

    def test_no_range_recency(self) -> None:
        assert temporal_relevance(NOW - timedelta(days=100), None, NOW) == pytest.approx(math.exp(-1.0))
        assert temporal_relevance(NOW, None, NOW) == 1.0

    def test_future_memory_is_not_above_one(self) -> None:
        assert temporal_relevance(NOW + timedelta(days=3), None, NOW) == 1.0

    def test_decays_monotonically(self) -> None:
        values = [temporal_relevance(NOW - timedelta(days=d), None, NOW) for d in range(0, 400, 20)]
        assert values == sorted(values, reverse=True)


class TestReinforcement:
    def test_formula(self) -> None:
        assert reinforcement(0) == 0.0
        assert reinforcement(10) == pytest.approx(math.log(11) / 5)

    def test_saturates_at_e5_minus_1(self) -> None:
        n = math.ceil(math.exp(5) - 1)  # 148
        assert reinforcement(n) == 1.0
        assert reinforcement(10**6) == 1.0
        assert reinforcement(n - 2) < 1.0

    def test_negative_count_is_zero(self) -> None:
        assert reinforcement(-5) == 0.0


class TestKeywordAndBoost:
    def test_keyword_is_a_share_of_the_query(self) -> None:
        assert keyword_relevance(0.25) == 0.25
        assert keyword_relevance(1.0) == 1.0

    def test_keyword_missing(self) -> None:
        assert keyword_relevance(None) == 0.0

    def test_keyword_clamped(self) -> None:
        assert keyword_relevance(2.0) == 1.0
        assert keyword_relevance(-2.0) == 0.0
        assert keyword_relevance(float("nan")) == 0.0

    def test_calibrated_similarity(self) -> None:
        assert calibrated_similarity(0.15) == 0.0
        assert calibrated_similarity(0.4) == pytest.approx(0.5)
        assert calibrated_similarity(0.9) == 1.0
        assert calibrated_similarity(0.8, (0.7, 0.9)) == pytest.approx(0.5)  # an E5-like model

    def test_type_boost(self) -> None:
        assert SUMMARY_BOOST == 1.15
        assert type_boost("summary") == 1.15
        for kind in ("message", "fact", "episode", "procedure", "document", "chunk"):
            assert type_boost(kind) == 1.0


def test_a_query_entity_that_speaks_counts_fully_only_in_its_own_memories() -> None:
    from engram.retrieve.signals import SPEAKER_MENTION

    voices = frozenset({"mention:caroline", "mention:melanie"})
    # Caroline's own turn vs Melanie's turn naming her, for "What did Caroline research?"
    assert entity_overlap(["mention:caroline"], ["mention:caroline"], speaker="mention:caroline",
                          speakers=voices) == 1.0
    assert entity_overlap(["mention:caroline"], ["mention:melanie", "mention:caroline"], speaker="mention:melanie",
                          speakers=voices) == SPEAKER_MENTION
    # "What did Melanie say about Caroline?": Melanie's turn naming Caroline beats Caroline's own turn.
    asked = ["mention:melanie", "mention:caroline"]
    assert entity_overlap(asked, ["mention:melanie", "mention:caroline"], speaker="mention:melanie",
                          speakers=voices) > entity_overlap(asked, ["mention:caroline"], speaker="mention:caroline",
                                                            speakers=voices)
    # An entity nobody speaks as counts fully wherever it is named.
    assert entity_overlap(["mention:paris"], ["mention:melanie", "mention:paris"], speaker="mention:melanie",
                          speakers=voices) == 1.0


def test_the_pipeline_knows_who_said_each_memory(tmp_path: object, embedder: object) -> None:
    from datetime import UTC, datetime, timedelta
    from pathlib import Path

    from engram import Memory, RetrievalConfig
    from engram.retrieve.signals import SPEAKER_MENTION

    now = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    with Memory(Path(str(tmp_path)) / "talk.db", embedder=embedder) as memory:  # type: ignore[arg-type]
        memory.add([
            {"role": "Melanie", "content": "Caroline keeps reading about adoption agencies.",
             "created_at": now - timedelta(minutes=2)},
            {"role": "Caroline", "content": "I keep reading about adoption agencies.",
             "created_at": now - timedelta(minutes=1)},
        ], user_id="u", run_id="s1")
        result = memory.retrieve("What has Caroline been reading about?", user_id="u", now=now,
                                 config=RetrievalConfig(top_k=2))
        by_text = {m.content: m for m in result.memories}
        own, told = by_text["I keep reading about adoption agencies."], by_text[
            "Caroline keeps reading about adoption agencies."]
        assert own.signals["entity_overlap"] == 1.0 and told.signals["entity_overlap"] == SPEAKER_MENTION
