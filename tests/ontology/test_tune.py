"""Learned weights: coordinate ascent on NDCG beats the defaults on held-back feedback, never loses to
them, and stays on the simplex; retrieval then uses the tuned weights and says so."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from engram import Memory, RetrievalConfig
from engram.config import SIGNALS, STRATEGY_WEIGHTS
from engram.ext import Embedder, Store
from engram.model import LoggedItem, LoggedRetrieval
from engram.tune import Example, fit, ndcg
from engram.tune_cli import tune_command

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STRATEGY = "factual_entity_focused"
DEFAULTS = STRATEGY_WEIGHTS[STRATEGY]
Signals = dict[str, float]


def default_score(signals: Signals) -> float:
    return sum(DEFAULTS[s] * signals[s] for s in SIGNALS)


def synthetic(
    n: int, predictor: Callable[[Signals], float], *, seed: int, start: int = 0, items: int = 8, used: int = 2,
    strategy: str = STRATEGY,
) -> list[LoggedRetrieval]:
    """Retrievals returned in the defaults' order whose top ``used`` memories by ``predictor`` were used."""
    rng = random.Random(seed)
    out: list[LoggedRetrieval] = []
    for i in range(start, start + n):
        drawn = [{s: rng.random() for s in (*SIGNALS, "keyword_relevance")} for _ in range(items)]
        drawn.sort(key=default_score, reverse=True)
        logged = tuple(LoggedItem(f"m{i}-{j}", "message", sig) for j, sig in enumerate(drawn))
        chosen = sorted(range(items), key=lambda j: predictor(drawn[j]), reverse=True)[:used]
        out.append(LoggedRetrieval(
            id=f"r{i:05d}", query=f"q{i}", category="factual", strategy=strategy,
            created_at=T0 + timedelta(minutes=i), items=logged,
            settings={"searchType": "hybrid", "keywordWeight": 0.25, "fusion": "signals"},
            used=tuple(logged[j].id for j in chosen),
        ))
    return out


def examples(log: list[LoggedRetrieval]) -> list[Example]:
    return [e for e in (Example.from_log(entry) for entry in log) if e is not None]


def recency(signals: Signals) -> float:
    return signals["temporal_relevance"]


def test_tuned_weights_beat_the_defaults_on_held_back_feedback() -> None:
    (result,) = fit(examples(synthetic(200, recency, seed=1)))
    assert result.kept and result.evaluated and (result.train_examples, result.holdout_examples) == (140, 60)
    default_held, tuned_held = result.holdout_ndcg
    assert tuned_held > default_held + 0.1
    assert max(result.weights, key=lambda s: result.weights[s]) == "temporal_relevance"
    # The report's numbers are what re-ranking the held-back part gives.
    held = examples(synthetic(200, recency, seed=1))[140:]
    assert ndcg(held, result.weights) == pytest.approx(tuned_held)
    assert ndcg(held, DEFAULTS) == pytest.approx(default_held)


def test_never_worse_than_the_defaults_on_held_back() -> None:
    # Recency predicted use in the past, entities do now: what was learned does not carry over.
    def entities(signals: Signals) -> float:
        return signals["entity_overlap"]

    log = synthetic(140, recency, seed=2) + synthetic(60, entities, seed=3, start=140)
    (result,) = fit(examples(log))
    assert result.train_ndcg[1] > result.train_ndcg[0]  # it did learn the past...
    assert not result.kept and result.weights == dict(DEFAULTS)  # ...and the guard kept the defaults


def test_too_little_feedback_keeps_the_defaults() -> None:
    (result,) = fit(examples(synthetic(10, recency, seed=4)))
    assert not result.kept and not result.evaluated and result.weights == dict(DEFAULTS)


def test_retrievals_that_cannot_teach_are_skipped() -> None:
    log = synthetic(3, recency, seed=5)
    assert Example.from_log(LoggedRetrieval(**{**_fields(log[0]), "used": ()})) is None
    assert Example.from_log(LoggedRetrieval(**{**_fields(log[1]), "settings": {"fusion": "rrf"}})) is None
    assert Example.from_log(log[2]) is not None


def _fields(entry: LoggedRetrieval) -> dict[str, object]:
    return {name: getattr(entry, name) for name in LoggedRetrieval.__dataclass_fields__}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(20, 60),
    target=st.sampled_from([*SIGNALS, "keyword_relevance"]),
    noise=st.floats(0.0, 2.0),
    strategy=st.sampled_from(sorted(STRATEGY_WEIGHTS)),
)
def test_weights_stay_on_the_simplex_and_never_lose_on_held_back(
    seed: int, n: int, target: str, noise: float, strategy: str
) -> None:
    rng = random.Random(seed)

    def predictor(signals: Signals) -> float:
        return signals[target] + noise * rng.random()

    (result,) = fit(examples(synthetic(n, predictor, seed=seed, strategy=strategy)), min_examples=20)
    assert set(result.weights) == set(SIGNALS)
    assert all(w >= 0.0 for w in result.weights.values())
    assert sum(result.weights.values()) == pytest.approx(1.0, abs=1e-9)
    if result.kept:
        assert result.holdout_ndcg[1] > result.holdout_ndcg[0]
    else:
        assert result.weights == dict(STRATEGY_WEIGHTS[strategy])


