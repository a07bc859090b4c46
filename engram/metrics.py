"""Metric names of the retrieval policy and the recall modes, an in-memory Metrics, and a no-op one.

Conventions for the retrieval policy's ratios: observe ``retrieval.cache_hit_rate`` as 1.0 for a retrieval
served from cache and 0.0 otherwise, and ``retrieval.dedup_ratio`` as removed/considered in
[0, 1]; a summary's ``sum / count`` is then the rate over the period.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engram.errors import ValidationError
from engram.pools import ProcessLock

__all__ = [
    "QUANTILES",
    "RESERVOIR_SIZE",
    "RETRIEVAL_CACHE_HIT_RATE",
    "RETRIEVAL_DEDUP_RATIO",
    "RETRIEVAL_LATENCY_MS",
    "RETRIEVAL_RESULTS_COUNT",
    "RETRIEVAL_TOKENS_USED",
    "RETRIEVER_LATENCY",
    "RETRIEVER_QUERIES",
    "RETRIEVER_RESULT_COUNT",
    "InMemoryMetrics",
    "NullMetrics",
    "prometheus_name",
]

# The retrieval policy's monitoring metrics (observations).
RETRIEVAL_LATENCY_MS = "retrieval.latency_ms"
RETRIEVAL_RESULTS_COUNT = "retrieval.results_count"
RETRIEVAL_TOKENS_USED = "retrieval.tokens_used"
RETRIEVAL_DEDUP_RATIO = "retrieval.dedup_ratio"
RETRIEVAL_CACHE_HIT_RATE = "retrieval.cache_hit_rate"

# The recall modes' metrics: a counter labelled by mode, and two histograms (observations here).
RETRIEVER_QUERIES = "Agents.Memory.Retriever.Queries"
RETRIEVER_LATENCY = "Agents.Memory.Retriever.Latency"
RETRIEVER_RESULT_COUNT = "Agents.Memory.Retriever.ResultCount"

#: How many of the most recent observations per series the quantiles are computed over.
RESERVOIR_SIZE = 1024
QUANTILES = (0.5, 0.95, 0.99)

_Labels = tuple[tuple[str, str], ...]
_Series = tuple[str, _Labels]


class NullMetrics:
    """Discards everything: the default when no metrics sink is configured."""

    def observe(self, name: str, value: float, **labels: str) -> None:
        return None

    def increment(self, name: str, amount: float = 1.0, **labels: str) -> None:
        return None


@dataclass(slots=True)
class _Summary:
    count: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RESERVOIR_SIZE))

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.low = min(self.low, value)
        self.high = max(self.high, value)
        self.recent.append(value)

    def to_dict(self) -> dict[str, float]:
        ordered = sorted(self.recent)
        out = {"count": float(self.count), "sum": self.total, "min": self.low, "max": self.high}
        for q in QUANTILES:
            out[_quantile_key(q)] = _nearest_rank(ordered, q)
        return out


def _quantile_key(q: float) -> str:
    return f"p{round(q * 100):d}"


def _nearest_rank(ordered: list[float], q: float) -> float:
    # Nearest-rank: always an observed value, and exact on small known lists (p50 of 1..100 is
    # 50), unlike interpolation, which invents values that never happened.
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _labels_key(labels: dict[str, Any]) -> _Labels:
    return tuple(sorted((str(k), str(v)) for k, v in labels.items()))


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(name, f"must be a finite number, got {value!r}")
    return float(value)


class InMemoryMetrics:
    """Counters and summaries kept in process, readable as a dict or as Prometheus text.

    ``count``, ``sum``, ``min`` and ``max`` cover every observation; quantiles cover the last
    :data:`RESERVOIR_SIZE` of each series, so memory stays bounded and quantiles follow drift.
    """

    def __init__(self) -> None:
        # A forked child makes its own: a parent thread may have held this one at the fork.
        self._lock = ProcessLock()
        self._counters: dict[_Series, float] = {}
        self._summaries: dict[_Series, _Summary] = {}

    def observe(self, name: str, value: float, **labels: str) -> None:
        number = _finite("value", value)
        series = (name, _labels_key(labels))
        with self._lock.get():
            summary = self._summaries.get(series)
            if summary is None:
                summary = self._summaries[series] = _Summary()
            summary.add(number)

    def increment(self, name: str, amount: float = 1.0, **labels: str) -> None:
        number = _finite("amount", amount)
        if number < 0:
            # Prometheus counters only go up; a decrease reads as a process restart downstream.
            raise ValidationError("amount", f"a counter cannot decrease, got {amount!r}")
        series = (name, _labels_key(labels))
        with self._lock.get():
            self._counters[series] = self._counters.get(series, 0.0) + number

    # -- reading ------------------------------------------------------------------------------

    def counter(self, name: str, **labels: str) -> float:
        with self._lock.get():
            return self._counters.get((name, _labels_key(labels)), 0.0)

    def summary(self, name: str, **labels: str) -> dict[str, float] | None:
        with self._lock.get():
            found = self._summaries.get((name, _labels_key(labels)))
            return None if found is None else found.to_dict()

    def snapshot(self) -> dict[str, Any]:
        """``{"counters": {name: [{labels, value}]}, "summaries": {name: [{labels, count, ...}]}}``."""
        with self._lock.get():
            counters = sorted(self._counters.items())
            summaries = [(series, s.to_dict()) for series, s in sorted(self._summaries.items())]
        out: dict[str, Any] = {"counters": {}, "summaries": {}}
        for (name, labels), value in counters:
            out["counters"].setdefault(name, []).append({"labels": dict(labels), "value": value})
        for (name, labels), stats in summaries:
            out["summaries"].setdefault(name, []).append({"labels": dict(labels), **stats})
        return out

    def reset(self) -> None:
        with self._lock.get():
            self._counters.clear()
            self._summaries.clear()

    def to_prometheus(self) -> str:
        """Prometheus text exposition format 0.0.4; names as :func:`prometheus_name` makes them."""
        with self._lock.get():
            counters = sorted(self._counters.items())
            summaries = [(series, s.to_dict()) for series, s in sorted(self._summaries.items())]
        lines: list[str] = []
        for family, rows in _families(counters, counter=True):
            lines.append(f"# TYPE {family} counter")
            lines.extend(f"{family}{_render_labels(labels)} {_number(value)}" for labels, value in rows)
        for family, stat_rows in _families(summaries, counter=False):
            lines.append(f"# TYPE {family} summary")
            for labels, stats in stat_rows:
                for q in QUANTILES:
                    quantile = (*labels, ("quantile", _number(q)))
                    lines.append(f"{family}{_render_labels(quantile)} {_number(stats[_quantile_key(q)])}")
                lines.append(f"{family}_sum{_render_labels(labels)} {_number(stats['sum'])}")
                lines.append(f"{family}_count{_render_labels(labels)} {_number(stats['count'])}")
        return "\n".join(lines) + "\n" if lines else ""


def _families(items: Iterable[tuple[_Series, Any]], *, counter: bool) -> list[tuple[str, list[Any]]]:
    # Grouped by exposed name: the format wants one TYPE line per family with its series under it,
    # and two seed names could sanitize to the same family.
    grouped: dict[str, list[Any]] = {}
    for (name, labels), value in items:
        family = prometheus_name(name)
        if counter and not family.endswith("_total"):
            family += "_total"
        grouped.setdefault(family, []).append((labels, value))
    return sorted(grouped.items())


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_INVALID_NAME = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(name: str) -> str:
    """``Agents.Memory.Retriever.ResultCount`` -> ``engram_agents_memory_retriever_result_count``."""
    snake = _INVALID_NAME.sub("_", _CAMEL.sub("_", name)).lower()
    return "engram_" + re.sub("_+", "_", snake).strip("_")


def _label_name(name: str) -> str:
    cleaned = _INVALID_NAME.sub("_", name)
    return "_" + cleaned if cleaned[:1].isdigit() or not cleaned else cleaned


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _render_labels(labels: Iterable[tuple[str, str]]) -> str:
    pairs = [f'{_label_name(k)}="{_escape(v)}"' for k, v in labels]
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)
