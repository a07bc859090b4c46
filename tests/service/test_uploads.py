"""POST /v1/documents: uploads are ingested per request, never through a path derived from the user's input.

The spool this replaces put every upload at ``<tmp>/engram-ingest/<basename(user)>/<basename(name)>``:
users ``acme:/bob`` and ``bob`` shared a folder, one request's cleanup deleted another's file, two
names with one basename in a request kept one, and the reply showed the server's paths.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from engram.ext import Embedder
from engram.service import ServiceSettings
from tests.service import Harness, harness, running

USERS = ("acme:/bob", "bob")


@pytest.fixture
def h(tmp_path: Path, embedder: Embedder) -> Iterator[Harness]:
    made = harness(tmp_path, embedder, ServiceSettings(rate=0))
    yield made
    made.close()


@pytest.fixture
def client(h: Harness) -> Iterator[TestClient]:
    with TestClient(h.app, raise_server_exceptions=False) as c:
        c.headers["Authorization"] = f"Bearer {h.key(*USERS, 'u1')}"
        yield c


def upload(client: TestClient | httpx.Client, user: str, *docs: tuple[str, str]) -> dict[str, Any]:
    response = client.post("/v1/documents", json={
        "userId": user, "documents": [{"name": n, "content": c} for n, c in docs]})
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def document(client: TestClient | httpx.Client, user: str, filename: str) -> str:
    response = client.post("/v1/documents/query", json={"userId": user, "meta": {"filename": filename}})
    assert response.status_code == 200, response.text
    return str(response.json()["content"])


def test_upload_spool_does_not_mix_users_uploading_concurrently(h: Harness) -> None:
    # Users whose ids have one basename upload the same file name at the same moment, many times:
    # each must ingest exactly its own text, every time, and read back only its own document.
    token = h.key(*USERS)
    rounds = 8
    failures: list[str] = []
    barrier = threading.Barrier(len(USERS))

    def worker(url: str, user: str) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            for i in range(rounds):
                barrier.wait()
                report = upload(http, user, ("notes.md", f"# Notes of {user}\n\nRound {i} belongs to {user}."))
                statuses = [f["status"] for f in report["files"]]
                if statuses != (["new"] if i == 0 else ["changed"]):
                    failures.append(f"{user} round {i}: {report['files']}")
                text = document(http, user, "notes.md")
                if f"Round {i} belongs to {user}." not in text:
                    failures.append(f"{user} round {i} read {text!r}")

    with running(h.app) as url:
        threads = [threading.Thread(target=worker, args=(url, user)) for user in USERS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
    assert not failures, failures
    for user in USERS:
        versions = h.memory.document_versions("notes.md", user_id=user)
        assert [v.version for v in versions] == list(range(1, rounds + 1))
        assert all(user in v.content and (v.content.count("belongs to") == 1) for v in versions)
        other = next(u for u in USERS if u != user)
        assert not any(f"belongs to {other}." in v.content for v in versions)


def test_upload_duplicate_basenames_in_one_request_are_all_reported(client: TestClient) -> None:
    report = upload(client, "u1", ("a/notes.md", "alpha text"), ("b/notes.md", "beta text"), ("notes.md", "gamma"))
    assert [f["path"] for f in report["files"]] == ["a/notes.md", "b/notes.md", "notes.md"]
    assert [f["status"] for f in report["files"]] == ["new", "new", "new"]
    assert report["counts"]["new"] == 3
    assert len({f["doc_key"] for f in report["files"]}) == 3
    # One name twice in one request: two versions of one document, in request order.
    again = upload(client, "u1", ("x.md", "first draft"), ("x.md", "second draft"))
    assert [(f["status"], f["version"]) for f in again["files"]] == [("new", 1), ("changed", 2)]
    assert document(client, "u1", "x.md") == "second draft"


def test_upload_response_contains_no_server_path(client: TestClient) -> None:
    response = client.post("/v1/documents", json={"userId": "u1", "documents": [
        {"name": "terms.md", "content": "Acme pays in thirty days."},
        {"name": "broken.pdf", "content": "not a pdf"},
    ]})
    assert response.status_code == 201, response.text
    text = response.text
    assert tempfile.gettempdir() not in text and "engram-ingest" not in text
    assert [f["path"] for f in response.json()["files"]] == ["terms.md", "broken.pdf"]
    queried = client.post("/v1/documents/query", json={"userId": "u1", "meta": {"filename": "terms.md"}})
    assert queried.status_code == 200 and tempfile.gettempdir() not in queried.text
    assert queried.json()["path"] == "terms.md"


def test_upload_directory_permissions_nothing_spooled_to_shared_disk(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Uploads are ingested from memory: nothing lands in the (shared, world-listable) temp folder.
    spool = tmp_path / "tmp"
    spool.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    upload(client, "u1", ("terms.md", "Acme pays in thirty days."))
    assert list(spool.rglob("*")) == []


def test_upload_same_name_is_the_next_version_of_one_document(client: TestClient) -> None:
    first = upload(client, "u1", ("terms.md", "Acme pays in thirty days."))["files"][0]
    second = upload(client, "u1", ("terms.md", "Acme pays in sixty days."))["files"][0]
    same = upload(client, "u1", ("terms.md", "Acme pays in sixty days."))["files"][0]
    assert (first["status"], first["version"]) == ("new", 1)
    assert (second["status"], second["version"]) == ("changed", 2)
    assert (same["status"], same["version"]) == ("unchanged", 2)
    assert document(client, "u1", "terms.md") == "Acme pays in sixty days."


def test_upload_without_extension_or_with_control_characters_is_422(client: TestClient) -> None:
    for name in ("README", "../", "a\x00.md"):
        response = client.post("/v1/documents", json={"userId": "u1", "documents": [{"name": name, "content": "x"}]})
        assert response.status_code == 422, (name, response.text)
        assert response.json()["error"]["field"].startswith("documents"), response.text
