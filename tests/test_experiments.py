"""A/B tests of strategy weights: each user ranks under one variant, logged; the report compares the
variants on the feedback to what they served."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram import Memory, RetrievalConfig
from engram.cli import cli
from engram.config import STRATEGY_WEIGHTS
from engram.embedders.fake import FakeEmbedder
from engram.errors import ValidationError
from engram.experiments import Experiment, Variant


def _only(signal: str) -> dict[str, dict[str, float]]:
    return {strategy: {name: float(name == signal) for name in weights}
            for strategy, weights in STRATEGY_WEIGHTS.items()}


#: Arm A ranks by relevance alone, arm B lets importance move it.
ONLY_MEANING = _only("semantic_similarity")
ONLY_IMPORTANCE = _only("importance")
TEST = Experiment("weights-1", (Variant("A", weights=ONLY_MEANING), Variant("B", weights=ONLY_IMPORTANCE)))


def test_assignment_is_stable_balanced_and_independent() -> None:
    users = [f"user-{i}" for i in range(2000)]
    arms = [TEST.assign(u).name for u in users]
    assert arms == [TEST.assign(u).name for u in users]
    assert 0.45 < arms.count("A") / len(arms) < 0.55
    other = Experiment("weights-2", TEST.variants)
    agree = sum(a == other.assign(u).name for a, u in zip(arms, users, strict=True)) / len(users)
    assert 0.45 < agree < 0.55  # a second experiment reshuffles users
    skewed = Experiment("skewed", (Variant("A", share=9), Variant("B", share=1)))
    assert 0.85 < [skewed.assign(u).name for u in users].count("A") / len(users) < 0.95


@pytest.mark.parametrize(("make", "field"), [
    (lambda: Experiment("x", (Variant("A"),)), "experiment.variants"),
    (lambda: Experiment("x", (Variant("A"), Variant("A"))), "experiment.variants"),
    (lambda: Variant("B", weights={"nosuch": {}}), "variants.B.weights.nosuch"),
    (lambda: Variant("B", weights={"exploratory": {"importance": 2.0}}), "variants.B.weights.exploratory.importance"),
    (lambda: Variant("B", weights={"exploratory": {"vibes": 0.5}}), "variants.B.weights.exploratory.vibes"),
    (lambda: Variant("B", share=0), "variants.B.share"),
])
def test_a_bad_experiment_is_refused_by_name(make: object, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        make()  # type: ignore[operator]
    assert refused.value.field == field


def _users(arm: str, n: int) -> list[str]:
    return [u for u in (f"user-{i}" for i in range(200)) if TEST.assign(u).name == arm][:n]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A Memory running ``TEST`` over each backend."""
    if request.param == "sqlite":
        made = Memory(tmp_path / "ab.db", embedder=FakeEmbedder(), experiment=TEST)
    else:
        made = Memory(store=request.getfixturevalue("postgres_store"), embedder=FakeEmbedder(), experiment=TEST)
    with made:
        yield made


def _run_and_give_feedback(memory: Memory) -> None:
    """Three users in each arm ask once and use the invoice memory: first in A, second in B."""
    config = RetrievalConfig(cache_ttl=0, min_score=0.0, top_k=2)
    for arm in ("A", "B"):
        for user in _users(arm, 3):
            memory.add_many([
                {"user_id": user, "content": "The harbor crane invoice was paid", "importance": 0.1},
                {"user_id": user, "content": "The harbor crane safety drill is on the roof", "importance": 1.0},
            ])
            result = memory.retrieve("the harbor crane invoice", user_id=user, config=config)
            first = result.memories[0]
            # Meaning alone puts the invoice first; importance lifts the drill above it.
            assert first.content.startswith("The harbor crane invoice" if arm == "A" else "The harbor crane safety")
            assert result.metadata.config["weightsSource"] == f"variant:{arm}"
            logged = memory.store.get_retrieval(user, result.metadata.retrieval_id or "")
            assert logged is not None and logged.settings["experiment"] == "weights-1"
            assert logged.settings["variant"] == arm
            # Every user used the invoice memory: first in A, second in B.
            invoice = next(m.id for m in result.memories if "invoice" in m.content)
            memory.feedback(result.metadata.retrieval_id or "", [invoice], user_id=user)


def test_each_user_ranks_under_their_variant_and_the_report_compares_them(ab: Memory) -> None:
    _run_and_give_feedback(ab)
    by = {v.variant: v for v in ab.experiment_report("weights-1").variants}
    assert (by["A"].users, by["A"].retrievals, by["B"].users, by["B"].retrievals) == (3, 3, 3, 3)
    assert by["A"].ndcg == 1.0 and by["A"].reciprocal_rank == 1.0
    assert by["B"].reciprocal_rank == 0.5 and by["B"].ndcg < by["A"].ndcg
    assert by["A"].used_share == by["B"].used_share == 0.5


def test_engram_tune_reports_an_experiment(tmp_path: Path) -> None:
    db = tmp_path / "ab.db"
    with Memory(db, embedder=FakeEmbedder(), experiment=TEST) as memory:
        _run_and_give_feedback(memory)
    shown = CliRunner().invoke(cli, ["tune", "--experiment", "weights-1", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "A: 3 users, 3 retrievals, NDCG 1.000" in shown.output
    as_json = CliRunner().invoke(cli, ["tune", "--experiment", "weights-1", "--format", "json", "--db", str(db)])
    arms = {v["variant"]: v for v in json.loads(as_json.output)["variants"]}
    assert arms["B"]["reciprocalRank"] == 0.5 and arms["A"]["reciprocalRank"] == 1.0
    none = CliRunner().invoke(cli, ["tune", "--experiment", "nosuch", "--db", str(db)])
    assert none.exit_code == 0 and "no retrieval with feedback" in none.output


def test_the_default_weights_are_a_valid_variant() -> None:
    assert Variant("copy", weights=STRATEGY_WEIGHTS).weights == STRATEGY_WEIGHTS
