"""Per-request config overrides: a non-admin key stays within the admin ranges (AdminMemorySettings)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram.ext import Embedder
from engram.service import ServiceSettings
from tests.service import Harness, harness


@pytest.fixture
def h(tmp_path: Path, embedder: Embedder) -> Iterator[Harness]:
    made = harness(tmp_path, embedder, ServiceSettings(rate=0))
    made.memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    yield made
    made.close()


def retrieve(client: TestClient, token: str, config: dict[str, object]) -> tuple[int, dict[str, object]]:
    response = client.post("/v1/retrieve", json={"userId": "u1", "message": "How does Acme pay?", "config": config},
                           headers={"Authorization": f"Bearer {token}"})
    body: dict[str, object] = response.json()
    return response.status_code, body


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"topK": 500}, "config.topK"),
        ({"topK": 21}, "config.topK"),
        ({"maxTokens": 900_000}, "config.maxTokens"),
        ({"maxTokens": 99}, "config.maxTokens"),
        ({"clipSentences": 50}, "config.clipSentences"),
        ({"candidateLimit": 10_000}, "config.candidateLimit"),
    ],
)
def test_overrides_beyond_the_admin_ranges_are_422_for_non_admin_keys(
    h: Harness, config: dict[str, object], field: str
) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as client:
        status, body = retrieve(client, h.key("u1"), config)
    assert status == 422, body
    error = body["error"]
    assert isinstance(error, dict) and error["field"] == field and error["code"] == "INVALID_CONFIG"
    assert "[" in error["message"]  # names the allowed range


def test_overrides_within_the_admin_ranges_are_accepted(h: Harness) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as client:
        for config in ({"topK": 1}, {"topK": 20, "maxTokens": 3000, "clipSentences": 5},
                       {"maxTokens": 100, "minScore": 0.0}, {"candidateLimit": 200}):
            status, body = retrieve(client, h.key("u1"), config)
            assert status == 200, (config, body)


def test_admin_keys_may_override_beyond_the_admin_ranges(h: Harness) -> None:
    with TestClient(h.app, raise_server_exceptions=False) as client:
        status, body = retrieve(client, h.key("u1", admin=True), {"topK": 50, "maxTokens": 10_000})
    assert status == 200, body
    meta = body["metadata"]
    assert isinstance(meta, dict) and meta["config"]["topK"] == 50
