"""One convention on every route: the user is the ``userId`` query parameter (a body's ``userId`` still
accepted, and refused when it names another user), and a 422 names the position of the bad input in
the request (``body.memories[18].content``, ``body at line 2 column 13``), over a real SQLite store."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from engram.client import EngramClient
from engram.errors import ValidationError
from tests.service import Harness, running


def error_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_every_write_takes_the_user_from_the_query(client: TestClient, h: Harness) -> None:
    u1 = {"userId": "u1"}
    first = client.post("/v1/memories", params=u1, json={"content": "Acme prefers NET30 payment terms"})
    assert first.status_code == 201 and first.json()["userId"] == "u1", first.text
    memory_id = first.json()["id"]
    batch = client.post("/v1/memories/batch", params=u1, json={"memories": [{"content": "Globex pays upfront"}]})
    assert batch.status_code == 201 and batch.json()["memories"][0]["userId"] == "u1", batch.text
    other_id = batch.json()["memories"][0]["id"]
    patched = client.patch(f"/v1/memories/{memory_id}", params=u1, json={"importance": 0.9})
    assert patched.status_code == 200 and patched.json()["importance"] == 0.9, patched.text
    link = client.post("/v1/links", params=u1, json={"fromId": other_id, "toId": memory_id, "type": "about"})
    assert link.status_code == 201, link.text
    entity = client.post("/v1/entities", params=u1, json={"entityId": "customer:acme", "aliases": ["Acme"]})
    assert entity.status_code == 201, entity.text
    found = client.post("/v1/retrieve", params=u1, json={"message": "How does Acme pay?", "config": {"minScore": 0}})
    assert found.status_code == 200 and memory_id in [m["id"] for m in found.json()["memories"]], found.text
    recalled = client.post("/v1/recall", params=u1, json={"mode": "recent"})
    assert recalled.status_code == 200 and recalled.json()["count"] == 2, recalled.text
    used = client.post("/v1/feedback", params=u1,
                       json={"retrievalId": found.json()["metadata"]["retrievalId"], "usedIds": [memory_id]})
    assert used.status_code == 200, used.text
    assert h.memory.get(memory_id, user_id="u1").importance == 0.9
    assert [link.to_id for link in h.memory.links(other_id, user_id="u1")] == [memory_id]


def test_body_user_still_works_and_both_must_agree(client: TestClient) -> None:
    old_style = client.post("/v1/memories", json={"userId": "u1", "content": "Acme pays NET30"})
    assert old_style.status_code == 201, old_style.text
    memory_id = old_style.json()["id"]
    both = client.patch(f"/v1/memories/{memory_id}", params={"userId": "u1"}, json={"userId": "u1", "importance": 1})
    assert both.status_code == 200, both.text

    differ = error_of(client.patch(f"/v1/memories/{memory_id}", params={"userId": "u2"},
                                   json={"userId": "u1", "importance": 0.2}))
    assert differ["code"] == "INVALID_INPUT" and differ["field"] == "userId"
    assert "'u2'" in differ["message"] and "'u1'" in differ["message"]
    assert client.get(f"/v1/memories/{memory_id}", params={"userId": "u1"}).json()["importance"] == 1

    missing = error_of(client.post("/v1/links", json={"fromId": "a", "toId": "b", "type": "about"}))
    assert missing["field"] == "userId" and "query parameter" in missing["message"]
    item = error_of(client.post("/v1/memories/batch", params={"userId": "u1"},
                                json={"memories": [{"content": "a"}, {"content": "b", "userId": "u2"}]}))
    assert item["field"] == "memories[1].userId"


def test_the_query_user_is_checked_against_the_key(client: TestClient, h: Harness) -> None:
    refused = client.post("/v1/memories", params={"userId": "u3"}, json={"content": "x"})
    assert refused.status_code == 403, refused.text
    assert not h.memory.list(user_id="u3")


def test_openapi_states_the_user_rule_on_every_user_route(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "userId" in spec["info"]["description"] and "location" in spec["info"]["description"]
    checked = 0
    for path, operations in spec["paths"].items():
        if path.startswith(("/v1/admin/", "/v1/users/")) or path == "/v1/me" or not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            params = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "query"}
            assert "userId" in params, (method, path)
            assert "query parameter" in params["userId"]["description"], (method, path)
            checked += 1
    assert checked >= 15


def test_unparsable_json_is_named_by_line_and_column(client: TestClient) -> None:
    body = b'{"content": "ok",\n  "kind": fact}'
    error = error_of(client.post("/v1/memories", params={"userId": "u1"}, content=body,
                                 headers={"Content-Type": "application/json"}))
    assert error["field"] == "body" and error["location"] == "body"
    assert error["message"].startswith("body at line 2 column 11: JSON decode error"), error


def test_a_bad_item_is_named_by_its_position_in_the_body(client: TestClient) -> None:
    items = [{"content": f"note {i}"} for i in range(18)] + [{"kind": "fact"}]
    error = error_of(client.post("/v1/memories/batch", params={"userId": "u1"}, json={"memories": items}))
    assert error["field"] == "memories[18].content" and error["location"] == "body"
    assert error["message"] == "body.memories[18].content: Field required"
    # A union's failed member ("str") is not a field of the request.
    message = error_of(client.post("/v1/memories", params={"userId": "u1"},
                                   json={"messages": [{"role": "user", "content": 5}]}))
    assert message["field"] == "messages[0].content"
    # Refused by Memory's own checks rather than the schema: still named by the item's position.
    blank = error_of(client.post("/v1/memories/batch", params={"userId": "u1"},
                                 json={"memories": [{"content": "ok"}, {"content": "x", "sessionId": " "}]}))
    assert blank["field"] == "memories[1].sessionId" and blank["message"].startswith("memories[1].sessionId: ")
    query = error_of(client.get("/v1/memories", params={"userId": "u1", "limit": "many"}))
    assert query["field"] == "limit" and query["location"] == "query" and query["message"].startswith("query.limit:")


def test_list_takes_a_date_for_a_whole_utc_day(client: TestClient, h: Harness) -> None:
    for day, hour in ((3, 0), (3, 23), (4, 0)):
        h.memory.add(f"on {day} at {hour}", user_id="u1", created_at=f"2024-03-0{day}T{hour:02d}:30:00+00:00")
    listed = client.get("/v1/memories", params={"userId": "u1", "createdAfter": "2024-03-03",
                                                "createdBefore": "2024-03-03"})
    assert [m["content"] for m in listed.json()["memories"]] == ["on 3 at 23", "on 3 at 0"], listed.text
    bad = error_of(client.get("/v1/memories", params={"userId": "u1", "createdBefore": "2024-02-30"}))
    assert bad["field"] == "createdBefore"


class Recording(httpx.HTTPTransport):
    """A real transport that keeps every request it sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        return super().handle_request(request)


