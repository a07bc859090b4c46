"""A client generated from /openapi.json by openapi-python-client, against the real service.

The client is generated at test time, into a temporary folder, from the spec the app serves, and
every route is called through it over HTTP: each success parses into its declared model with no
undeclared key, and each error (401, 403, 404, 413, 422, 429) parses into ``ErrorOut``, never into
an empty success.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engram.ext import Embedder
from engram.service import ServiceSettings
from tests.service import Harness, harness, running

pytest.importorskip("openapi_python_client")
PACKAGE = "engram_generated_client"


def generate(spec: dict[str, Any], folder: Path) -> ModuleType:
    (folder / "spec.json").write_text(json.dumps(spec))
    (folder / "config.yaml").write_text("post_hooks: []\n")  # no formatter run: the code is only imported
    tool = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent)) or "openapi-python-client"
    done = subprocess.run(
        [tool, "generate", "--path", str(folder / "spec.json"), "--output-path", str(folder / PACKAGE),
         "--meta", "none", "--config", str(folder / "config.yaml")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(folder))
    return importlib.import_module(PACKAGE)


class Api:
    """The generated client's calls by operation id, remembering which were made."""

    def __init__(self, package: ModuleType, spec: dict[str, Any], url: str) -> None:
        self.package = package
        self.url = url
        self.modules = {
            op["operationId"]: importlib.import_module(f"{PACKAGE}.api.{op['tags'][0]}.{op['operationId']}")
            for ops in spec["paths"].values() for op in ops.values()
        }
        self.called: set[str] = set()

    def client(self, token: str | None) -> Any:
        if token is None:
            return self.package.Client(base_url=self.url)
        return self.package.AuthenticatedClient(base_url=self.url, token=token)

    def call(self, operation: str, token: str | None, /, **kw: Any) -> Any:
        self.called.add(operation)
        return self.modules[operation].sync_detailed(client=self.client(token), **kw)

    def model(self, name: str, data: dict[str, Any]) -> Any:
        return getattr(importlib.import_module(f"{PACKAGE}.models"), name).from_dict(data)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[tuple[Api, Harness]]:
    h = harness(tmp_path_factory.mktemp("svc"), embedder, ServiceSettings(max_body_bytes=200_000))
    package = generate(h.app.openapi(), tmp_path_factory.mktemp("gen"))
    try:
        with running(h.app) as url:
            yield Api(package, h.app.openapi(), url), h
    finally:
        sys.modules.pop(PACKAGE, None)
        for name in [m for m in sys.modules if m.startswith(PACKAGE + ".")]:
            sys.modules.pop(name)
        h.close()


def ok(response: Any, model: str, status: int = 200) -> Any:
    """A success: the declared status, parsed into ``model``, every key the service sent declared."""
    assert response.status_code == status, response.content[:500]
    parsed = response.parsed
    assert type(parsed).__name__ == model, (type(parsed).__name__, response.content[:300])
    assert parsed.additional_keys == [], f"{model} does not declare {parsed.additional_keys}"
    return parsed


def refused(response: Any, status: int, code: str, field: str | None = None) -> Any:
    """An error: the status, parsed into ``ErrorOut`` with the service's code (and field)."""
    assert response.status_code == status, response.content[:500]
    parsed = response.parsed
    assert type(parsed).__name__ == "ErrorOut", (type(parsed).__name__, response.content[:300])
    assert parsed.error.code == code and parsed.error.message
    if field is not None:
        assert parsed.error.field == field, parsed.error.field
    return parsed


