"""``GET /v1/memories``: the filters of ``engram list`` (kind, tag, session, time range, status incl.
``all``) and paging, newest first, over a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engram.embedders import named_embedder
from tests.service import Harness, harness


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    embedder = named_embedder("hash-32")
    assert embedder is not None
    h: Harness = harness(tmp_path, embedder)
    h.memory.add_many([
        {"user_id": "u1", "content": f"note {i}", "kind": "fact" if i % 3 == 0 else "message",
         "tags": ["billing"] if i % 2 == 0 else [], "session_id": f"s{i % 2}",
         "created_at": f"2024-03-{i + 1:02d}T12:00:00+00:00"}
        for i in range(20)
    ])
    h.memory.add("Acme pays NET30", user_id="u1", kind="fact", subject="acme", predicate="terms", object="NET30",
                 created_at="2024-01-01T09:00:00+00:00")
    h.memory.add("Acme pays NET45", user_id="u1", kind="fact", subject="acme", predicate="terms", object="NET45",
                 created_at="2024-01-02T09:00:00+00:00")
    with TestClient(h.app, raise_server_exceptions=False) as c:
        c.headers["Authorization"] = f"Bearer {h.key('u1')}"
        yield c
    h.close()


def listed(client: TestClient, **params: Any) -> list[str]:
    response = client.get("/v1/memories", params={"userId": "u1", **params})
    assert response.status_code == 200, response.text
    return [m["content"] for m in response.json()["memories"]]


def test_pages_newest_first(client: TestClient) -> None:
    first = listed(client, limit=5)
    second = listed(client, limit=5, offset=5)
    assert first == [f"note {i}" for i in range(19, 14, -1)]
    assert second == [f"note {i}" for i in range(14, 9, -1)]


def test_each_filter_of_engram_list(client: TestClient) -> None:
    assert listed(client, kind="fact", limit=3) == ["note 18", "note 15", "note 12"]
    assert listed(client, tag="billing", sessionId="s0", limit=2) == ["note 18", "note 16"]
    assert listed(client, createdAfter="2024-03-03T00:00:00+00:00", createdBefore="2024-03-04T23:59:59+00:00") == [
        "note 3", "note 2"]
    assert listed(client, status="superseded") == ["Acme pays NET30"]
    assert "Acme pays NET30" not in listed(client)  # active only by default


def test_status_all_is_every_status(client: TestClient) -> None:
    every = listed(client, status="all", kind="fact", createdBefore="2024-02-01T00:00:00+00:00")
    assert every == ["Acme pays NET45", "Acme pays NET30"]


def test_an_unknown_status_names_the_field(client: TestClient) -> None:
    response = client.get("/v1/memories", params={"userId": "u1", "status": "gone"})
    assert response.status_code == 422, response.text
    assert "status" in response.json()["error"]["message"]


def test_a_where_that_is_not_json_is_refused_by_name(client: TestClient) -> None:
    answer = client.get("/v1/memories", params={"userId": "u1", "where": "{category: work"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "where"
    fine = client.get("/v1/memories", params={"userId": "u1", "where": '{"category": "work"}'})
    assert fine.status_code == 200 and fine.json()["memories"] == []
