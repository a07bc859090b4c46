"""/metrics before and after traffic (HTTP requests by method, route and status, read back with
prometheus_client's own parser), and the client waiting out a 429 as its Retry-After says."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from engram.client import EngramClient, retry_after
from engram.errors import RateLimited, ValidationError
from engram.ext import Embedder
from engram.service import ServiceSettings
from tests.service import Harness, harness, running


def _families(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {f.name: [(s.name, s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def test_metrics_has_http_requests_before_any_retrieval(client: TestClient, h: Harness) -> None:
    first = _families(client.get("/metrics").text)
    assert "engram_http_requests" in first and "engram_http_request_duration_seconds" in first
    assert "process_resident_memory_bytes" in first
    memory = client.post("/v1/memories?userId=u1", json={"content": "Acme prefers NET30", "kind": "fact"}).json()
    assert client.get(f"/v1/memories/{memory['id']}?userId=u1").status_code == 200
    assert client.get("/v1/memories/missing?userId=u1").status_code == 404
    assert client.get("/v1/memories/x?userId=u3").status_code == 403
    assert client.get("/no/such/path/123").status_code == 404
    client.post("/v1/retrieve?userId=u1", json={"message": "How does Acme pay?"})
    families = _families(client.get("/metrics").text)
    counts = {(s["method"], s["route"], s["status"]): v for name, s, v in families["engram_http_requests"]
              if name == "engram_http_requests_total"}
    assert counts[("POST", "/v1/memories", "201")] == 1
    assert counts[("GET", "/v1/memories/{memory_id}", "200")] == 1
    assert counts[("GET", "/v1/memories/{memory_id}", "404")] == 1
    assert counts[("GET", "/v1/memories/{memory_id}", "403")] == 1
    assert counts[("GET", "unmatched", "404")] == 1
    assert counts[("GET", "/metrics", "200")] == 1  # the first scrape, counted once it was answered
    timed = [v for name, s, v in families["engram_http_request_duration_seconds"]
             if name == "engram_http_request_duration_seconds_count" and s["route"] == "/v1/retrieve"]
    assert timed == [1]
    assert "engram_retrieval_latency_ms" in families  # the memory's own metrics follow


def test_the_client_waits_out_a_429_as_retry_after_says(tmp_path: Path, embedder: Embedder) -> None:
    made = harness(tmp_path, embedder, ServiceSettings(rate=1.0, burst=1))
    try:
        with running(made.app) as url:
            with EngramClient(url, made.key("u1"), retries=2) as client:
                client.list(user_id="u1")  # takes the one token
                started = time.monotonic()
                assert client.list(user_id="u1") == []  # refused with Retry-After: 1, then answered
                assert 0.9 <= time.monotonic() - started < 10
            with EngramClient(url, made.key("u1"), retries=0) as client:
                client.list(user_id="u1")
                with pytest.raises(RateLimited) as refused:
                    client.list(user_id="u1")
                assert refused.value.retry_after >= 1
            with EngramClient(url, made.key("u1"), retries=3, max_wait=0.5) as client:
                client.list(user_id="u1")
                started = time.monotonic()
                with pytest.raises(RateLimited):
                    client.list(user_id="u1")  # a wait over max_wait is not waited
                assert time.monotonic() - started < 0.9
    finally:
        made.close()


def test_retry_after_reads_seconds_and_http_dates() -> None:
    def answer(value: str) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": value} if value else {})

    assert retry_after(answer("3")) == 3.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    assert 15 < (retry_after(answer(later)) or 0) <= 20
    assert retry_after(answer("")) is None and retry_after(answer("soon")) is None
    with pytest.raises(ValidationError):
        EngramClient("http://127.0.0.1:9", "k", retries=-1)
