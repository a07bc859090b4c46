from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import ValidationError
from engram.ext import Metrics
from engram.metrics import (
    RESERVOIR_SIZE,
    RETRIEVAL_CACHE_HIT_RATE,
    RETRIEVAL_DEDUP_RATIO,
    RETRIEVAL_LATENCY_MS,
    RETRIEVAL_RESULTS_COUNT,
    RETRIEVAL_TOKENS_USED,
    RETRIEVER_LATENCY,
    RETRIEVER_QUERIES,
    RETRIEVER_RESULT_COUNT,
    InMemoryMetrics,
    NullMetrics,
    prometheus_name,
)

# name{labels} value, where label values may hold escaped quotes, backslashes and newlines.
SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r'(?:\{(?P<labels>[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
    r'(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*)\})?'
    r" (?P<value>\S+)$"
)
TYPE = re.compile(r"^# TYPE (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*) (?P<kind>counter|summary)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> tuple[dict[str, str], dict[tuple[str, frozenset[tuple[str, str]]], float]]:
    """A strict reader of the text format: every line must be a TYPE line or a sample."""
    types: dict[str, str] = {}
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    assert text.endswith("\n")
    for line in text.splitlines():
        if m := TYPE.match(line):
            assert m["name"] not in types, f"duplicate TYPE for {m['name']}"
            types[m["name"]] = m["kind"]
            continue
        m = SAMPLE.match(line)
        assert m, f"unparseable line: {line!r}"
        labels = frozenset(LABEL.findall(m["labels"] or ""))
        key = (m["name"], labels)
        assert key not in samples, f"duplicate sample {key}"
        samples[key] = float(m["value"])
    return types, samples


def test_protocol_conformance() -> None:
    sinks: list[Metrics] = [InMemoryMetrics(), NullMetrics()]
    for sink in sinks:
        sink.observe(RETRIEVAL_LATENCY_MS, 1.0, mode="relevant")
        sink.increment(RETRIEVER_QUERIES, mode="relevant")


def test_seed_metric_names() -> None:
    assert [
        RETRIEVAL_LATENCY_MS,
        RETRIEVAL_RESULTS_COUNT,
        RETRIEVAL_TOKENS_USED,
        RETRIEVAL_DEDUP_RATIO,
        RETRIEVAL_CACHE_HIT_RATE,
    ] == [
        "retrieval.latency_ms",
        "retrieval.results_count",
        "retrieval.tokens_used",
        "retrieval.dedup_ratio",
        "retrieval.cache_hit_rate",
    ]
    assert RETRIEVER_QUERIES == "Agents.Memory.Retriever.Queries"
    assert RETRIEVER_LATENCY == "Agents.Memory.Retriever.Latency"
    assert RETRIEVER_RESULT_COUNT == "Agents.Memory.Retriever.ResultCount"


def test_counters_increase_per_label_set() -> None:
    m = InMemoryMetrics()
    m.increment(RETRIEVER_QUERIES, mode="relevant")
    m.increment(RETRIEVER_QUERIES, mode="relevant")
    m.increment(RETRIEVER_QUERIES, 3, mode="recent")
    assert m.counter(RETRIEVER_QUERIES, mode="relevant") == 2
    assert m.counter(RETRIEVER_QUERIES, mode="recent") == 3
    assert m.counter(RETRIEVER_QUERIES) == 0
    _, samples = parse(m.to_prometheus())
    name = "engram_agents_memory_retriever_queries_total"
    assert samples[(name, frozenset({("mode", "relevant")}))] == 2
    m.increment(RETRIEVER_QUERIES, mode="relevant")
    _, samples = parse(m.to_prometheus())
    assert samples[(name, frozenset({("mode", "relevant")}))] == 3


def test_counter_rejects_decrease_and_non_finite() -> None:
    m = InMemoryMetrics()
    with pytest.raises(ValidationError):
        m.increment("x", -1)
    with pytest.raises(ValidationError):
        m.increment("x", float("nan"))
    with pytest.raises(ValidationError):
        m.observe("x", float("inf"))
    assert m.snapshot() == {"counters": {}, "summaries": {}}


def test_quantiles_on_known_list() -> None:
    m = InMemoryMetrics()
    for v in reversed(range(1, 101)):
        m.observe(RETRIEVAL_LATENCY_MS, float(v))
    s = m.summary(RETRIEVAL_LATENCY_MS)
    assert s == {"count": 100, "sum": 5050, "min": 1, "max": 100, "p50": 50, "p95": 95, "p99": 99}


def test_quantiles_small_lists() -> None:
    m = InMemoryMetrics()
    m.observe("one", 7.5)
    assert m.summary("one") == {
        "count": 1,
        "sum": 7.5,
        "min": 7.5,
        "max": 7.5,
        "p50": 7.5,
        "p95": 7.5,
        "p99": 7.5,
    }
    for v in (10, 20, 30, 40):
        m.observe("four", v)
    s = m.summary("four")
    assert s is not None
    assert (s["p50"], s["p95"], s["p99"]) == (20, 40, 40)
    for v in (5, 1, 4, 2, 3):
        m.observe("five", v)
    s = m.summary("five")
    assert s is not None
    assert (s["p50"], s["p95"], s["p99"]) == (3, 5, 5)  # rank ceil(0.5 * 5) = 3


def test_reservoir_bounds_quantiles_but_not_totals() -> None:
    m = InMemoryMetrics()
    for _ in range(RESERVOIR_SIZE):
        m.observe("lat", 1000.0)
    for _ in range(RESERVOIR_SIZE):
        m.observe("lat", 1.0)
    s = m.summary("lat")
    assert s is not None
    assert s["count"] == 2 * RESERVOIR_SIZE
    assert s["max"] == 1000.0
    assert s["sum"] == 1001.0 * RESERVOIR_SIZE
    assert s["p99"] == 1.0  # the old slow values left the window


def test_prometheus_summary_exposition() -> None:
    m = InMemoryMetrics()
    for v in range(1, 101):
        m.observe(RETRIEVER_LATENCY, v / 2, mode="relevant")
    m.observe(RETRIEVAL_RESULTS_COUNT, 4)
    types, samples = parse(m.to_prometheus())
    fam = "engram_agents_memory_retriever_latency"
    assert types[fam] == "summary"
    assert types["engram_retrieval_results_count"] == "summary"
    mode = ("mode", "relevant")
    assert samples[(fam, frozenset({mode, ("quantile", "0.5")}))] == 25.0
    assert samples[(fam, frozenset({mode, ("quantile", "0.95")}))] == 47.5
    assert samples[(fam, frozenset({mode, ("quantile", "0.99")}))] == 49.5
    assert samples[(fam + "_sum", frozenset({mode}))] == 2525.0
    assert samples[(fam + "_count", frozenset({mode}))] == 100
    assert samples[("engram_retrieval_results_count_count", frozenset())] == 1


def test_prometheus_escapes_label_values_and_sanitizes_names() -> None:
    m = InMemoryMetrics()
    tricky = 'say "hi"\\ back\nnow'
    m.increment("odd-name.with spaces", 1.0, query=tricky, **{"bad-label": "x"})
    text = m.to_prometheus()
    types, samples = parse(text)
    assert types == {"engram_odd_name_with_spaces_total": "counter"}
    ((name, labels),) = samples
    assert name == "engram_odd_name_with_spaces_total"
    assert dict(labels) == {"query": 'say \\"hi\\"\\\\ back\\nnow', "bad_label": "x"}
    assert len(text.splitlines()) == 2  # the newline in the value did not break the line


def test_prometheus_name() -> None:
    assert prometheus_name("retrieval.latency_ms") == "engram_retrieval_latency_ms"
    assert prometheus_name(RETRIEVER_RESULT_COUNT) == "engram_agents_memory_retriever_result_count"


def test_empty_exposition_and_snapshot_shape() -> None:
    m = InMemoryMetrics()
    assert m.to_prometheus() == ""
    m.increment(RETRIEVER_QUERIES, mode="recent")
    m.observe(RETRIEVAL_CACHE_HIT_RATE, 1.0)
    m.observe(RETRIEVAL_CACHE_HIT_RATE, 0.0)
    snap = m.snapshot()
    assert snap["counters"] == {RETRIEVER_QUERIES: [{"labels": {"mode": "recent"}, "value": 1.0}]}
    (hit_rate,) = snap["summaries"][RETRIEVAL_CACHE_HIT_RATE]
    assert hit_rate["sum"] / hit_rate["count"] == 0.5
    m.reset()
    assert m.snapshot() == {"counters": {}, "summaries": {}}


def test_thread_safety() -> None:
    m = InMemoryMetrics()

    def work() -> None:
        for i in range(2000):
            m.increment("c", mode="x")
            m.observe("o", float(i))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.counter("c", mode="x") == 16_000
    s = m.summary("o")
    assert s is not None
    assert s["count"] == 16_000


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=300))
def test_quantiles_are_observed_values_in_order(values: list[float]) -> None:
    m = InMemoryMetrics()
    for v in values:
        m.observe("x", v)
    s = m.summary("x")
    assert s is not None
    assert s["min"] <= s["p50"] <= s["p95"] <= s["p99"] <= s["max"]
    assert {s["p50"], s["p95"], s["p99"]} <= set(values)
    assert s["min"] == min(values) and s["max"] == max(values)
    _, samples = parse(m.to_prometheus())
    assert samples[("engram_x_count", frozenset())] == len(values)


def test_cache_hit_rate_is_one_observation_per_retrieval(tmp_path: Path) -> None:
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder

    with Memory(tmp_path / "m.db", embedder=FakeEmbedder()) as memory:
        memory.add("the cache remembers", user_id="u1")
        for _ in range(4):  # one miss, then three hits
            memory.retrieve("cache", user_id="u1")
        summary = memory.metrics.summary("retrieval.cache_hit_rate")  # type: ignore[attr-defined]
    assert summary is not None and summary["count"] == 4
    assert summary["sum"] == 3.0