def test_client_names_the_user_in_the_query(h: Harness) -> None:
    transport = Recording()
    with running(h.app) as url, EngramClient(url, h.key("u1"), transport=transport) as client:
        record = client.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
        other = client.add("Globex pays upfront", user_id="u1")
        client.update(record.id, user_id="u1", importance=0.7)
        client.link(other.id, record.id, "about", user_id="u1")
        client.add_entity("customer:acme", user_id="u1")
        client.retrieve("How does Acme pay?", user_id="u1")
        client.recall_by_kind("fact", user_id="u1")
        client.get(record.id, user_id="u1")
        with pytest.raises(ValidationError) as refused:
            client.add_many([{"user_id": "u1", "content": "ok"}, {"user_id": "u1", "kind": "fact"}])
    assert refused.value.field == "memories[1].content" and str(refused.value) == "memories[1].content: Field required"
    assert len(transport.sent) == 9
    for request in transport.sent[:-1]:
        assert request.url.params.get("userId") == "u1", request.url
        body = json.loads(request.content) if request.content else {}
        assert "userId" not in body, (request.url, body)


def test_a_batch_item_may_bring_its_vector(client: TestClient, h: Harness) -> None:
    embedder = h.memory.embedder
    vector = [float(x) for x in embedder.embed_batch(["zebra crossing at the harbour"])[0]]
    made = client.post("/v1/memories/batch", params={"userId": "u1"}, json={"memories": [
        {"content": "a note about invoices", "vector": vector, "embeddingModel": embedder.model_id},
    ]})
    assert made.status_code == 201, made.text
    found = client.post("/v1/retrieve", params={"userId": "u1"},
                        json={"message": "zebra crossing at the harbour", "config": {"searchType": "semantic"}})
    assert found.json()["memories"][0]["id"] == made.json()["memories"][0]["id"], found.text
    other = error_of(client.post("/v1/memories/batch", params={"userId": "u1"}, json={"memories": [
        {"content": "ok"}, {"content": "x", "vector": vector, "embeddingModel": "text-embedding-3-small"},
    ]}))
    assert other["field"] == "memories[1].embeddingModel" and embedder.model_id in other["message"], other
    short = error_of(client.post("/v1/memories/batch", params={"userId": "u1"}, json={"memories": [
        {"content": "x", "vector": vector[:10], "embeddingModel": embedder.model_id},
    ]}))
    assert short["field"] == "memories[0].vector" and "10 numbers" in short["message"], short
