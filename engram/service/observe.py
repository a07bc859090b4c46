"""The service's own Prometheus metrics: every HTTP request counted and timed by method, route and
status, with the process's CPU and memory, kept by ``prometheus_client`` in one registry per app
(two apps in one process do not share counts). ``/metrics`` answers these, then the ``Memory``'s
retrieval metrics, so a scrape has content before the first retrieval.

The route label is the route's template (``/v1/memories/{memory_id}``), never the path asked for,
so ids do not make new series; a path no route matches counts as ``unmatched``. Each worker process
of ``engram serve --workers N`` counts its own requests: a scrape reads the worker that answers it.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, PlatformCollector, ProcessCollector
from prometheus_client.exposition import generate_latest

__all__ = ["BUCKETS", "HttpMetrics"]

#: Request latency buckets (seconds): a cached retrieval answers in about a millisecond, a cold
#: one or a document ingest in seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class HttpMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("engram_http_requests", "HTTP requests answered, by method, route and status.",
                                ("method", "route", "status"), registry=self.registry)
        self.latency = Histogram("engram_http_request_duration_seconds",
                                 "Time from a request's arrival to its answer's end, by method, route and status.",
                                 ("method", "route", "status"), buckets=BUCKETS, registry=self.registry)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)

    def observe(self, scope: MutableMapping[str, Any], status: int, seconds: float) -> None:
        route = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        labels = (scope.get("method", ""), template, str(status))
        self.requests.labels(*labels).inc()
        self.latency.labels(*labels).observe(seconds)

    def render(self) -> str:
        return generate_latest(self.registry).decode("utf-8")
