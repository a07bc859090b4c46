"""Attacks from the outside review (issue 12) against the HTTP service, with the figures reported.

- upload races across users whose ids share a basename (the old spool mixed their files);
- extreme and ill-typed inputs on every route: no answer may be a 5xx;
- per-request config overrides: a non-admin key gets exactly the admin ranges, an admin key more.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from engram.embedders.fake import FakeEmbedder
from engram.service import ServiceSettings
from tests.reliability._workers import report, scale
from tests.service import Harness, harness, running

# Ids that one basename, one sanitizer or one prefix check could confuse.
RACERS = ("acme:/bob", "bob", "acme:bob", "acme_bob", "acme:x/../bob")


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    made = harness(tmp_path, FakeEmbedder(64), ServiceSettings(rate=0))
    yield made
    made.close()


def test_upload_races_across_users(h: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spool = tmp_path / "tmp"
    spool.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    token = h.key(*RACERS)
    rounds = scale(6, 30)
    statuses: Counter[int] = Counter()
    problems: list[str] = []
    barrier = threading.Barrier(len(RACERS))
    lock = threading.Lock()

    def racer(url: str, user: str) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            for i in range(rounds):
                barrier.wait()
                docs = [{"name": name, "content": f"{name} of {user}, round {i}."}
                        for name in ("notes.md", "a/notes.md", "b/notes.md")]
                response = http.post("/v1/documents", json={"userId": user, "documents": docs})
                with lock:
                    statuses[response.status_code] += 1
                if response.status_code != 201:
                    problems.append(f"{user} round {i}: {response.status_code} {response.text[:200]}")
                    continue
                files = response.json()["files"]
                if [f["path"] for f in files] != ["notes.md", "a/notes.md", "b/notes.md"] or any(
                    f["status"] not in ("new", "changed") for f in files
                ):
                    problems.append(f"{user} round {i}: {files}")
                got = http.post("/v1/documents/query", json={"userId": user, "meta": {"path": "a/notes.md"}})
                with lock:
                    statuses[got.status_code] += 1
                if got.status_code != 200 or got.json()["content"] != f"a/notes.md of {user}, round {i}.":
                    problems.append(f"{user} round {i} read {got.status_code} {got.text[:200]}")

    with running(h.app) as url:
        threads = [threading.Thread(target=racer, args=(url, user)) for user in RACERS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
    leaks = 0
    for user in RACERS:
        for name in ("notes.md", "a/notes.md", "b/notes.md"):
            found = h.memory.get_document({"path": name}, user_id=user)
            leaks += found.content != f"{name} of {user}, round {rounds - 1}."
        versions = h.memory.document_versions("notes.md", user_id=user)
        leaks += sum(1 for v in versions if f"of {user}," not in v.content)
    figures = {"users": len(RACERS), "requests": sum(statuses.values()), "statuses": dict(statuses),
               "server_errors": sum(n for code, n in statuses.items() if code >= 500), "cross_user_or_lost": leaks,
               "files_left_in_temp": len(list(spool.rglob("*")))}
    report("trust_upload_races", figures)
    assert not problems, problems[:5]
    assert figures["server_errors"] == 0 and leaks == 0 and figures["files_left_in_temp"] == 0


LATE, EARLY = "9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"
ODD_TIMES = (LATE, EARLY, "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2024-13-45T99:99:99Z",
             "2024-01-01T00:00:00+99:00", "2024-01-01", "", " ", "\ud800", "x" * 64, "1e308")
ODD_VALUES: tuple[Any, ...] = (5, -1, 10**30, -(10**30), 1.5, True, None, "", "x" * 300, [], {}, [1, "a"],
                               {"a": {"b": {"c": 1}}}, "\ud800", "a\x00b")


def _attacks() -> Iterator[tuple[str, str, dict[str, Any]]]:
    memory = {"userId": "u1", "content": "Acme prefers NET30"}
    for when in ODD_TIMES:
        for field in ("createdAt", "validFrom", "validTo"):
            yield "POST", "/v1/memories", {**memory, field: when}
        yield "POST", "/v1/memories/batch", {"memories": [{**memory, "createdAt": when}]}
        yield "PATCH", "/v1/memories/{id}", {"userId": "u1", "validTo": when}
        yield "POST", "/v1/retrieve", {"userId": "u1", "message": "Acme last week", "now": when}
        for field in ("createdAfter", "createdBefore"):
            yield "POST", "/v1/retrieve", {"userId": "u1", "message": "Acme", "filters": {field: when}}
        yield "POST", "/v1/recall", {"userId": "u1", "mode": "temporal", "start": when, "end": LATE}
        yield "POST", "/v1/recall", {"userId": "u1", "mode": "recent", "query": "Acme"}
        yield "POST", "/v1/documents/query", {"userId": "u1", "meta": {"filename": "a.md"}, "asOf": when}
    for value in ODD_VALUES:
        yield "POST", "/v1/documents/query", {"userId": "u1", "meta": {"filename": "a.md", "tags": value}}
        yield "POST", "/v1/documents/query", {"userId": "u1", "meta": {"filename": value, "path": value}}
        yield "POST", "/v1/documents/query", {"userId": "u1", "meta": {"topic": value, "query": value}}
        yield "POST", "/v1/documents/query", {"userId": "u1", "meta": value}
        yield "POST", "/v1/documents/query", {"userId": "u1", "meta": {"topic": "x"}, "defaultTags": value}
        yield "POST", "/v1/documents", {"userId": "u1", "documents": [{"name": value, "content": "x"}]}
        yield "POST", "/v1/documents", {"userId": "u1", "documents": [{"name": "a.md", "content": value}]}
        yield "POST", "/v1/memories", {**memory, "metadata": {"k": value}}
        yield "POST", "/v1/memories", {**memory, "importance": value}
        yield "POST", "/v1/memories", {**memory, "tags": value}
        yield "POST", "/v1/retrieve", {"userId": "u1", "message": value}
        yield "POST", "/v1/recall", {"userId": "u1", "mode": "relevant", "query": "Acme", "maxResults": value}
        yield "POST", "/v1/recall", {"userId": "u1", "mode": "linked", "memoryId": "x", "depth": value}
        for field in ("topK", "maxTokens", "clipSentences", "minScore", "candidateLimit", "mmrLambda"):
            yield "POST", "/v1/retrieve", {"userId": "u1", "message": "Acme", "config": {field: value}}
    for name in ("../../etc/passwd.md", "/etc/passwd.md", "C:\\x\\y.md", ".md", "..md", "a" * 197 + ".md",
                 "\u202e.md", "con.md", "a/b/c/d.txt", "x.pdf", "x.html", "x.exe"):
        yield "POST", "/v1/documents", {"userId": "u1", "documents": [{"name": name, "content": "<p>x</p>"}]}


def test_extreme_inputs_over_http_get_no_5xx(h: Harness) -> None:
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    with TestClient(h.app, raise_server_exceptions=False) as client:
        client.headers["Authorization"] = f"Bearer {h.key('u1', admin=True)}"
        made = client.post("/v1/memories", json={"userId": "u1", "content": "Acme prefers NET30", "kind": "fact"})
        memory_id = made.json()["id"]
        for method, path, body in _attacks():
            # json.dumps escapes a lone surrogate as \ud800 (httpx's own encoding would refuse it).
            response = client.request(method, path.format(id=memory_id), content=json.dumps(body),
                                      headers={"Content-Type": "application/json"})
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{method} {path} {body!r:.200} -> {response.status_code} {response.text[:200]}")
            elif response.status_code >= 400 and not response.json().get("error", {}).get("code"):
                failures.append(f"{method} {path} {body!r:.200} -> untyped {response.text[:200]}")
            elif response.status_code == 201 and path == "/v1/documents":
                assert tempfile.gettempdir() not in response.text
    figures = {"requests": sum(statuses.values()), "statuses": dict(sorted(statuses.items())),
               "server_errors": sum(n for code, n in statuses.items() if code >= 500)}
    report("trust_extreme_inputs", figures)
    assert not failures, failures[:5]


# (field, admin range, RetrievalConfig range, values tried)
RANGES: tuple[tuple[str, tuple[float, float], tuple[float, float], tuple[float, ...]], ...] = (
    ("topK", (1, 20), (1, 1000), (-1, 0, 1, 8, 20, 21, 500, 1000, 1001, 10**9)),
    ("maxTokens", (100, 3000), (1, 1_000_000), (0, 1, 99, 100, 1500, 3000, 3001, 900_000, 1_000_001)),
    ("clipSentences", (1, 5), (1, 50), (0, 1, 5, 6, 50, 51)),
    ("minScore", (0.0, 1.0), (0.0, 1.0), (-0.1, 0.0, 0.5, 1.0, 1.1)),
    ("candidateLimit", (1, 200), (1, 10_000), (0, 1, 50, 200, 201, 10_000, 10_001)),
)


def test_override_ranges_per_key_kind(h: Harness) -> None:
    h.memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    tried = wrong = server_errors = 0
    mismatches: list[str] = []
    with TestClient(h.app, raise_server_exceptions=False) as client:
        keys = {"tenant": h.key("u1"), "admin": h.key("u1", admin=True)}
        for field, admin_range, config_range, values in RANGES:
            for value in values:
                for kind, token in keys.items():
                    low, high = admin_range if kind == "tenant" else config_range
                    allowed = low <= value <= high
                    body = {"userId": "u1", "message": "How does Acme pay?", "config": {field: value}}
                    response = client.post("/v1/retrieve", json=body, headers={"Authorization": f"Bearer {token}"})
                    tried += 1
                    server_errors += response.status_code >= 500
                    ok = response.status_code == 200 if allowed else (
                        response.status_code == 422 and response.json()["error"]["field"] == f"config.{field}")
                    if not ok:
                        wrong += 1
                        mismatches.append(f"{kind} {field}={value}: {response.status_code} {response.text[:160]}")
    report("trust_override_ranges", {"requests": tried, "wrong_answers": wrong, "server_errors": server_errors})
    assert not mismatches, mismatches[:5]
