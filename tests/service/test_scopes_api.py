"""Several scopes over HTTP: access is checked per scope, and the answer ranks them together."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.service import Harness


def _fill(h: Harness) -> None:
    h.memory.add("Alice is on the Pro plan.", user_id="alice")
    h.memory.add("Refunds on the Pro plan are prorated by the remaining months.", user_id="kb", kind="fact")
    h.memory.add("Bob's refund was approved yesterday.", user_id="bob")


def test_a_key_for_both_scopes_gets_them_ranked_together(h: Harness) -> None:
    _fill(h)
    with TestClient(h.app) as client:
        client.headers["X-API-Key"] = h.key("alice", "kb")
        answer = client.post("/v1/retrieve", params={"userId": "alice"},
                             json={"message": "How are refunds on the Pro plan computed?", "also": ["kb"]})
        assert answer.status_code == 200, answer.text
        memories = answer.json()["memories"]
        assert memories[0]["content"].startswith("Refunds on the Pro plan")
        assert {m["provenance"]["collection"] for m in memories} == {"user:alice", "user:kb"}


def test_a_scope_the_key_may_not_read_is_403_like_any_other_user(h: Harness) -> None:
    _fill(h)
    with TestClient(h.app) as client:
        client.headers["X-API-Key"] = h.key("alice")
        refused = client.post("/v1/retrieve", params={"userId": "alice"},
                              json={"message": "refunds", "also": ["bob"]})
        unknown = client.post("/v1/retrieve", params={"userId": "alice"},
                              json={"message": "refunds", "also": ["nobody"]})
        assert refused.status_code == unknown.status_code == 403
        assert refused.text == unknown.text  # whether the scope exists is not revealed


def test_the_client_passes_also(h: Harness) -> None:
    from engram.client import EngramClient
    from tests.service import running

    _fill(h)
    with running(h.app) as url, EngramClient(url, h.key("alice", "kb")) as client:
        result = client.retrieve("How are refunds on the Pro plan computed?", user_id="alice", also=["kb"])
        assert result.memories[0].content.startswith("Refunds on the Pro plan")
        assert result.memories[0].collection == "user:kb"
