"""Mem0's own hosted-platform client (``mem0.MemoryClient``, the real package) against the service's
``/mem0`` routes: code written for Mem0's platform runs by changing its host and key."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

# Before mem0 is imported: no telemetry from a test run, and its settings file in a scratch directory.
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-"))

import mem0
import pytest
from fastapi.testclient import TestClient
from mem0.exceptions import AuthenticationError, MemoryNotFoundError
from mem0.exceptions import MemoryError as Mem0Error

from tests.service import Harness, running


@pytest.fixture
def served(h: Harness) -> Iterator[tuple[Harness, str]]:
    """The service on a loopback port: Mem0's client speaks HTTP with its own httpx client."""
    with running(h.app) as url:
        yield h, url + "/mem0"


def client_for(served: tuple[Harness, str], *users: str) -> Any:
    h, host = served
    return mem0.MemoryClient(api_key=h.key(*users), host=host)


@pytest.fixture
def alice(served: tuple[Harness, str]) -> Any:
    return client_for(served, "alice", "agent:planner")


def test_a_key_that_is_not_engram_s_is_refused_when_the_client_starts(served: tuple[Harness, str]) -> None:
    with pytest.raises(ValueError, match="API key"):
        mem0.MemoryClient(api_key="m0-not-an-engram-key", host=served[1])


def test_add_search_get_all_as_mem0_s_platform_client_calls_them(alice: Any) -> None:
    added = alice.add([{"role": "user", "content": "I'm vegetarian and allergic to peanuts."},
                       {"role": "assistant", "content": "Noted: vegetarian, no peanuts."}],
                      user_id="alice", metadata={"source": "onboarding"})
    assert [r["memory"] for r in added["results"]] == ["I'm vegetarian and allergic to peanuts.",
                                                       "Noted: vegetarian, no peanuts."]
    alice.add("I live in Lisbon.", user_id="alice")
    found = alice.search("What can't I eat?", filters={"user_id": "alice"}, top_k=2)["results"]
    assert found and found[0]["memory"] == "I'm vegetarian and allergic to peanuts."
    assert found[0]["metadata"] == {"source": "onboarding"} and found[0]["user_id"] == "alice"
    # The platform wraps even one condition in AND.
    wrapped = alice.search("Where do I live?", filters={"AND": [{"user_id": "alice"}]})["results"]
    assert wrapped[0]["memory"] == "I live in Lisbon."
    everything = alice.get_all(filters={"user_id": "alice"})
    assert everything["count"] == 3 and everything["next"] is None
    assert everything["results"][0]["memory"] == "I live in Lisbon."  # newest first
    first = alice.get_all(filters={"user_id": "alice"}, page=1, page_size=2)
    assert first["count"] == 2 and first["next"] is not None and first["previous"] is None
    second = alice.get_all(filters={"user_id": "alice"}, page=2, page_size=2)
    assert second["count"] == 1 and second["next"] is None
    assert {r["id"] for r in first["results"]}.isdisjoint(r["id"] for r in second["results"])


def test_one_memory_read_changed_traced_and_deleted(alice: Any) -> None:
    memory_id = alice.add("My flight is on Friday.", user_id="alice")["results"][0]["id"]
    assert alice.get(memory_id)["memory"] == "My flight is on Friday."
    alice.update(memory_id, text="My flight moved to Saturday.")
    assert alice.get(memory_id)["memory"] == "My flight moved to Saturday."
    assert [row["event"] for row in alice.history(memory_id)] == ["ADD", "UPDATE"]
    alice.delete(memory_id)
    with pytest.raises(MemoryNotFoundError):
        alice.get(memory_id)
    alice.add("Remind me to water the plants.", user_id="alice")
    alice.delete_all(user_id="alice")
    assert alice.get_all(filters={"user_id": "alice"})["results"] == []


def test_an_agent_s_memories_are_its_own_user(alice: Any) -> None:
    alice.add("Summaries go in bullet points.", agent_id="planner")
    found = alice.search("How should summaries look?", filters={"agent_id": "planner"})["results"]
    assert found[0]["memory"] == "Summaries go in bullet points." and found[0]["agent_id"] == "planner"
    assert "user_id" not in found[0]
    with pytest.raises(Mem0Error):  # the key covers alice's agent "planner", not another
        alice.add("Use tables.", agent_id="writer")


