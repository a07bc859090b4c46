"""Smaller trust findings over HTTP: extreme inputs are 422 (never 500), security headers, no
third-party script, every authenticated route rate-limited, camelCase field names in every 422."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engram.ext import Embedder
from engram.service import ServiceSettings
from tests.service import Harness, harness

LATE = "9999-12-31T23:59:59-14:00"  # UTC is in year 10000
EARLY = "0001-01-01T00:00:00+14:00"  # UTC is in year 0


@pytest.fixture
def h(tmp_path: Path, embedder: Embedder) -> Iterator[Harness]:
    made = harness(tmp_path, embedder, ServiceSettings(rate=0))
    yield made
    made.close()


@pytest.fixture
def client(h: Harness) -> Iterator[TestClient]:
    with TestClient(h.app, raise_server_exceptions=False) as c:
        c.headers["Authorization"] = f"Bearer {h.key('u1')}"
        yield c


def _memory_id(client: TestClient) -> str:
    made = client.post("/v1/memories", json={"userId": "u1", "content": "Acme prefers NET30", "kind": "fact"})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def _cases(when: str) -> list[tuple[str, str, dict[str, Any], str]]:
    return [
        ("POST", "/v1/memories", {"userId": "u1", "content": "x", "createdAt": when}, "createdAt"),
        ("POST", "/v1/memories", {"userId": "u1", "content": "x", "validFrom": when}, "validFrom"),
        ("POST", "/v1/memories", {"userId": "u1", "content": "x", "validTo": when}, "validTo"),
        ("POST", "/v1/memories/batch", {"memories": [{"userId": "u1", "content": "x", "createdAt": when}]},
         "memories[0].createdAt"),
        ("PATCH", "/v1/memories/{id}", {"userId": "u1", "validTo": when}, "validTo"),
        ("POST", "/v1/retrieve", {"userId": "u1", "message": "Acme", "now": when}, "now"),
        ("POST", "/v1/retrieve", {"userId": "u1", "message": "Acme", "filters": {"createdAfter": when}},
         "filters.createdAfter"),
        ("POST", "/v1/retrieve", {"userId": "u1", "message": "Acme", "filters": {"createdBefore": when}},
         "filters.createdBefore"),
        ("POST", "/v1/recall", {"userId": "u1", "mode": "temporal", "start": when, "end": when}, "start"),
        ("POST", "/v1/documents/query", {"userId": "u1", "meta": {"filename": "a.md"}, "asOf": when}, "asOf"),
    ]


@pytest.mark.parametrize("when", [LATE, EARLY])
def test_extreme_dates_over_http_are_422_naming_the_field(client: TestClient, when: str) -> None:
    memory_id = _memory_id(client)
    for method, path, body, field in _cases(when):
        response = client.request(method, path.format(id=memory_id), json=body)
        assert response.status_code == 422, (path, field, response.status_code, response.text)
        assert response.json()["error"]["field"] == field, (path, response.text)


@pytest.mark.parametrize("tags", [5, [1, 2], {"a": 1}, [["nested"]], True])
def test_document_query_meta_tags_not_strings_is_422(client: TestClient, tags: Any) -> None:
    response = client.post("/v1/documents/query", json={"userId": "u1", "meta": {"filename": "a.md", "tags": tags}})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == "meta.tags"


def test_ui_sends_content_security_policy_and_frame_headers(client: TestClient) -> None:
    for path in ("/ui", "/ui/app.js", "/ui/style.css", "/healthz", "/v1/me"):
        response = client.get(path)
        assert response.status_code == 200, path
        csp = response.headers.get("content-security-policy", "")
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp, (path, csp)
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert response.headers.get("x-frame-options") == "DENY"
        assert response.headers.get("x-content-type-options") == "nosniff"
        assert response.headers.get("referrer-policy") == "no-referrer"


def test_docs_loads_no_third_party_script(client: TestClient) -> None:
    """/docs is Swagger UI from the installed swagger-ui-bundle-v2 package, under the same strict CSP."""
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    scripts = re.findall(r'<script src="([^"]+)"', page.text)
    styles = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page.text)
    assert scripts == ["/docs/swagger-ui-bundle.js", "/docs/docs.js"] and styles == ["/docs/swagger-ui.css"]
    assert "<script>" not in page.text and "https://" not in page.text
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert "img-src 'self' data:;" in page.headers["content-security-policy"]
    for path in (*scripts, *styles):
        asset = client.get(path)
        assert asset.status_code == 200 and len(asset.content) > 100, path
        csp = asset.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert b"SwaggerUIBundle" in client.get("/docs/swagger-ui-bundle.js").content
    assert '"/openapi.json"' in client.get("/docs/docs.js").text
    for missing in ("/docs/oauth2-redirect", "/docs/../app.py", "/docs/index.html"):
        assert client.get(missing).status_code == 404, missing
    spec = client.get("/openapi.json")
    assert spec.status_code == 200 and "/v1/retrieve" in spec.json()["paths"]
    for path in ("/ui", "/ui/app.js"):
        text = client.get(path).text
        assert "cdn." not in text and "https://" not in text and "http://" not in text


def test_v1_me_and_admin_routes_are_rate_limited(tmp_path: Path, embedder: Embedder) -> None:
    made = harness(tmp_path, embedder, ServiceSettings(rate=0.001, burst=2))
    try:
        with TestClient(made.app, raise_server_exceptions=False) as client:
            client.headers["Authorization"] = f"Bearer {made.key('u1', admin=True)}"
            for path in ("/v1/me", "/v1/admin/settings", "/v1/admin/stats"):
                statuses = [client.get(path).status_code for _ in range(3)]
                assert 429 in statuses, (path, statuses)
                limited = client.get(path)
                assert limited.status_code == 429 and "retry-after" in limited.headers
    finally:
        made.close()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"userId": "u1", "content": "x", "createdAt": "not a date"}, "createdAt"),
        ({"userId": "u1", "content": "x", "validFrom": "2024-01-01T00:00:00"}, "validFrom"),
        ({"userId": "u1", "content": "x", "sessionId": " "}, "sessionId"),
        ({"userId": "u1", "content": "x", "metadata": {"k": float("inf")}}, "metadata"),
    ],
)
def test_422_field_names_are_camel_case_wire_names(client: TestClient, body: dict[str, Any], field: str) -> None:
    import json

    response = client.post("/v1/memories", content=json.dumps(body), headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"].startswith(field), error
    assert "_" not in error["field"], error
    # Refused by the request's schema: the position in the body; by Engram's own checks: the field.
    head = f"body.{error['field']}" if error.get("location") == "body" else error["field"]
    assert error["message"].startswith(head), error


@pytest.mark.parametrize("key", ["filename", "path", "topic", "query"])
def test_document_query_lone_surrogate_in_meta_is_422(client: TestClient, key: str) -> None:
    import json

    body = json.dumps({"userId": "u1", "meta": {key: "a\ud800.md"}})  # ASCII: the surrogate as \ud800
    response = client.post("/v1/documents/query", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == f"meta.{key}"