# -- end to end: the store's log, Memory.tune, retrieval with tuned weights, the CLI ---------------------
def _seed_log(store: Store, user: str, log: list[LoggedRetrieval]) -> None:
    for entry in log:
        store.log_retrieval(user, LoggedRetrieval(**{**_fields(entry), "used": ()}))
        store.record_feedback(user, entry.id, entry.used, entry.created_at)


@pytest.fixture
def memory(store: Store, embedder: Embedder) -> Iterator[Memory]:
    yield Memory(store=store, embedder=embedder)


def test_memory_tune_saves_and_retrieval_uses_tuned_weights(memory: Memory) -> None:
    memory.add_entity("customer:acme", user_id="maya", name="Acme Corporation", aliases=["Acme"])
    memory.add("Acme Corporation prefers NET30 payment terms", user_id="maya", entities=["customer:acme"])
    query, config = "What payment terms does Acme prefer?", RetrievalConfig(cache_ttl=0, min_score=0.0)
    before = memory.retrieve(query, user_id="maya", config=config)
    assert before.metadata.strategy == STRATEGY and before.metadata.config["weightsSource"] == "default"
    _seed_log(memory.store, "maya", synthetic(100, recency, seed=6))
    report = memory.tune(user_id="maya", dry_run=True)
    assert report.fits[0].kept and memory.store.load_weights("maya") == {}
    report = memory.tune(user_id="maya")
    tuned = memory.store.load_weights("maya")[STRATEGY]
    assert tuned == pytest.approx(dict(report.fits[0].weights))
    after = memory.retrieve(query, user_id="maya", config=config)
    assert after.metadata.config["weightsSource"] == "tuned"
    assert after.to_dict()["metadata"]["config"]["weightsSource"] == "tuned"
    entry = after.memories[0]
    # No time scope in the query: temporal relevance gives its weight back, the rest share the whole.
    applied = sum(tuned.get(s, 0.0) for s in ("semantic_similarity", "entity_overlap", "importance", "reinforcement"))
    assert entry.weights["temporal_relevance"] == 0.0
    assert entry.weights["importance"] == pytest.approx(tuned.get("importance", 0.0) / applied if applied else 0.0)
    logged = memory.store.get_retrieval("maya", after.metadata.retrieval_id or "")
    assert logged is not None and logged.settings["weightsSource"] == "tuned"
    other = memory.retrieve(query, user_id="maya", config=config.with_(weights={"importance": 1.0}))
    assert other.metadata.config["weightsSource"] == "config"


def test_tune_replaces_only_strategies_it_could_evaluate(memory: Memory) -> None:
    memory.store.save_weights("maya", {STRATEGY: {"importance": 1.0}, "procedural": {"reinforcement": 1.0}})

    def entities(signals: Signals) -> float:
        return signals["entity_overlap"]

    _seed_log(memory.store, "maya", synthetic(140, recency, seed=2) + synthetic(60, entities, seed=3, start=140))
    report = memory.tune(user_id="maya")
    assert [(f.strategy, f.evaluated, f.kept) for f in report.fits] == [(STRATEGY, True, False)]
    # Evaluated and not better: back to the defaults. Not evaluated (no feedback): left alone.
    assert memory.store.load_weights("maya") == {"procedural": {"reinforcement": 1.0}}


def test_cli_tune(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with Memory(db) as memory:
        _seed_log(memory.store, "maya", synthetic(60, recency, seed=8))
    runner = CliRunner()
    text = runner.invoke(tune_command, ["--user", "maya", "--db", str(db), "--dry-run"])
    assert text.exit_code == 0, text.output
    assert "factual_entity_focused: tuned" in text.output and "dry run" in text.output
    out = runner.invoke(tune_command, ["--user", "maya", "--db", str(db), "--format", "json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["saved"] and payload["strategies"][0]["kept"]
    with Memory(db) as memory:
        assert STRATEGY in memory.store.load_weights("maya")
    nobody = runner.invoke(tune_command, ["--user", "nobody", "--db", str(db)])
    assert nobody.exit_code == 0 and "nothing to tune, nothing saved" in nobody.output
    assert "\nsaved" not in nobody.output  # issue 16: it said "defaults stay", then "saved"

