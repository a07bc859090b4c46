"""``POST /v1/retrieve``'s metadata says what happened: the time range the query was read to mean and
how many candidates each stage dropped, in the wire's camelCase, and /openapi.json describes them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engram.embedders import named_embedder
from tests.service import Harness, harness

NOW = "2024-02-15T12:00:00+00:00"
DROPS = ("belowMinScore", "dedupRemoved", "mmrRemoved", "beyondTopK", "budgetRemoved")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    embedder = named_embedder("hash-32")
    assert embedder is not None
    h: Harness = harness(tmp_path, embedder)
    for text in ("Acme pays by wire", "Globex prefers cheques", "Initech pays late"):
        h.memory.add(text, user_id="u1", created_at="2024-02-07T09:00:00+00:00")
    with TestClient(h.app, raise_server_exceptions=False) as c:
        c.headers["Authorization"] = f"Bearer {h.key('u1')}"
        yield c
    h.close()


def retrieve(client: TestClient, message: str, **config: object) -> dict[str, Any]:
    response = client.post("/v1/retrieve", params={"userId": "u1"},
                           json={"message": message, "now": NOW, "config": config})
    assert response.status_code == 200, response.text
    meta: dict[str, Any] = response.json()["metadata"]
    return meta


def test_three_below_min_score_and_no_time_range(client: TestClient) -> None:
    meta = retrieve(client, "How does Acme pay?", minScore=1.0)
    assert meta["totalResults"] == 3 and meta["includedResults"] == 0
    assert {name: meta[name] for name in DROPS} == {
        "belowMinScore": 3, "dedupRemoved": 0, "mmrRemoved": 0, "beyondTopK": 0, "budgetRemoved": 0}
    assert meta["timeRange"] is None


def test_the_understood_time_range_and_top_k_drops(client: TestClient) -> None:
    meta = retrieve(client, "What did Acme say last week?", minScore=0.0, topK=1)
    time_range = meta["timeRange"]
    assert isinstance(time_range, dict)
    assert time_range["start"] == "2024-02-05T00:00:00+00:00" and time_range["end"].startswith("2024-02-11T23:59:59")
    assert time_range["expression"] == "last week" and time_range["vague"] is False and time_range["about"] is False
    about = retrieve(client, "What were the sales figures for last month?", minScore=0.0)["timeRange"]
    assert about["expression"] == "last month" and about["about"] is True and about["vague"] is False
    assert meta["includedResults"] == 1 and meta["mmrRemoved"] + meta["beyondTopK"] == 2
    assert meta["queryType"] and meta["strategy"]


def test_openapi_describes_the_new_metadata(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    properties = schemas["RetrievalMetadataOut"]["properties"]
    assert set(DROPS) | {"timeRange"} <= set(properties)
    refs = [option.get("$ref", "") for option in properties["timeRange"]["anyOf"]]
    range_schema = schemas[next(r for r in refs if r).rsplit("/", 1)[-1]]
    assert {"start", "end", "expression", "vague", "about"} <= set(range_schema["properties"])