def test_every_route_round_trips_through_a_generated_client(api: tuple[Api, Harness]) -> None:
    a, h = api
    token, admin = h.key("u1", "u2"), h.key("u9", admin=True)
    assert ok(a.call("healthz", None), "HealthOut").status == "ok"
    assert ok(a.call("me", token), "ApiKeyOut").scopes == ["user:u1", "user:u2"]

    first = ok(a.call("add_memory", token, user_id="u1", body=a.model(
        "AddRequest", {"content": "Acme prefers NET30 payment terms", "kind": "fact", "importance": 0.8})),
        "MemoryRecordOut", 201)
    assert first.user_id == "u1" and first.kind == "fact"
    chat = ok(a.call("add_memory", token, user_id="u1", body=a.model(
        "AddRequest", {"messages": [{"role": "user", "content": "Ship the Acme order on Friday"}]})),
        "MemoriesOut", 201)
    batch = ok(a.call("add_memories", token, user_id="u1", body=a.model(
        "MemoryBatch", {"memories": [{"content": "Call Acme finance before invoicing", "kind": "procedure"}]})),
        "MemoriesOut", 201)
    second = batch.memories[0]
    listed = ok(a.call("list_memories", token, user_id="u1", kind=["fact", "procedure"]), "MemoriesOut")
    assert {m.id for m in listed.memories} == {first.id, second.id}
    assert ok(a.call("get_memory", token, memory_id=first.id, user_id="u1"), "MemoryRecordOut").content.startswith(
        "Acme")
    changed = ok(a.call("update_memory", token, memory_id=first.id, user_id="u1",
                        body=a.model("MemoryPatch", {"tags": ["billing"]})), "MemoryRecordOut")
    assert changed.tags == ["billing"]
    link = ok(a.call("add_link", token, user_id="u1", body=a.model(
        "LinkIn", {"fromId": second.id, "toId": first.id, "type": "about", "strength": 0.5})), "LinkOut", 201)
    assert link.from_id == second.id
    assert len(ok(a.call("memory_links", token, memory_id=first.id, user_id="u1"), "LinksOut").links) == 1
    history = ok(a.call("memory_history", token, memory_id=first.id, user_id="u1"), "HistoryOut")
    assert history.memory.id == first.id and history.events
    ok(a.call("add_entity", token, user_id="u1", body=a.model(
        "EntityIn", {"entityId": "acme", "type": "org", "name": "Acme"})), "EntityOut", 201)

    got = ok(a.call("retrieve", token, user_id="u1", body=a.model(
        "RetrieveRequest", {"message": "How does Acme pay?", "format": "policy", "config": {"topK": 5}})),
        "RetrievalOut")
    assert got.memories and "NET30" in got.prompt
    assert got.memories[0].signals.additional_keys  # signals are a map by name
    recalled = ok(a.call("recall", token, user_id="u1", body=a.model(
        "RecallRequest", {"mode": "recent", "maxResults": 5})), "RecallOut")
    assert recalled.mode == "recent" and recalled.count == len(recalled.memories) > 0
    fed = ok(a.call("feedback", token, user_id="u1", body=a.model(
        "FeedbackRequest", {"retrievalId": got.metadata.retrieval_id, "usedIds": [got.memories[0].id]})),
        "FeedbackOut")
    assert fed.ok is True

    report = ok(a.call("ingest", token, user_id="u1", body=a.model("IngestRequest", {"documents": [
        {"name": "terms.md", "content": "# Terms\n\nAcme pays within thirty days of invoice."}]})),
        "IngestReportOut", 201)
    assert report.files
    doc = ok(a.call("get_document", token, user_id="u1", body=a.model(
        "DocumentQuery", {"meta": {"filename": "terms.md"}, "strategy": "latest"})), "DocumentOut")
    assert "thirty days" in doc.content
    assert ok(a.call("document_versions", token, user_id="u1", name="terms.md"), "VersionsOut").versions

    assert "engram_" in a.call("metrics", None).parsed
    ok(a.call("get_settings", admin), "AdminSettingsOut")
    put = ok(a.call("put_settings", admin, body=a.model("AdminSettingsBody", {"retrieval": {"topK": 6}})),
             "AdminSettingsOut")
    assert put.retrieval.top_k == 6
    everyone = h.key(admin=True)  # what spans every user needs an admin key for every user
    refused(a.call("stats", admin), 403, "FORBIDDEN")
    assert ok(a.call("stats", everyone), "StatsOut").backend == "sqlite"
    deleted = ok(a.call("delete_memory", token, memory_id=chat.memories[0].id, user_id="u1"), "DeletedOut")
    assert deleted.deleted is True
    assert ok(a.call("forget_user", token, user_id="u2"), "ForgottenOut").user_id == "u2"
    refused(a.call("reset", admin), 403, "FORBIDDEN")
    assert ok(a.call("list_memories", token, user_id="u1"), "MemoriesOut").memories  # nothing was reset
    assert ok(a.call("reset", everyone), "ResetOut").deleted >= 3

    assert a.called == set(a.modules), f"not called: {set(a.modules) - a.called}"