def test_a_key_reaches_only_its_own_users(alice: Any, served: tuple[Harness, str]) -> None:
    secret = alice.add("My PIN is 4912.", user_id="alice")["results"][0]["id"]
    mallory = client_for(served, "mallory")
    with pytest.raises(Mem0Error):  # 403: the key does not cover alice
        mallory.search("PIN", filters={"user_id": "alice"})
    with pytest.raises(Mem0Error):
        mallory.add("I am alice now.", user_id="alice")
    # By id, another user's memory is answered as one that does not exist.
    for call in (mallory.get, mallory.history, mallory.delete):
        with pytest.raises(MemoryNotFoundError):
            call(secret)
    with pytest.raises(MemoryNotFoundError):
        mallory.update(secret, text="changed")
    assert alice.get(secret)["memory"] == "My PIN is 4912."


def test_an_option_engram_cannot_honour_is_refused_by_name(alice: Any) -> None:
    with pytest.raises(Mem0Error, match="rerank_model"):
        alice.search("anything", filters={"user_id": "alice"}, rerank_model="x")
    # Options that change nothing here (how Mem0 queues or formats a call) are accepted.
    assert alice.add("Tea, no sugar.", user_id="alice", async_mode=False, output_format="v1.1")["results"]


def test_every_route_needs_a_key(h: Harness) -> None:
    with TestClient(h.app) as bare:
        for method, path in (("GET", "/mem0/v1/ping/"), ("POST", "/mem0/v3/memories/search/"),
                             ("GET", "/mem0/v1/memories/x/"), ("DELETE", "/mem0/v1/memories/")):
            answer = bare.request(method, path)
            assert answer.status_code == 401 and "detail" in answer.json(), path



def test_a_revoked_key_is_refused_as_mem0_refuses_one(alice: Any, served: tuple[Harness, str]) -> None:
    h, _ = served
    for key in h.keys.list():
        h.keys.revoke(key.id)
    with pytest.raises(AuthenticationError):
        alice.get_all(filters={"user_id": "alice"})


MALFORMED = [
    ("POST", "/mem0/v3/memories/search/", []),
    ("POST", "/mem0/v3/memories/search/", {"query": 5, "filters": {"user_id": "alice"}}),
    ("POST", "/mem0/v3/memories/search/", {"query": "x", "filters": "nope"}),
    ("POST", "/mem0/v3/memories/search/", {"query": "x", "filters": {"user_id": "alice"}, "top_k": "ten"}),
    ("POST", "/mem0/v3/memories/search/", {"query": "x", "filters": {"user_id": "alice"}, "threshold": "high"}),
    ("POST", "/mem0/v3/memories/search/", {"query": "x", "filters": {"AND": [{"user_id": "alice"}, 5]}}),
    ("POST", "/mem0/v3/memories/search/", {"query": "x" * 100_000, "filters": {"user_id": "alice"}}),
    ("POST", "/mem0/v3/memories/", {"filters": {"user_id": "alice"}, "page_size": "abc"}),
    ("POST", "/mem0/v3/memories/", {"filters": {"user_id": "alice"}, "page": 0}),
    ("POST", "/mem0/v3/memories/?page=0", {"filters": {"user_id": "alice"}}),
    ("POST", "/mem0/v3/memories/", {}),
    ("POST", "/mem0/v3/memories/add/", {"messages": 5, "user_id": "alice"}),
    ("POST", "/mem0/v3/memories/add/", {"messages": "x", "user_id": ["alice"]}),
    ("POST", "/mem0/v3/memories/add/", {"messages": "x", "user_id": "alice", "metadata": "m"}),
    ("POST", "/mem0/v3/memories/add/", {"messages": "x", "user_id": "alice", "timestamp": "yesterday"}),
    ("POST", "/mem0/v3/memories/add/", {"messages": "x", "user_id": "alice", "timestamp": 1e20}),
    ("POST", "/mem0/v3/memories/add/", {"messages": "x", "user_id": "alice", "app_id": "work"}),
    ("POST", "/mem0/v3/memories/add/", {"messages": "x", "user_id": "alice", "immutable": True}),
    ("PUT", "/mem0/v1/memories/{id}/", {"timestamp": 1e300}),
    ("DELETE", "/mem0/v1/memories/?user_id=alice&app_id=work", None),
    ("DELETE", "/mem0/v1/memories/?user_id=alice&filters=x", None),
    ("POST", "/mem0/v3/memories/?page=11", {"filters": {"user_id": "alice"}}),
    ("PUT", "/mem0/v1/memories/{id}/", {}),
    ("PUT", "/mem0/v1/memories/{id}/", {"metadata": [1]}),
    ("PUT", "/mem0/v1/memories/{id}/", {"expiration_date": "soon"}),
    ("DELETE", "/mem0/v1/memories/", None),
]


