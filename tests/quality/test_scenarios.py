"""Quality floor: everyday questions over a realistic agent memory, with the defaults a user gets.

The set (tests/quality/scenario_data.py) is loaded once per module into a fresh SQLite store with the
real default embedder, and every question is asked once (engram.eval.scenarios.run_scenarios).

- The floors are what the code achieved when they were set, minus 0.02. Raise them as ranking
  improves; never lower them to make a change pass.
- The everyday examples that once failed (Bob's question of last week, Acme's order of last month,
  stored text clipped out of shape, a filter matching one memory) are tested one by one.

``python -m engram.eval.scenarios --misses`` prints the same table with the baselines and every miss.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.eval.scenarios import ScenarioReport, run_scenarios
from engram.ext import Embedder
from engram.memory import Memory
from engram.retrieve.understand import keywords
from tests.quality.scenario_data import CATEGORIES, INTACT, NOW, SCENARIO

K = 10

#: Overall recall@10 of ``engram`` (Memory.retrieve with the defaults, top_k=10), minus 0.02.
FLOOR = 0.88
#: Per-category recall@10, each what the code achieved minus 0.02 (0.0 where it found nothing).
#: The second hop traded one preference question (a filler naming what the top result names took
#: tenth place) for one multi-hop question; LongMemEval and LoCoMo gained from it too.
#: Reading keyword scores against the query's best keyword match lost one multi-hop question (the
#: second gold from tenth to eleventh) for LoCoMo dev recall@10 +2.4 and LongMemEval dev turn
#: recall@5 +4.8; the score floor no longer drops what a question's time scope points at (time +0.01).
#: Structured fields indexed as keyword terms (engram.text.memory_terms): preference 0.61 -> 0.67,
#: multihop 0.75 -> 0.81, overall 0.89 -> 0.90.
#: Overall hit@1 (the right memory first), minus 0.02: 0.67 once a question by the asker answers
#: "What did Bob ask last week?" (the four questions that ask what someone asked: 1 first -> 4).
#: The long technical chat's eight questions (2026-11-29; hit@1 0.38, as dense's) made the set's
#: overall 0.64: the floor follows the set, not a change to the code. Two conversations between
#: people (2026-11-30, written before measuring): Maya's decision 2nd with and without the
#: conversation gain (engram.retrieve.episodes); Leo's wish for another play found by no system
#: (the turn is no candidate: nothing reads a conversation's turns beyond the ones next to a match).
HIT1_FLOOR = 0.62
CATEGORY_FLOORS = {
    "time": 0.81,
    "preference": 0.65,
    "procedure": 0.98,
    "entity": 0.98,
    "speaker": 0.98,
    "multihop": 0.79,
    "paraphrase": 0.76,
    "update": 0.98,
    "filter": 0.98,
    "verbatim": 0.98,
    # Written 2026-11-29 and measured once, untuned: 0.75 (BM25 0.69, dense 0.69, RRF 0.75).
    "technical": 0.73,
}



@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[ScenarioReport]:
    path: Path = tmp_path_factory.mktemp("quality") / "scenarios.db"
    yield run_scenarios(lambda: Memory(path, embedder=embedder), k=K)


def _explain(report: ScenarioReport) -> str:
    return f"\n{report.table()}\n\nmisses:\n{report.misses()}"


# -- the fixture itself ----------------------------------------------------------------------------
def test_fixture_is_well_formed() -> None:
    keys = [m.key for m in SCENARIO.memories]
    assert len(keys) == len(set(keys)), "memory keys must be unique"
    assert 250 <= len(keys) <= 400
    assert all(m.created_at < NOW for m in SCENARIO.memories)
    owner = {m.key: m.user_id for m in SCENARIO.memories}
    qids = [q.qid for q in SCENARIO.questions]
    assert len(qids) == len(set(qids)), "question ids must be unique"
    assert len(qids) >= 70
    assert {q.category for q in SCENARIO.questions} == set(CATEGORIES)
    for question in SCENARIO.questions:
        assert 1 <= len(question.gold) <= 3, question.qid
        for key in question.gold:
            assert owner.get(key) == question.user_id, f"{question.qid}: gold {key} is not a memory of that user"


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def test_paraphrase_questions_share_no_content_word_with_their_gold() -> None:
    content = {m.key: m.content for m in SCENARIO.memories}
    for question in SCENARIO.questions:
        if question.category != "paraphrase":
            continue
        asked = {_stem(w) for w in keywords(question.text)}
        for key in question.gold:
            shared = asked & {_stem(w) for w in keywords(content[key])}
            assert not shared, f"{question.qid} shares {shared} with {key}"


def test_intact_strings_are_in_the_stored_text() -> None:
    content = {m.key: m.content for m in SCENARIO.memories}
    by_id = {q.qid: q for q in SCENARIO.questions}
    for qid, strings in INTACT.items():
        (gold,) = by_id[qid].gold
        for text in strings:
            assert text in content[gold], (qid, text)


def test_each_filter_matches_exactly_its_gold(report: ScenarioReport) -> None:
    for result in report.results:
        if result.question.category == "filter":
            assert result.filter_matches == result.question.gold, result.question.qid


# -- (a) the floors --------------------------------------------------------------------------------
def test_overall_recall_floor(report: ScenarioReport) -> None:
    assert len(report.results) >= 70
    overall = report.overall("engram")
    assert overall.recall >= FLOOR, f"overall recall@{K} {overall.recall:.3f} < {FLOOR}" + _explain(report)


def test_overall_hit_at_1_floor(report: ScenarioReport) -> None:
    overall = report.overall("engram")
    assert overall.hit1 >= HIT1_FLOOR, f"overall hit@1 {overall.hit1:.3f} < {HIT1_FLOOR}" + _explain(report)


def test_asking_questions_are_answered_first(report: ScenarioReport) -> None:
    for qid in ("bob_last_week", "tom_asked", "priya_asked", "lena_questions"):
        assert report.result(qid).hit1["engram"] == 1.0, qid + _explain(report)


@pytest.mark.parametrize("category", CATEGORIES)
def test_category_recall_floor(report: ScenarioReport, category: str) -> None:
    score = report.by_category("engram")[category]
    floor = CATEGORY_FLOORS[category]
    assert score.recall >= floor, f"{category}: recall@{K} {score.recall:.3f} < {floor}" + _explain(report)


def test_no_retrieval_errors(report: ScenarioReport) -> None:
    errors = {r.question.qid: r.error for r in report.results if r.error is not None}
    assert not errors


# -- (b) stored text comes back intact -------------------------------------------------------------
@pytest.mark.parametrize(
    "qid",
    list(INTACT),
)
def test_returned_text_is_intact(report: ScenarioReport, qid: str) -> None:
    result = report.result(qid)
    (gold,) = result.question.gold
    entry = result.entry(gold)
    assert entry is not None, f"{qid}: {gold} not returned for {result.question.text!r}" + _explain(report)
    for text in INTACT[qid]:
        assert text in entry.content, f"{qid}: {text!r} not intact in {entry.content!r}"


# -- (c) the examples ----------------------------------------------------------------------
def test_bob_last_week(report: ScenarioReport) -> None:
    result = report.result("bob_last_week")
    rank = result.rank("bob_ask_globex_paid")
    assert rank is not None, (
        f"Bob's question of Nov 17 not in the top {K}; got {list(result.ranked['engram'])}" + _explain(report)
    )


def test_acme_order_last_month_beats_distractors(report: ScenarioReport) -> None:
    result = report.result("acme_last_month")
    gold = result.rank("acme_order_monitors")
    ranked = list(result.ranked["engram"])
    assert gold is not None, f"'Acme ordered 30 monitors' not in the top {K}: {ranked}" + _explain(report)
    for distractor in ("initech_cancel", "rush_stress"):
        other = result.rank(distractor)
        assert other is None or gold < other, f"{distractor} at {other} above the Acme order at {gold}: {ranked}"


@pytest.mark.parametrize("qid", [q.qid for q in SCENARIO.questions if q.category == "filter"])
def test_filter_matching_one_memory_returns_it(report: ScenarioReport, qid: str) -> None:
    result = report.result(qid)
    (gold,) = result.question.gold
    assert result.rank(gold) is not None, f"{qid}: the only memory matching {result.question.filters} not returned"
