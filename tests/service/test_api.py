"""The /v1 routes end to end through the ASGI app, with the real embedder."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram.ext import Embedder
from engram.service import ServiceSettings
from engram.service.logs import JSONFormatter
from tests.service import Harness, harness

NOW = "2024-02-15T10:30:00+00:00"


def add(client: TestClient, content: str, user: str = "u1", **fields: object) -> dict[str, object]:
    response = client.post("/v1/memories", json={"userId": user, "content": content, **fields})
    assert response.status_code == 201, response.text
    data: dict[str, object] = response.json()
    return data


def test_crud_round_trip(client: TestClient) -> None:
    made = add(client, "Acme prefers NET30 payment terms", kind="fact", tags=["billing"], createdAt=NOW)
    assert made["userId"] == "u1" and made["kind"] == "fact" and made["tags"] == ["billing"]
    memory_id = made["id"]
    got = client.get(f"/v1/memories/{memory_id}", params={"userId": "u1"}).json()
    assert got["content"] == "Acme prefers NET30 payment terms"
    patched = client.patch(f"/v1/memories/{memory_id}", json={"userId": "u1", "importance": 0.9})
    assert patched.status_code == 200 and patched.json()["importance"] == 0.9
    listed = client.get("/v1/memories", params={"userId": "u1"}).json()["memories"]
    assert [m["id"] for m in listed] == [memory_id]
    assert client.delete(f"/v1/memories/{memory_id}", params={"userId": "u1"}).json()["deleted"] is True
    missing = client.get(f"/v1/memories/{memory_id}", params={"userId": "u1"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "MEMORY_NOT_FOUND"


def test_batch_links_history_and_forget(client: TestClient) -> None:
    batch = client.post("/v1/memories/batch", json={"memories": [
        {"userId": "u1", "content": "The office moved to Berlin", "kind": "fact",
         "subject": "office", "predicate": "located_in", "object": "Berlin"},
        {"userId": "u1", "content": "Moving checklist for the office", "kind": "procedure"},
    ]})
    assert batch.status_code == 201
    first, second = (m["id"] for m in batch.json()["memories"])
    link = client.post("/v1/links", json={"userId": "u1", "fromId": second, "toId": first, "type": "about"})
    assert link.status_code == 201 and link.json()["type"] == "about"
    history = client.get(f"/v1/memories/{first}/history", params={"userId": "u1"}).json()
    assert history["links"][0]["fromId"] == second and history["history"][0]["id"] == first
    assert client.post("/v1/entities", json={"userId": "u1", "entityId": "customer:acme"}).status_code == 201
    assert client.delete("/v1/users/u1").json() == {"deleted": 2, "userId": "u1"}


def test_retrieve_payload_and_prompt(client: TestClient) -> None:
    add(client, "Acme prefers NET30 payment terms", kind="fact", createdAt="2024-02-01T09:00:00+00:00")
    add(client, "The weather was nice at the picnic", createdAt="2024-02-02T09:00:00+00:00")
    response = client.post("/v1/retrieve", json={
        "userId": "u1", "sessionId": "s1", "useMemory": True, "message": "How does Acme pay?",
        "config": {"topK": 6, "minScore": 0.0, "searchType": "hybrid"}, "now": NOW, "format": "policy",
    })
    assert response.status_code == 200, response.text
    payload = response.json()
    assert set(payload) == {"memories", "metadata", "presentationOrder", "prompt"}
    assert sorted(payload["presentationOrder"]) == sorted(m["id"] for m in payload["memories"])
    top = payload["memories"][0]
    assert "NET30" in top["content"]
    assert {"id", "content", "score", "timestamp", "sessionId", "type", "provenance", "signals", "reasons"} <= set(top)
    assert top["provenance"]["collection"] == "user:u1"
    meta = payload["metadata"]
    assert meta["config"]["topK"] == 6 and "stageMs" in meta and meta["retrievalId"]
    assert "NET30" in payload["prompt"]
    off = client.post("/v1/retrieve", json={"userId": "u1", "message": "Acme", "useMemory": False}).json()
    assert off["memories"] == [] and "prompt" not in off


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"userId": "u1", "message": "x", "config": {"topK": 0}}, "config.topK"),
        ({"userId": "u1", "message": "x", "config": {"minScore": 2}}, "config.minScore"),
        ({"userId": "u1", "message": "x", "config": {"searchType": "fuzzy"}}, "config.searchType"),
        ({"userId": "u1", "message": "x", "now": "yesterday-ish"}, "now"),
        ({"userId": "u1", "message": "x", "config": {"timezone": "Mars/Olympus_Mons"}}, "config.timezone"),
        ({"userId": "u1"}, "message"),
        ({"userId": "u1", "message": "x", "bogus": 1}, "bogus"),
    ],
)
def test_bad_input_is_422_naming_the_field(client: TestClient, body: dict[str, object], field: str) -> None:
    response = client.post("/v1/retrieve", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == field and error["code"] in {"INVALID_INPUT", "INVALID_CONFIG"}


def test_a_requests_time_zone_is_its_calendar(client: TestClient) -> None:
    """A request's "today" is the day of its ``config.timezone``, else of its ``now``'s offset."""
    add(client, "Went for a run by the river", createdAt="2026-11-24T17:00:00+00:00")
    asked = {"userId": "u1", "message": "What did I do today?", "now": "2026-11-25T03:00:00+00:00"}
    utc = client.post("/v1/retrieve", json=asked).json()["metadata"]["timeRange"]
    there = client.post("/v1/retrieve", json={**asked, "config": {"timezone": "America/Los_Angeles"}}).json()
    offset = client.post("/v1/retrieve", json={**asked, "now": "2026-11-24T19:00:00-08:00"}).json()
    assert utc["start"].startswith("2026-11-25T00:00:00")
    assert there["metadata"]["timeRange"]["start"].startswith("2026-11-24T08:00:00")
    assert offset["metadata"]["timeRange"]["start"] == there["metadata"]["timeRange"]["start"]


def test_malformed_json_and_bad_memory_fields(client: TestClient) -> None:
    bad = client.post("/v1/memories", content=b"{not json", headers={"Content-Type": "application/json"})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "INVALID_INPUT"
    wrong = client.post("/v1/memories", json={"userId": "u1", "content": "x", "importance": 7})
    assert wrong.status_code == 422 and wrong.json()["error"]["field"] == "importance"
    empty = client.post("/v1/memories", json={"userId": "u1", "content": "   "})
    assert empty.status_code == 422


def test_size_limits(tmp_path: Path, embedder: Embedder) -> None:
    h = harness(tmp_path, embedder, ServiceSettings(max_body_bytes=2000, max_query_chars=100))
    try:
        with TestClient(h.app) as client:
            client.headers["Authorization"] = f"Bearer {h.key('u1')}"
            big = client.post("/v1/memories", json={"userId": "u1", "content": "x" * 5000})
            assert big.status_code == 413 and big.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"

            def chunks() -> Iterator[bytes]:
                yield b'{"userId": "u1", "content": "'
                for _ in range(10):
                    yield b"y" * 500
                yield b'"}'

            streamed = client.post("/v1/memories", content=chunks(), headers={"Content-Type": "application/json"})
            assert streamed.status_code == 413
            long_query = client.get("/v1/memories", params={"userId": "u1", "kind": "k" * 200})
            assert long_query.status_code == 414 and long_query.json()["error"]["code"] == "URI_TOO_LONG"
    finally:
        h.close()


def test_health_metrics_and_openapi(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    add(client, "Acme prefers NET30 payment terms", kind="fact")
    client.post("/v1/retrieve", json={"userId": "u1", "message": "Acme payment"})
    text = client.get("/metrics").text
    assert "# TYPE engram_retrieval_latency_ms summary" in text and "engram_retrieval_results_count_count" in text
    spec = client.get("/openapi.json").json()
    assert {"/v1/retrieve", "/v1/recall", "/v1/documents", "/v1/feedback", "/v1/admin/settings"} <= set(spec["paths"])
    assert "topK" in spec["components"]["schemas"]["ConfigOverrides"]["properties"]


def test_recall_documents_feedback_follow_the_facade(client: TestClient, h: Harness, tmp_path: Path) -> None:
    memory = h.memory
    response = client.post("/v1/recall", json={"userId": "u1", "mode": "recent"})
    if not hasattr(memory, "recall"):
        assert response.status_code == 501 and response.json()["error"]["code"] == "NOT_IMPLEMENTED"
    else:
        assert response.status_code == 200, response.text
        for mode in ("relevant", "important", "frequent"):
            ok = client.post("/v1/recall", json={"userId": "u1", "mode": mode, "query": "Acme"})
            assert ok.status_code == 200, (mode, ok.text)
        temporal = client.post("/v1/recall", json={"userId": "u1", "mode": "temporal",
                                                   "start": "2024-01-01T00:00:00Z", "end": NOW})
        assert temporal.status_code == 200, temporal.text
        assert client.post("/v1/recall", json={"userId": "u1", "mode": "temporal"}).status_code == 422
    upload = client.post("/v1/documents", json={"userId": "u1", "documents": [
        {"name": "terms.md", "content": "# Terms\n\nAcme pays within thirty days of invoice."}]})
    if not hasattr(memory, "ingest"):
        assert upload.status_code == 501
    else:
        assert upload.status_code == 201, upload.text
        if hasattr(memory, "get_document"):
            doc = client.post("/v1/documents/query", json={"userId": "u1", "meta": {"filename": "terms.md"}})
            assert doc.status_code == 200, doc.text
            assert "thirty days" in doc.text
    fb = client.post("/v1/feedback", json={"userId": "u1", "retrievalId": "r1", "usedIds": []})
    assert fb.status_code in ((501,) if not hasattr(memory, "feedback") else (200, 404, 422)), fb.text


def test_json_logs_carry_request_fields(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="engram"):
        client.post("/v1/retrieve", json={"userId": "u1", "message": "anything"}, headers={"X-Request-ID": "req-42"})
    lines = [json.loads(JSONFormatter().format(r)) for r in caplog.records]
    retrieve = next(line for line in lines if line["msg"].startswith("[MEM:RETRIEVE]"))
    assert retrieve["request_id"] == "req-42" and retrieve["level"] == "info"
    access = next(line for line in lines if line["logger"] == "engram.service.access")
    assert access["status"] == 200 and access["path"] == "/v1/retrieve" and access["method"] == "POST"
    assert {"ts", "duration_ms"} <= set(access)


def test_every_json_answer_has_a_schema(client: TestClient) -> None:
    """Each route declares its answer, so /openapi.json tells a client what comes back."""
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            ok = next(code for code in operation["responses"] if code.startswith("2"))
            content = operation["responses"][ok].get("content", {})
            if path == "/metrics":
                continue  # Prometheus text
            schema = content.get("application/json", {}).get("schema")
            assert schema, f"{method.upper()} {path} has no response schema"
    memory = spec["components"]["schemas"]["MemoryRecordOut"]["properties"]
    assert {"id", "userId", "createdAt", "metadata"} <= set(memory)


def test_list_filters_and_document_versions(client: TestClient) -> None:
    add(client, "Acme prefers NET30", kind="fact", tags=["billing"], sessionId="s1",
        createdAt="2024-02-01T09:00:00+00:00")
    add(client, "Lunch was nice", kind="episode", sessionId="s2", createdAt="2024-02-03T09:00:00+00:00")

    def listed(**params: object) -> list[str]:
        response = client.get("/v1/memories", params={"userId": "u1", **params})
        assert response.status_code == 200, response.text
        return [m["content"] for m in response.json()["memories"]]

    assert listed(kind="fact") == ["Acme prefers NET30"]
    assert sorted(listed(kind=["fact", "episode"])) == ["Acme prefers NET30", "Lunch was nice"]
    assert listed(tag="billing") == listed(sessionId="s1") == ["Acme prefers NET30"]
    assert listed(createdAfter="2024-02-02T00:00:00+00:00") == ["Lunch was nice"]
    bad = client.get("/v1/memories", params={"userId": "u1", "status": "gone"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "filters.statuses"
    for text in ("first", "second"):
        upload = client.post("/v1/documents", json={"userId": "u1", "documents": [{"name": "n.md", "content": text}]})
        assert upload.status_code == 201, upload.text
    versions = client.get("/v1/documents/versions", params={"userId": "u1", "name": "n.md"}).json()["versions"]
    assert [(v["version"], v["content"]) for v in versions] == [(1, "first"), (2, "second")]
    history = client.get(f"/v1/memories/{versions[0]['memory_id']}/history", params={"userId": "u1"}).json()
    assert [v["version"] for v in history["versions"]] == [1, 2]
