"""Seed 004 Memory Retriever: acceptance criteria, Gherkin scenarios, logs, metrics and isolation."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engram import Memory
from engram.errors import InvalidQuery, MemoryNotFound, ValidationError
from engram.ext import Embedder
from engram.metrics import RETRIEVER_LATENCY, RETRIEVER_QUERIES, RETRIEVER_RESULT_COUNT, InMemoryMetrics
from engram.model import MemoryRecord
from engram.recall import (
    Recall,
    RecallOptions,
    combined_score,
    find_contradictions,
    recall,
    recall_by_kind,
    recall_linked,
    recall_temporal,
)
from engram.salience import SalienceConfig, salience
from engram.timeparse import parse_time_scope

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)
U = "u1"
TOPICS = [
    "Database query performance dropped after the schema migration",
    "Tuning PostgreSQL database indexes made slow queries fast",
    "The database connection pool was too small under load",
    "My cat likes to sleep on the windowsill",
    "Paris is the capital of France",
    "We hiked in the Alps during the summer vacation",
    "Python list comprehensions are concise",
    "The weather forecast says rain tomorrow",
    "Her favourite colour is green",
    "The quarterly marketing budget was approved",
]
DATABASE = set(TOPICS[:3])


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=embedder, metrics=InMemoryMetrics()) as m:
        yield m


def add(memory: Memory, content: str, *, days: float = 1.0, user: str = U, **fields: Any) -> MemoryRecord:
    return memory.add(content, user_id=user, created_at=NOW - timedelta(days=days), **fields)


def access(memory: Memory, record: MemoryRecord, times: int, at: datetime = NOW) -> None:
    for _ in range(times):
        memory.store.record_access(U, [record.id], at)


def contents(result: Recall) -> list[str]:
    return [m.record.content for m in result.memories]


# -- acceptance criteria ---------------------------------------------------------------------------------
def test_ac1_relevant_combines_similarity_and_salience(memory: Memory) -> None:
    low = add(memory, "Acme prefers NET30 payment terms", kind="fact", importance=0.1)
    high = add(memory, "Acme prefers NET30 payment terms", kind="fact", importance=0.9)
    add(memory, "The weather forecast says rain tomorrow", kind="fact")
    result = recall(memory, "What payment terms does Acme prefer?", user_id=U, now=NOW)
    assert [m.record.id for m in result.memories] == [high.id, low.id]  # same similarity: salience decides
    for item in result.memories:
        match = re.fullmatch(r"Similarity: (\d\.\d\d), Salience: (\d\.\d\d)", item.reason)
        assert match is not None
        value = salience(item.record, now=NOW)
        assert match.group(2) == f"{value:.2f}"
        sim = item.score / (0.6 + 0.4 * value)
        assert f"{sim:.2f}" == match.group(1)
        assert item.score == pytest.approx(combined_score(sim, value))


def test_ac1_salience_never_outweighs_a_strong_match(memory: Memory) -> None:
    query = "Acme prefers NET30 payment terms"
    strong = add(memory, query, kind="message", importance=0.0, days=3000)  # similarity ~1, salience ~0
    weak = add(memory, "Invoices are sent by email", kind="procedure", importance=1.0, days=0)
    access(memory, weak, 60)
    loose = RecallOptions(min_similarity=0.0)
    result = recall(memory, query, user_id=U, now=NOW, options=loose)
    assert salience(memory.get(weak.id, user_id=U), now=NOW) > 0.95
    assert salience(strong, now=NOW) < 0.05
    assert [m.record.id for m in result.memories][:2] == [strong.id, weak.id]


def test_ac2_recent_orders_by_last_accessed_desc(memory: Memory) -> None:
    records = [add(memory, f"note number {i}", days=10 - i) for i in range(4)]
    for offset, record in zip((3, 1, 2), records[:3], strict=True):
        memory.store.record_access(U, [record.id], NOW - timedelta(hours=offset))
    result = recall(memory, user_id=U, mode="recent", now=NOW)
    assert [m.record.id for m in result.memories] == [records[1].id, records[2].id, records[0].id, records[3].id]
    assert result.memories[-1].reason.startswith("Last accessed: never")
    assert result.mode == "recent"


def test_ac3_important_orders_by_salience_desc(memory: Memory) -> None:
    for i in range(12):
        record = add(memory, f"fact {i}", kind=("fact", "message", "episode")[i % 3], importance=(i * 7 % 11) / 10,
                     days=i * 9)
        access(memory, record, i % 4)
    result = recall(memory, user_id=U, mode="important", max_results=5, now=NOW,
                    options=RecallOptions(track_access=False))
    everything = memory.list(user_id=U)
    expected = sorted((salience(r, now=NOW) for r in everything), reverse=True)[:5]
    assert [m.score for m in result.memories] == pytest.approx(expected)
    assert all(m.reason == f"Salience: {m.score:.2f}" for m in result.memories)


def test_ac3_important_finds_a_memory_outside_every_first_list(memory: Memory) -> None:
    # X is 101st by importance, by recency and by access count, yet the most salient of all.
    config = SalienceConfig(access_saturation=3)
    items: list[dict[str, Any]] = []
    items += [{"content": "old important", "importance": 1.0, "created_at": NOW - timedelta(days=3650)}] * 100
    items += [{"content": "new trivial", "importance": 0.0, "created_at": NOW}] * 100
    items += [{"content": "much used", "importance": 0.0, "created_at": NOW - timedelta(days=3650)}] * 100
    items.append({"content": "the one", "importance": 0.99, "created_at": NOW - timedelta(days=2)})
    records = memory.add_many([{**item, "user_id": U, "kind": "fact"} for item in items])
    used, target = [r.id for r in records[200:300]], records[300]
    for _ in range(3):
        memory.store.record_access(U, used, NOW - timedelta(days=3000))
    memory.store.record_access(U, [target.id], NOW - timedelta(days=3000))
    memory.store.record_access(U, [target.id], NOW - timedelta(days=3000))
    options = RecallOptions(salience=config, track_access=False)
    result = recall(memory, user_id=U, mode="important", max_results=1, now=NOW, options=options)
    assert result.memories[0].record.id == target.id


def test_ac4_frequent_orders_by_access_count_desc(memory: Memory) -> None:
    records = [add(memory, f"item {i}") for i in range(4)]
    for record, times in zip(records, (2, 7, 0, 4), strict=True):
        access(memory, record, times)
    result = recall(memory, user_id=U, mode="frequent", now=NOW)
    assert [m.record.access_count for m in result.memories] == [7, 4, 2, 0]
    assert result.memories[0].reason.startswith("Access count: 7, Salience: ")


def test_ac5_temporal_filters_by_time_range(memory: Memory) -> None:
    inside = [add(memory, text, days=d) for text, d in (
        ("Reviewed the database backup plan", 2), ("Lunch with the design team", 3),
        ("Database failover drill went well", 5))]
    add(memory, "Database outage post-mortem", days=20)
    result = recall_temporal(memory, NOW - timedelta(days=6), NOW, user_id=U, now=NOW)
    assert [m.record.id for m in result.memories] == [r.id for r in inside]  # newest first
    assert all(m.reason == "Temporal match" for m in result.memories)
    topical = recall_temporal(memory, NOW - timedelta(days=6), NOW, user_id=U, topic="database", now=NOW)
    assert set(contents(topical)) == {"Reviewed the database backup plan", "Database failover drill went well"}
    iso = recall_temporal(memory, "2024-02-09T00:00:00Z", "2024-02-14T00:00:00Z", user_id=U)
    assert iso.count == 3
    with pytest.raises(ValidationError):
        recall_temporal(memory, NOW, NOW - timedelta(days=1), user_id=U)


def test_ac6_linked_traverses_memory_graph(memory: Memory) -> None:
    a, b, c, d = (add(memory, f"node {name}") for name in "abcd")
    memory.link(a.id, b.id, "contradicts", 0.8, user_id=U)
    memory.link(b.id, c.id, "part_of", 0.5, user_id=U)
    memory.link(c.id, d.id, "supersedes", 1.0, user_id=U)
    one = recall_linked(memory, a.id, user_id=U)
    assert [(m.record.id, m.reason) for m in one.memories] == [(b.id, "Linked via Contradicts")]
    assert one.memories[0].score == pytest.approx(0.8)
    three = recall_linked(memory, a.id, user_id=U, depth=3)
    assert [m.record.id for m in three.memories] == [b.id, c.id, d.id]
    assert [m.reason for m in three.memories][1:] == ["Linked via PartOf", "Linked via Supersedes"]
    assert three.memories[2].score == pytest.approx(0.8 * 0.5 * 1.0)
    typed = recall_linked(memory, a.id, user_id=U, depth=3, link_types=["contradicts"])
    assert [m.record.id for m in typed.memories] == [b.id]
    assert recall_linked(memory, d.id, user_id=U).count == 0  # outgoing links only, as the seed
    assert [m.record.id for m in recall_linked(memory, d.id, user_id=U, direction="both").memories] == [c.id]
    with pytest.raises(ValidationError):
        recall_linked(memory, a.id, user_id=U, depth=4)


def test_ac7_access_tracked_when_enabled(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    hit = add(memory, "Acme prefers NET30 payment terms")
    miss = add(memory, "The weather forecast says rain tomorrow")
    calls: list[list[str]] = []
    real = memory.store.record_access

    def spy(user_id: str, ids: list[str], at: datetime) -> None:
        calls.append(list(ids))
        real(user_id, ids, at)

    monkeypatch.setattr(memory.store, "record_access", spy)
    recall(memory, "How does Acme pay?", user_id=U, now=NOW)
    assert calls == [[hit.id]]  # one call for the whole result
    assert memory.get(hit.id, user_id=U).last_accessed_at == NOW
    assert memory.get(miss.id, user_id=U).access_count == 0
    recall(memory, user_id=U, mode="recent", now=NOW)
    assert len(calls) == 2 and set(calls[1]) == {hit.id, miss.id}
    recall(memory, "How does Acme pay?", user_id=U, now=NOW, options=RecallOptions(track_access=False))
    assert len(calls) == 2
    assert memory.get(hit.id, user_id=U).access_count == 2


def test_ac8_type_and_project_filters(memory: Memory) -> None:
    fact = add(memory, "Database tuning fact", kind="fact", project_id="p1")
    add(memory, "Database tuning episode", kind="episode", project_id="p1")
    add(memory, "Database tuning in another project", kind="fact", project_id="p2")
    archived = add(memory, "Database tuning archived", kind="fact", project_id="p1", status="archived")
    add(memory, "Database tuning superseded", kind="fact", project_id="p1", status="superseded")
    for mode in ("relevant", "recent", "important", "frequent"):
        result = recall(memory, "database tuning", user_id=U, mode=mode, kind="fact", project_id="p1", now=NOW)
        assert [m.record.id for m in result.memories] == [fact.id], mode
        wider = recall(memory, "database tuning", user_id=U, mode=mode, kind="fact", project_id="p1",
                       include_archived=True, now=NOW)
        assert {m.record.id for m in wider.memories} == {fact.id, archived.id}, mode
    assert {m.record.kind for m in recall(memory, "database tuning", user_id=U, kind="episode").memories} == {
        "episode"}
    assert recall(memory, "database tuning", user_id=U, min_salience=1.0).count == 0


# -- Gherkin scenarios ----------------------------------------------------------------------------------------
def test_scenario_recall_relevant_memories(memory: Memory) -> None:
    for i, text in enumerate(TOPICS):
        add(memory, text, days=i)
    result = recall(memory, "database performance", user_id=U, now=NOW)
    assert set(contents(result)[:3]) == DATABASE
    scores = [m.score for m in result.memories]
    assert scores == sorted(scores, reverse=True)


def test_scenario_recall_by_time_range(memory: Memory) -> None:
    records = [add(memory, f"daily log entry {day}", days=day + 0.25) for day in range(30)]
    scope = parse_time_scope("what happened last week", NOW)
    assert scope is not None
    result = recall_temporal(memory, scope.start, scope.end, user_id=U, now=NOW)
    expected = [r.id for r in records if scope.start <= r.created_at <= scope.end]
    assert expected and len(expected) == 7
    assert [m.record.id for m in result.memories] == expected
    created = [m.record.created_at for m in result.memories]
    assert created == sorted(created, reverse=True)


def test_scenario_recall_by_type(memory: Memory) -> None:
    for i in range(5):
        add(memory, f"semantic fact {i}", kind="fact")
        add(memory, f"episodic event {i}", kind="episode")
    result = recall_by_kind(memory, "fact", user_id=U, now=NOW)
    assert result.count == 5 and {m.record.kind for m in result.memories} == {"fact"}
    # The Gherkin scenario's own name for the type: semantic is stored as fact.
    aliased = recall_by_kind(memory, "semantic", user_id=U, now=NOW)
    assert [m.record.id for m in aliased.memories] == [m.record.id for m in result.memories]
    with pytest.raises(ValidationError):
        recall_by_kind(memory, "semantics", user_id=U)


def test_scenario_access_tracking_on_retrieval(memory: Memory) -> None:
    record = add(memory, "Acme prefers NET30 payment terms")
    access(memory, record, 5)
    assert memory.get(record.id, user_id=U).access_count == 5
    result = recall(memory, "Acme payment terms", user_id=U, now=NOW)
    assert result.memories[0].record.id == record.id
    assert memory.get(record.id, user_id=U).access_count == 6


def test_scenario_linked_memory_traversal(memory: Memory) -> None:
    a, b, c = (add(memory, f"memory {name}") for name in "ABC")
    memory.link(a.id, b.id, "related_to", user_id=U)
    memory.link(a.id, c.id, "related_to", user_id=U)
    result = recall_linked(memory, a.id, user_id=U)
    assert {m.record.id for m in result.memories} == {b.id, c.id}
    assert {m.reason for m in result.memories} == {"Linked via RelatedTo"}


# -- contradictions, logs, metrics, isolation, validation ---------------------------------------------------
def test_find_contradictions(memory: Memory) -> None:
    claim = add(memory, "Acme pays on NET30 terms", importance=0.9)
    other = add(memory, "Acme pays on NET60 terms", importance=0.9)
    unlinked = add(memory, "Acme pays invoices by wire transfer", importance=0.9)
    far = add(memory, "The weather forecast says rain tomorrow", importance=0.9)
    memory.link(claim.id, other.id, "contradicts", user_id=U)
    memory.link(unlinked.id, far.id, "related_to", user_id=U)
    result = find_contradictions(memory, "Acme payment terms are NET30", user_id=U, now=NOW)
    assert {m.record.id for m in result.memories} == {claim.id, other.id}
    assert {m.reason for m in result.memories} == {"Potential contradiction"}
    assert all(m.score == pytest.approx(salience(m.record, now=NOW)) for m in result.memories)


def test_log_lines(memory: Memory, caplog: pytest.LogCaptureFixture) -> None:
    add(memory, "Acme prefers NET30 payment terms", days=1)
    query = "What payment terms does Acme prefer for the invoices sent every month?"
    with caplog.at_level(logging.INFO, logger="engram.recall"):
        recall(memory, query, user_id=U, now=NOW)
        recall(memory, user_id=U, mode="frequent", now=NOW)
        recall_temporal(memory, NOW - timedelta(days=7), NOW, user_id=U)
    lines = [r.getMessage() for r in caplog.records if r.name == "engram.recall"]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "engram.recall")
    assert re.fullmatch(
        rf"\[MEM:RETRIEVE\] Recalled 1 memories in Relevant mode for query '{re.escape(query[:50])}' in \d+ms",
        lines[0],
    )
    assert re.fullmatch(r"\[MEM:RETRIEVE\] Recalled 1 memories in Frequent mode for query '' in \d+ms", lines[1])
    start = (NOW - timedelta(days=7)).isoformat()
    assert lines[2] == f"[MEM:RETRIEVE] Temporal recall found 1 memories from {start} to {NOW.isoformat()}"


def test_metrics(memory: Memory) -> None:
    add(memory, "Acme prefers NET30 payment terms")
    recall(memory, "Acme payment", user_id=U)
    recall(memory, "Acme payment", user_id=U)
    recall(memory, user_id=U, mode="important")
    recall_temporal(memory, NOW, NOW, user_id=U)
    metrics = memory.metrics
    assert isinstance(metrics, InMemoryMetrics)
    assert metrics.counter(RETRIEVER_QUERIES, mode="Relevant") == 2
    assert metrics.counter(RETRIEVER_QUERIES, mode="Important") == 1
    assert metrics.counter(RETRIEVER_QUERIES, mode="Temporal") == 1
    latency, counts = metrics.summary(RETRIEVER_LATENCY), metrics.summary(RETRIEVER_RESULT_COUNT)
    assert latency is not None and latency["count"] == 4 and latency["min"] >= 0
    assert counts is not None and counts["count"] == 4 and counts["max"] == 1 and counts["min"] == 0


def test_user_isolation(memory: Memory) -> None:
    mine = add(memory, "Acme prefers NET30 payment terms")
    theirs = add(memory, "Acme prefers NET30 payment terms", user="u2")
    memory.link(theirs.id, theirs.id, "related_to", user_id="u2")
    for mode in ("relevant", "recent", "important", "frequent"):
        assert [m.record.id for m in recall(memory, "Acme", user_id=U, mode=mode).memories] == [mine.id]
    assert [m.record.id for m in recall_temporal(memory, NOW - timedelta(days=5), NOW, user_id=U).memories] == [
        mine.id]
    with pytest.raises(MemoryNotFound):
        recall_linked(memory, theirs.id, user_id=U)
    with pytest.raises(ValidationError):
        recall(memory, "Acme", user_id=None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        recall_temporal(memory, NOW, NOW, user_id="")


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "sideways"}, {"max_results": 0}, {"max_results": 1001}, {"min_salience": 1.5}, {"kind": "semantics"},
     {"min_salience": True}],
)
def test_recall_validates_arguments(memory: Memory, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        recall(memory, "Acme", user_id=U, **kwargs)


PARAPHRASED = ["Our MySQL server was slow when running reports",
               "We added an index to the orders table and queries got faster"]
UNRELATED = ["Leo's piano lesson is on Tuesdays at 4pm", "The office plants need watering on Fridays"]


def test_what_do_i_know_about_finds_what_shares_no_word(memory: Memory) -> None:
    # The spec's floor (0.3) is its own embedder's scale: MiniLM puts these 0.18-0.23 from the
    # question, and the default floor, its "unrelated" level, keeps them while dropping the rest.
    for i, text in enumerate(PARAPHRASED + UNRELATED):
        add(memory, text, days=i + 1)
    found = contents(recall(memory, "database", user_id=U, now=NOW))
    assert set(found) == set(PARAPHRASED)
    assert contents(recall(memory, "what do I know about databases?", user_id=U, now=NOW)) == PARAPHRASED[:1]
    scope = contents(recall_temporal(memory, NOW - timedelta(days=7), NOW, user_id=U, topic="database", now=NOW))
    assert set(scope) == set(PARAPHRASED)
    # A floor the caller sets is a cosine, as before.
    assert contents(recall(memory, "database", user_id=U, now=NOW, options=RecallOptions(min_similarity=0.3))) == []


def test_the_other_modes_named_to_recall_answer_as_relevant(memory: Memory) -> None:
    # The spec's RecallAsync sends every other mode to relevant recall.
    for i, text in enumerate(PARAPHRASED + UNRELATED):
        add(memory, text, days=i + 1)
    relevant = contents(recall(memory, "database", user_id=U, now=NOW, options=RecallOptions(track_access=False)))
    for mode in ("temporal", "by_type", "linked", "contradictions", "Temporal"):
        result = recall(memory, "database", user_id=U, now=NOW, mode=mode, options=RecallOptions(track_access=False))
        assert contents(result) == relevant and result.mode == "relevant"
    with pytest.raises(InvalidQuery) as error:
        recall(memory, None, user_id=U, now=NOW, mode="temporal")
    assert "recall_temporal" in str(error.value)


def test_relevant_needs_a_query(memory: Memory) -> None:
    for query in (None, "", "   ", "x" * 5000):
        with pytest.raises(InvalidQuery):
            recall(memory, query, user_id=U)


def test_to_dict_shape(memory: Memory) -> None:
    add(memory, "Acme prefers NET30 payment terms")
    data = recall(memory, "Acme payment", user_id=U, now=NOW).to_dict()
    assert data["mode"] == "relevant" and data["count"] == 1 and data["duration_ms"] >= 0
    assert set(data["memories"][0]) == {"memory", "score", "reason"}
    assert data["memories"][0]["memory"]["content"] == "Acme prefers NET30 payment terms"


def test_contradictions_count_only_memories_with_a_contradicts_link(memory: Memory) -> None:
    # The link is a filter of the engine, applied before max_results cuts: closer memories without
    # a contradiction no longer use up the answer (it used to come back empty here).
    add(memory, "Acme payment terms are NET30", importance=0.9)
    add(memory, "Acme payment terms are NET30 days", importance=0.9)
    linked = add(memory, "Acme pays by wire transfer", importance=0.9)
    other = add(memory, "The weather forecast says rain tomorrow", importance=0.9)
    memory.link(linked.id, other.id, "contradicts", user_id=U)
    result = find_contradictions(memory, "Acme payment terms are NET30", user_id=U, max_results=1, now=NOW,
                                 options=RecallOptions(min_similarity=0.0))
    assert [m.record.id for m in result.memories] == [linked.id]
