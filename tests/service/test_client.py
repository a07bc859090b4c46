"""EngramClient against a real server on loopback: Memory's methods, engram.errors on failure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.client import EngramClient, Forbidden, Unauthorized
from engram.config import RetrievalConfig
from engram.errors import ConfigError, MemoryNotFound, ValidationError
from engram.ext import Embedder
from tests.service import Harness, harness, running


@pytest.fixture
def served(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Harness, str]]:
    h = harness(tmp_path, embedder)
    with running(h.app) as url:
        yield h, url
    h.close()


def test_client_mirrors_memory(served: tuple[Harness, str]) -> None:
    h, url = served
    with EngramClient(url, h.key("u1", admin=False)) as client:
        assert client.health()
        record = client.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact", tags=["billing"])
        assert record.tags == ("billing",) and record.created_at.tzinfo is not None
        assert client.get(record.id, user_id="u1") == h.memory.get(record.id, user_id="u1")
        more = client.add_many([{"content": "Globex pays upfront", "user_id": "u1", "kind": "fact"}])
        assert len(more) == 1 and len(client.list(user_id="u1")) == 2
        updated = client.update(record.id, user_id="u1", importance=0.8)
        assert updated.importance == 0.8
        link = client.link(more[0].id, record.id, "contrasts", 0.5, user_id="u1")
        assert client.links(record.id, user_id="u1") == [link]
        entity = client.add_entity("customer:acme", user_id="u1", aliases=["Acme"])
        assert entity.type == "customer" and entity.aliases == ("Acme",)
        result = client.retrieve("How does Acme pay?", user_id="u1", config=RetrievalConfig(min_score=0.0))
        assert result.ids()[0] == record.id and "NET30" in result.to_prompt()
        assert result.to_dict()["metadata"]["config"]["minScore"] == 0.0
        assert client.delete(record.id, user_id="u1") is True
        assert client.delete(record.id, user_id="u1") is False
        assert client.forget_user("u1") == 1
        assert "engram_retrieval_latency_ms" in client.metrics()


def test_client_raises_engram_errors(served: tuple[Harness, str]) -> None:
    h, url = served
    with EngramClient(url, h.key("u1")) as client:
        with pytest.raises(MemoryNotFound):
            client.get("NOPE", user_id="u1")
        with pytest.raises(ConfigError) as config_error:
            client.retrieve("x", user_id="u1", config={"topK": 0})
        assert config_error.value.field == "config.topK"
        with pytest.raises(ValidationError):
            client.add("   ", user_id="u1")
        with pytest.raises(Forbidden):
            client.get("NOPE", user_id="u2")
        with pytest.raises(Forbidden):
            client.stats()
    with EngramClient(url, "egk_bogus_key") as anonymous, pytest.raises(Unauthorized):
        anonymous.list(user_id="u1")
    with EngramClient(url, h.key(admin=True)) as admin:
        assert "memories" in str(admin.stats()) or admin.stats() is not None
        changed = admin.admin_settings({"retrieval": {"topK": 5}})
        assert changed["retrieval"]["topK"] == 5


def test_client_refuses_filters_the_wire_does_not_carry(served: tuple[Harness, str]) -> None:
    h, url = served
    with EngramClient(url, h.key("u1")) as client:
        with pytest.raises(ValidationError) as refused:
            client.list(user_id="u1", filters={"metadata": {"a": 1}})
        assert refused.value.field == "filters.metadata"
        with pytest.raises(ValidationError) as refused:
            client.retrieve("x", user_id="u1", filters={"statuses": ["active", "superseded"]})
        assert refused.value.field == "filters.statuses"


ITEMS = ("cranes", "forklifts", "pallets", "monitors", "laptops", "desks", "chairs", "printers", "cables", "routers",
         "servers", "phones", "tablets", "lamps", "shelves", "lockers", "tents", "ladders", "drills", "saws",
         "paint", "tiles", "glass", "timber", "steel")


def test_a_mem0_filter_narrows_inside_the_servers_store(served: tuple[Harness, str]) -> None:
    """Mem0's filter language over HTTP: the server's store admits only matching memories before
    ranking, so a match that twenty-five better non-matches outrank is still found (filtering the
    20 best results found nothing); a malformed filter is a 422 naming its part, for retrieve and
    list alike."""
    h, url = served
    h.memory.add_many([{"user_id": "u1", "content": f"Acme paid the invoice for the {item} by bank transfer",
                        "metadata": {"category": "billing"}} for item in ITEMS])
    h.memory.add_many([{"user_id": "u1", "content": "Lunch with Bruno on Friday",
                        "metadata": {"category": "work", "priority": 7}}])
    with EngramClient(url, h.key("u1")) as client:
        found = client.search("How does Acme pay invoices?", user_id="u1", filters={"category": "work"},
                              threshold=0.0)
        assert [r["memory"] for r in found["results"]] == ["Lunch with Bruno on Friday"]
        ranged = client.search("Acme invoices", user_id="u1", filters={"priority": {"gte": 5}}, threshold=0.0)
        assert [r["metadata"]["category"] for r in ranged["results"]] == ["work"]
        listed = client.get_all(user_id="u1", filters={"OR": [{"category": "work"}, {"priority": {"gt": 100}}]})
        assert [r["memory"] for r in listed["results"]] == ["Lunch with Bruno on Friday"]
        by_list = client.list(user_id="u1", filters={"where": {"category": {"ne": "work"}}}, limit=100)
        assert len(by_list) == len(ITEMS)
        with pytest.raises(ValidationError) as refused:
            client.retrieve("x", user_id="u1", filters={"where": {"priority": {"between": [1, 2]}}})
        assert refused.value.field.startswith("filters.where")
        with pytest.raises(ValidationError) as refused:
            client.list(user_id="u1", filters={"where": {"priority": {"between": [1, 2]}}})
        assert refused.value.field.startswith("where")
