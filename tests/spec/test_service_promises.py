"""What the retrieval policy promises of the HTTP service (issue 43): session gating, the exact
prompt format and the admin interleaving ratio, over a real app on a real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram.embedders.fake import FakeEmbedder
from engram.service import ServiceSettings
from tests.service import Harness, harness


def _client(h: Harness, *, admin: bool = False) -> TestClient:
    c = TestClient(h.app, raise_server_exceptions=False)
    c.headers["Authorization"] = f"Bearer {h.key('u1', admin=admin)}"
    return c


@pytest.fixture(params=[False, True], ids=["default", "require_session"])
def gated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[TestClient, bool]]:
    h = harness(tmp_path, FakeEmbedder(), ServiceSettings(require_session=request.param))
    try:
        with _client(h) as c:
            assert c.post("/v1/memories?userId=u1", json={"content": "Acme prefers NET30", "kind": "fact"}).is_success
            yield c, request.param
    finally:
        h.close()


def test_retrieve_without_a_session_searches_only_when_the_setting_allows(gated: tuple[TestClient, bool]) -> None:
    client, require = gated
    body = {"message": "How does Acme pay?", "config": {"minScore": 0}}
    without = client.post("/v1/retrieve?userId=u1", json=body).json()
    assert (without["memories"] == []) is require
    with_session = client.post("/v1/retrieve?userId=u1", json={**body, "sessionId": "s1"}).json()
    assert [m["content"] for m in with_session["memories"]] == ["Acme prefers NET30"]


def test_the_service_renders_the_policy_spec_format_and_applies_the_admin_ratio(tmp_path: Path) -> None:
    h = harness(tmp_path, FakeEmbedder())
    try:
        with _client(h, admin=True) as c:
            for i in range(4):
                c.post("/v1/memories?userId=u1", json={"content": f"Acme order {i} of espresso", "kind": "fact",
                                                       "createdAt": f"2026-03-0{i + 1}T10:00:00+00:00"})
            put = c.put("/v1/admin/settings", json={"retrieval": {"minScore": 0},
                                                    "interleaving": {"strategy": "alternate", "ratio": 1.0}})
            assert put.is_success, put.text
            body = {"sessionId": "s1", "message": "Acme espresso order", "format": "policy_spec"}
            out = c.post("/v1/retrieve?userId=u1", json=body).json()
            assert out["metadata"]["config"]["interleaveRatio"] == 1.0
            assert out["presentationOrder"] == [m["id"] for m in out["memories"]]  # ratio 1: all by score
            assert "(confidence: " in out["prompt"] and out["prompt"].rstrip().endswith("ms_")
    finally:
        h.close()
