"""Salience is derived at read time: bounded, pure, and never able to outweigh strong relevance."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram import Memory
from engram.errors import ConfigError, MemoryNotFound
from engram.ext import Embedder
from engram.model import KINDS, MemoryRecord
from engram.recall import recall
from engram.salience import (
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_OPTIONS,
    RecallOptions,
    SalienceConfig,
    combined_score,
    memory_salience,
    salience,
    salience_parts,
)

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)


def make(kind: str = "fact", importance: float = 0.5, age_days: float = 0.0, access: int = 0) -> MemoryRecord:
    created = NOW - timedelta(days=age_days)
    return MemoryRecord(
        id="01TEST", user_id="u1", content="x", kind=kind, created_at=created, recorded_at=created,
        content_hash="h", importance=importance, access_count=access,
    )


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=embedder) as m:
        yield m


def test_half_lives_per_kind_cover_every_kind() -> None:
    assert set(DEFAULT_HALF_LIFE_DAYS) == set(KINDS)
    assert DEFAULT_HALF_LIFE_DAYS["message"] < DEFAULT_HALF_LIFE_DAYS["episode"] < DEFAULT_HALF_LIFE_DAYS["fact"]
    assert DEFAULT_HALF_LIFE_DAYS["procedure"] == 365


def test_formula_at_known_points() -> None:
    fresh = salience_parts(make(importance=1.0, age_days=0, access=50), now=NOW)
    assert fresh.recency == pytest.approx(1.0) and fresh.access == pytest.approx(1.0)
    assert fresh.value == pytest.approx(1.0)
    half = salience_parts(make(kind="message", importance=0.0, age_days=14), now=NOW)
    assert half.recency == pytest.approx(0.5)
    assert half.value == pytest.approx(0.3 * 0.5)
    assert salience(make(importance=0.0, age_days=10_000, access=0), now=NOW) == pytest.approx(0.0, abs=1e-6)


def test_access_is_logarithmic_and_saturates() -> None:
    parts = [salience_parts(make(access=n), now=NOW).access for n in (0, 1, 2, 10, 50, 10_000)]
    assert parts[0] == 0.0 and parts[-2] == pytest.approx(1.0) and parts[-1] == 1.0
    assert parts[2] - parts[1] < parts[1] - parts[0]  # the second access adds less than the first


def test_future_creation_counts_as_new() -> None:
    assert salience_parts(make(age_days=-3), now=NOW).recency == 1.0


@settings(max_examples=300, deadline=None)
@given(
    importance=st.floats(0, 1),
    age=st.floats(-30, 100_000),
    access=st.integers(0, 10**9),
    kind=st.sampled_from(KINDS),
)
def test_salience_bounded_and_pure(importance: float, age: float, access: int, kind: str) -> None:
    record = make(kind, importance, age, access)
    first = salience(record, now=NOW)
    assert 0.0 <= first <= 1.0
    assert salience(record, now=NOW) == first  # computing it again changes nothing


@settings(max_examples=300, deadline=None)
@given(
    a=st.tuples(st.floats(0, 1), st.floats(0, 50_000), st.integers(0, 10**6), st.sampled_from(KINDS)),
    b=st.tuples(st.floats(0, 1), st.floats(0, 50_000), st.integers(0, 10**6), st.sampled_from(KINDS)),
)
def test_salience_never_outweighs_a_strong_relevance_match(
    a: tuple[float, float, int, str], b: tuple[float, float, int, str]
) -> None:
    strong = salience(make(a[3], a[0], a[1], a[2]), now=NOW)
    weak = salience(make(b[3], b[0], b[1], b[2]), now=NOW)
    assert combined_score(0.9, strong) > combined_score(0.35, weak)
    # Worst case of all: no salience at all against full salience.
    assert combined_score(0.9, 0.0) > combined_score(0.35, 1.0)


@settings(max_examples=300, deadline=None)
@given(s1=st.floats(0.3, 1), s2=st.floats(0.3, 1), v1=st.floats(0, 1), v2=st.floats(0, 1))
def test_similarity_beyond_max_lift_always_wins(s1: float, s2: float, v1: float, v2: float) -> None:
    if s1 > s2 * DEFAULT_OPTIONS.max_lift * (1 + 1e-9):
        assert combined_score(s1, v1) > combined_score(s2, v2)


@given(sim=st.floats(0.3, 1), low=st.floats(0, 1), high=st.floats(0, 1))
def test_salience_breaks_ties_between_equally_similar_matches(sim: float, low: float, high: float) -> None:
    if high > low + 1e-9:  # below that the difference vanishes in float rounding
        assert combined_score(sim, high) > combined_score(sim, low)


def test_plain_seed_sum_would_let_salience_win() -> None:
    # Why the combination differs from seed 004: its plain sum ranks the weak match first.
    assert 0.6 * 0.35 + 0.4 * 1.0 > 0.6 * 0.9 + 0.4 * 0.0
    assert combined_score(0.9, 0.0) > combined_score(0.35, 1.0)


def test_many_tracked_recalls_do_not_ratchet(memory: Memory) -> None:
    record = memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact", importance=0.6,
                        created_at=NOW - timedelta(days=20))
    seen = []
    for _ in range(60):
        result = recall(memory, "How does Acme pay?", user_id="u1", now=NOW)
        assert result.count == 1
        stored = memory.get(record.id, user_id="u1")
        value = memory_salience(memory, record.id, user_id="u1", now=NOW)
        assert 0.0 <= value <= 1.0
        # A pure function of the stored row and now: recomputing from the fields gives the same number.
        assert value == salience(stored, now=NOW)
        assert value == salience(replace(record, access_count=stored.access_count), now=NOW)
        seen.append(value)
    assert memory.get(record.id, user_id="u1").access_count == 60
    assert seen == sorted(seen)  # only access grew, and its term is capped
    assert seen[-1] <= 0.5 * 0.6 + 0.3 * 1.0 + 0.2 * 1.0
    assert seen[-1] - seen[-11] < 0.01  # saturating: ten more recalls barely move it


def test_memory_salience_is_scoped_to_the_user(memory: Memory) -> None:
    record = memory.add("private note", user_id="u1")
    with pytest.raises(MemoryNotFound):
        memory_salience(memory, record.id, user_id="u2")


@pytest.mark.parametrize(
    "changes",
    [
        {"importance_weight": 0.6},  # weights no longer sum to 1
        {"importance_weight": -0.1, "recency_weight": 0.9},
        {"recency_weight": math.nan},
        {"half_life_days": {"fact": 0}},
        {"half_life_days": {"fact": math.inf}},
        {"half_life_days": {"nonsense": 3}},
        {"default_half_life_days": -1},
        {"access_saturation": 0},
        {"access_saturation": True},
    ],
)
def test_salience_config_validated(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        SalienceConfig(**changes)  # type: ignore[arg-type]


def test_salience_config_frozen_and_overrides_merge() -> None:
    source = {"fact": 90.0}
    config = SalienceConfig(half_life_days=source)
    source["fact"] = 1.0
    assert config.half_life("fact") == 90.0 and config.half_life("message") == 14.0
    with pytest.raises(AttributeError):
        config.recency_weight = 0.5  # type: ignore[misc]
    assert hash(config) == hash(SalienceConfig(half_life_days={"fact": 90.0}))


@pytest.mark.parametrize(
    "changes",
    [
        {"similarity_weight": 0.0},
        {"similarity_weight": 1.5},
        {"salience_weight": -0.1},
        {"min_similarity": 2},
        {"candidate_multiplier": 0},
        {"candidate_multiplier": 2.5},
        {"track_access": "yes"},
        {"salience": {"importance_weight": 1}},
    ],
)
def test_recall_options_validated(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RecallOptions(**changes)  # type: ignore[arg-type]


def test_recall_options_defaults_are_the_seeds() -> None:
    options = RecallOptions()
    # The similarity floor follows the embedder's scale (its "unrelated" level), not the seed's 0.3.
    assert (options.similarity_weight, options.salience_weight, options.min_similarity) == (0.6, 0.4, None)
    assert options.candidate_multiplier == 3 and options.track_access is True
    assert options.max_lift == pytest.approx(5 / 3)