def test_errors_parse_as_the_error_model(api: tuple[Api, Harness]) -> None:
    a, h = api
    token, other = h.key("e1"), h.key("e2")
    # 422 from the request schema: the field as the request spelled it, and where it was.
    bad = a.call("add_memory", token, user_id="e1", body=a.model("AddRequest", {"content": "x", "importance": "high"}))
    assert refused(bad, 422, "INVALID_INPUT", "importance").error.location == "body"
    # 422 from Engram's own checks: out of the range the schema declares.
    refused(a.call("recall", token, user_id="e1", body=a.model("RecallRequest", {"maxResults": 5000})), 422,
            "INVALID_INPUT", "maxResults")
    refused(a.call("retrieve", token, user_id="e1", body=a.model(
        "RetrieveRequest", {"message": "x", "config": {"topK": 50}})), 422, "INVALID_CONFIG", "config.topK")
    refused(a.call("list_memories", token, user_id="e1", limit=0), 422, "INVALID_INPUT", "limit")
    refused(a.call("get_memory", "egk_nope_nope", memory_id="m", user_id="e1"), 401, "UNAUTHORIZED")
    refused(a.call("get_memory", token, memory_id="m", user_id="e2"), 403, "FORBIDDEN")
    refused(a.call("stats", other), 403, "FORBIDDEN")
    refused(a.call("get_memory", token, memory_id="missing", user_id="e1"), 404, "MEMORY_NOT_FOUND")
    refused(a.call("delete_memory", token, memory_id="missing", user_id="e1"), 404, "MEMORY_NOT_FOUND")
    refused(a.call("add_memory", token, user_id="e1", body=a.model("AddRequest", {"content": "x" * 300_000})),
            413, "PAYLOAD_TOO_LARGE")
    slow = h.key("e3", rate=0.001, burst=1)
    a.call("me", slow)
    limited = a.call("me", slow)
    refused(limited, 429, "RATE_LIMITED")
    assert int(limited.headers["retry-after"]) >= 1


def test_the_spec_declares_errors_security_and_ranges(api: tuple[Api, Harness]) -> None:
    _, h = api
    spec = h.app.openapi()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearer"] == {"type": "http", "scheme": "bearer", "bearerFormat": "egk_<id>_<secret>",
                                 "description": schemes["bearer"]["description"]}
    assert schemes["apiKey"]["in"] == "header" and schemes["apiKey"]["name"] == "X-API-Key"
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            if path in ("/healthz", "/metrics"):
                assert "security" not in op
                continue
            assert {"bearer": []} in op["security"], (method, path)
            for status in ("401", "403", "413", "422", "429"):
                schema = op["responses"][status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, status)
    schemas = spec["components"]["schemas"]
    top_k = schemas["ConfigOverrides"]["properties"]["topK"]["anyOf"][0]
    assert (top_k["minimum"], top_k["maximum"]) == (1, 1000)
    assert schemas["RecallRequest"]["properties"]["maxResults"]["maximum"] == 1000
    assert schemas["AdminRetrieval"]["properties"]["topK"]["anyOf"][0]["maximum"] == 20
    assert "procedure" in schemas["AddRequest"]["properties"]["kind"]["anyOf"][0]["enum"]
    assert spec["paths"]["/v1/memories/{memory_id}"]["get"]["responses"]["404"]
    assert "Retry-After" in spec["paths"]["/v1/retrieve"]["post"]["responses"]["429"]["headers"]