@pytest.mark.parametrize(("method", "path", "body"), MALFORMED)
def test_a_malformed_call_is_refused_by_name_never_a_server_error(
    h: Harness, method: str, path: str, body: Any
) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as bare:
        bare.headers["Authorization"] = "Token " + h.key("alice")
        memory_id = bare.post("/mem0/v3/memories/add/", json={"messages": "hi", "user_id": "alice"}).json()
        path = path.replace("{id}", memory_id["results"][0]["id"])
        answer = bare.request(method, path, json=body) if body is not None else bare.request(method, path)
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"] or answer.json()["error"]["message"]


def test_what_mem0_cannot_narrow_here_is_refused_and_nothing_is_deleted(h: Harness) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as bare:
        bare.headers["Authorization"] = "Token " + h.key("alice")
        bare.post("/mem0/v3/memories/add/", json={"messages": "home note", "user_id": "alice"})
        refused = bare.delete("/mem0/v1/memories/?user_id=alice&app_id=work")
        assert refused.status_code == 422 and "app_id" in refused.json()["detail"]
        assert len(h.memory.list(user_id="alice")) == 1


def test_search_runs_with_the_admin_settings(h: Harness) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as bare:
        admin = {"Authorization": "Bearer " + h.key(admin=True)}
        assert bare.put("/v1/admin/settings", json={"retrieval": {"enableRedaction": True}}, headers=admin).is_success
        bare.headers["Authorization"] = "Token " + h.key("alice")
        bare.post("/mem0/v3/memories/add/", json={"messages": "My email is carol@example.com", "user_id": "alice"})
        found = bare.post("/mem0/v3/memories/search/", json={"query": "email", "filters": {"user_id": "alice"}})
        assert found.json()["results"] and "carol@example.com" not in found.text


def test_pages_keep_the_request_s_other_parameters_and_reach_the_documented_depth(h: Harness) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as bare:
        bare.headers["Authorization"] = "Token " + h.key("alice")
        for text in ("one", "two", "three"):
            bare.post("/mem0/v3/memories/add/", json={"messages": text, "user_id": "alice"})
        page = bare.post("/mem0/v3/memories/?page=2&page_size=1&trace=yes", json={"filters": {"user_id": "alice"}})
        links = page.json()
        assert "trace=yes" in links["next"] and "page=3" in links["next"] and "page=1" in links["previous"]
        assert bare.post(links["next"], json={"filters": {"user_id": "alice"}}).json()["next"] is None
        # A body that names its page too: the link's page wins, so following ``next`` moves on.
        body = {"filters": {"user_id": "alice"}, "page": 1, "page_size": 1}
        assert bare.post(bare.post("/mem0/v3/memories/", json=body).json()["next"], json=body).json()["previous"]
        deepest = bare.post("/mem0/v3/memories/?page=10&page_size=1000", json={"filters": {"user_id": "alice"}})
        assert deepest.status_code == 200 and deepest.json()["results"] == []


def test_the_expiry_is_cleared_as_mem0_clears_it(alice: Any) -> None:
    memory_id = alice.add("Parking pass for March.", user_id="alice", expiration_date="2099-03-31")["results"][0]["id"]
    assert alice.get(memory_id)["expiration_date"] == "2099-03-31"
    alice.update(memory_id, expiration_date=None)
    assert "expiration_date" not in alice.get(memory_id)


def test_a_platform_call_engram_has_no_counterpart_for_says_so(alice: Any) -> None:
    with pytest.raises(Mem0Error, match="no counterpart"):
        alice.users()
    with pytest.raises(Mem0Error, match="no counterpart"):
        alice.batch_delete([{"memory_id": "x"}])


def test_a_key_past_its_rate_limit_is_told_when_to_come_back(h: Harness) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as bare:
        bare.headers["Authorization"] = "Token " + h.key("alice", rate=0.01, burst=1)
        assert bare.get("/mem0/v1/ping/").status_code == 200
        refused = bare.get("/mem0/v1/ping/")
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert "rate limit" in refused.json()["detail"]
