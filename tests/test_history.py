"""``history(memory_id)``: the audit log each change leaves, through Memory and over HTTP (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.errors import MemoryNotFound
from tests.service import harness


def _fact(memory: Memory, obj: str, when: str) -> str:
    [record] = memory.add_many([{"user_id": "alice", "kind": "fact", "subject": "Acme", "predicate": "uses",
                                 "object": obj, "content": f"Acme uses {obj}", "created_at": when}])
    return record.id


def test_add_update_supersession_and_delete_each_leave_exactly_their_row(each_backend: Memory) -> None:
    memory = each_backend
    stripe = _fact(memory, "Stripe", "2024-01-01T00:00:00+00:00")
    memory.update(stripe, "Acme uses Stripe Billing", user_id="alice")
    adyen = _fact(memory, "Adyen", "2024-03-01T00:00:00+00:00")  # newer: supersedes Stripe
    assert memory.get(stripe).status == "superseded"
    assert memory.delete(stripe, user_id="alice")

    events = memory.history(stripe, user_id="alice")
    assert [e.event for e in events] == ["add", "update", "supersede", "delete"]
    assert all(e.memory_id == stripe for e in events)
    times = [e.at for e in events]
    assert times == sorted(times)
    # Deletion leaves that each change happened, and which fields it touched, but none of the text.
    assert all(e.before is None and e.after is None for e in events)
    assert "content" in events[1].fields and events[2].fields == ("status", "valid_to")
    # The newer fact's own log: it was added, and deleting the older one changed nothing of it.
    [added] = memory.history(adyen)  # id-only, as get(memory_id)
    assert (added.event, added.before, added.after) == ("add", None, "Acme uses Adyen")


def test_deleting_the_newer_fact_restores_the_older(each_backend: Memory) -> None:
    memory = each_backend
    stripe = _fact(memory, "Stripe", "2024-01-01T00:00:00+00:00")
    adyen = _fact(memory, "Adyen", "2024-03-01T00:00:00+00:00")
    assert memory.delete(adyen)
    events = memory.history(stripe, user_id="alice")
    assert [(e.event, e.before, e.after) for e in events] == [
        ("add", None, "Acme uses Stripe"), ("supersede", "Acme uses Stripe", "Acme uses Stripe"),
        ("restore", "Acme uses Stripe", "Acme uses Stripe"),
    ]
    assert memory.get(stripe).status == "active"


def test_unknown_ids_and_other_users_are_not_found(each_backend: Memory) -> None:
    memory = each_backend
    mine = memory.add("a note", user_id="alice")
    with pytest.raises(MemoryNotFound):
        memory.history(mine.id, user_id="bob")
    with pytest.raises(MemoryNotFound):
        memory.history("0" * 26)
    memory.forget_user("alice")
    with pytest.raises(MemoryNotFound):  # forgetting a user takes their log with them
        memory.history(mine.id, user_id="alice")


def test_http_history_is_scoped_by_the_key_and_outlives_the_memory(tmp_path: Path) -> None:
    h = harness(tmp_path, FakeEmbedder())
    try:
        with TestClient(h.app, raise_server_exceptions=False) as client:
            client.headers["Authorization"] = f"Bearer {h.key('u1')}"
            made = client.post("/v1/memories", json={"userId": "u1", "content": "first words"}).json()
            client.patch(f"/v1/memories/{made['id']}", json={"userId": "u1", "content": "second words"})
            live = client.get(f"/v1/memories/{made['id']}/history", params={"userId": "u1"}).json()
            assert [(e["event"], e["before"], e["after"]) for e in live["events"]] == [
                ("add", None, None), ("update", None, "second words")]  # an edit erases the replaced text
            assert live["memory"]["content"] == "second words"
            other = client.get(f"/v1/memories/{made['id']}/history", params={"userId": "u2"})
            assert other.status_code == 403
            assert client.delete(f"/v1/memories/{made['id']}", params={"userId": "u1"}).status_code == 200
            gone = client.get(f"/v1/memories/{made['id']}/history", params={"userId": "u1"}).json()
            assert [e["event"] for e in gone["events"]] == ["add", "update", "delete"]
            assert "memory" not in gone and all(e["before"] is None and e["after"] is None for e in gone["events"])
            missing = client.get(f"/v1/memories/{'0' * 26}/history", params={"userId": "u1"})
            assert missing.status_code == 404
    finally:
        h.close()


@pytest.mark.parametrize("item", [
    {"content": "plain"},
    {"content": "a message", "role": "user", "session_id": "s1", "tags": ["t"], "metadata": {"k": 1}},
    {"content": "Acme pays", "kind": "fact", "subject": "Acme", "predicate": "pays", "object": "invoices"},
    {"content": "On a P1", "kind": "procedure", "trigger": "a P1 ticket", "action": "page the on-call"},
    {"content": "Doc", "kind": "document", "doc_key": "readme", "metadata": {}},
])
def test_an_add_names_the_fields_it_sets_as_a_change_from_nothing_would(item: dict[str, object]) -> None:
    from engram.stores.sql.history import added_fields, changed_fields

    with Memory(":memory:", embedder=FakeEmbedder(16)) as memory:
        record = memory.add_many([{"user_id": "u", **item}])[0]
    assert added_fields(record) == changed_fields(None, record)
    assert "content" in added_fields(record) and "id" not in added_fields(record)
