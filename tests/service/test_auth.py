"""API keys: hashed at rest, scoped to users, 401/403 that reveal nothing, admin settings, rate limits."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from engram.ext import Embedder
from engram.service import KeyStore, ServiceSettings
from engram.service.auth import hash_token
from engram.service.cli import keys_group
from engram.service.ratelimit import RateLimiter
from tests.service import Harness, harness


@pytest.fixture
def h(tmp_path: Path, embedder: Embedder) -> Iterator[Harness]:
    made = harness(tmp_path, embedder)
    yield made
    made.close()


def test_tokens_are_stored_only_as_sha256(h: Harness) -> None:
    key, token = h.keys.create(["u1"])
    rows = sqlite3.connect(h.db).execute("SELECT digest, scopes FROM api_keys").fetchall()
    assert rows == [(hash_token(token), '["user:u1"]')]
    assert token not in repr(rows)
    assert h.keys.authenticate(token) == key
    assert h.keys.authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert h.keys.authenticate("egk_ffffffffffffffff_nope") is None


def test_no_key_or_bad_key_is_401(h: Harness) -> None:
    with TestClient(h.app) as client:
        for headers in ({}, {"Authorization": "Bearer egk_0_wrong"}, {"X-API-Key": "nope"}):
            response = client.get("/v1/memories", params={"userId": "u1"}, headers=headers)
            assert response.status_code == 401 and response.json()["error"]["code"] == "UNAUTHORIZED"
        assert client.get("/healthz").status_code == 200 and client.get("/ui").status_code == 200


def test_other_users_are_403_with_the_same_body(h: Harness) -> None:
    h.memory.add("secret of u2", user_id="u2")
    theirs = h.memory.add("another secret", user_id="u2").id
    with TestClient(h.app) as client:
        client.headers["X-API-Key"] = h.key("u1")
        answers = [
            client.get("/v1/memories", params={"userId": "u2"}),
            client.get("/v1/memories", params={"userId": "nobody"}),
            client.get(f"/v1/memories/{theirs}", params={"userId": "u2"}),
            client.get("/v1/memories/NOPE", params={"userId": "u2"}),
            client.post("/v1/retrieve", json={"userId": "u2", "message": "secret"}),
            client.delete("/v1/users/u2"),
            client.post("/v1/memories", json={"userId": "u2", "content": "x"}),
        ]
        assert {r.status_code for r in answers} == {403}
        assert len({r.text for r in answers}) == 1
        # Asking for u2's memory under one's own user is a plain not-found, as for any missing id.
        mine = client.get(f"/v1/memories/{theirs}", params={"userId": "u1"})
        assert mine.status_code == 404
    assert h.memory.stats()  # untouched


def test_tenant_scope_and_revocation(h: Harness) -> None:
    key, token = h.keys.create(tenants=["acme"])
    with TestClient(h.app) as client:
        client.headers["X-API-Key"] = token
        assert client.get("/v1/memories", params={"userId": "acme:alice"}).status_code == 200
        assert client.get("/v1/memories", params={"userId": "globex:bob"}).status_code == 403
        assert h.keys.revoke(key.id)
        assert client.get("/v1/memories", params={"userId": "acme:alice"}).status_code == 401


def test_admin_settings_ranges_and_effect(h: Harness) -> None:
    h.memory.add_many([{"content": f"Acme note number {i} about payments", "user_id": "u1"} for i in range(12)])
    with TestClient(h.app) as client:
        client.headers["X-API-Key"] = h.key("u1")
        assert client.put("/v1/admin/settings", json={"retrieval": {"topK": 3}}).status_code == 403
        client.headers["X-API-Key"] = h.key(admin=True)
        bad = client.put("/v1/admin/settings", json={"retrieval": {"topK": 50}})
        assert bad.status_code == 422
        assert bad.json()["error"]["field"] == "retrieval.topK" and "[1, 20]" in bad.json()["error"]["message"]
        tokens = client.put("/v1/admin/settings", json={"retrieval": {"maxTokens": 50}})
        assert tokens.status_code == 422 and "[100, 3000]" in tokens.json()["error"]["message"]
        ok = client.put("/v1/admin/settings", json={"retrieval": {"topK": 2, "minScore": 0.0},
                                                     "interleaving": {"strategy": "score_first"}})
        assert ok.status_code == 200 and ok.json()["retrieval"]["topK"] == 2
        assert client.get("/v1/admin/settings").json()["interleaving"]["strategy"] == "score_first"
        payload = client.post("/v1/retrieve", json={"userId": "u1", "message": "Acme payments"}).json()
        assert payload["metadata"]["config"]["topK"] == 2 and len(payload["memories"]) == 2
        assert client.get("/v1/admin/stats").status_code == 200


def test_rate_limit_serves_cache_then_429(tmp_path: Path, embedder: Embedder) -> None:
    h = harness(tmp_path, embedder, ServiceSettings(rate=0.001, burst=2))
    try:
        h.memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
        body = {"userId": "u1", "message": "How does Acme pay?", "config": {"minScore": 0.0}}
        with TestClient(h.app) as client:
            client.headers["X-API-Key"] = h.key("u1")
            first = client.post("/v1/retrieve", json=body)
            assert first.status_code == 200 and first.json()["memories"]
            assert client.get("/v1/memories", params={"userId": "u1"}).status_code == 200
            cached = client.post("/v1/retrieve", json=body)
            assert cached.status_code == 200
            meta = cached.json()["metadata"]
            assert meta["error"]["code"] == "RATE_LIMITED" and meta["error"]["fallback"] == "cache" and meta["cached"]
            uncached = client.post("/v1/retrieve", json={**body, "message": "something never asked"})
            assert uncached.status_code == 429 and int(uncached.headers["Retry-After"]) >= 1
            other = client.get("/v1/memories", params={"userId": "u1"})
            assert other.status_code == 429 and other.json()["error"]["code"] == "RATE_LIMITED"
    finally:
        h.close()


def test_token_bucket_refills() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=2, burst=2, clock=lambda: now[0])
    assert limiter.acquire("k") == 0 and limiter.acquire("k") == 0
    assert limiter.acquire("k") == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.acquire("k") == 0
    assert RateLimiter(rate=0).acquire("k") == 0


def test_keys_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    runner = CliRunner()
    created = runner.invoke(keys_group, ["create", "--user", "u1", "--tenant", "acme", "--db", db])
    assert created.exit_code == 0, created.output
    token = created.output.split()[-1]
    store = KeyStore(db)
    key = store.authenticate(token)
    assert key is not None and key.scopes == ("user:u1", "tenant:acme")
    listed = runner.invoke(keys_group, ["list", "--db", db])
    assert key.id in listed.output and token not in listed.output
    assert runner.invoke(keys_group, ["revoke", key.id, "--db", db]).exit_code == 0
    assert store.authenticate(token) is None
    assert runner.invoke(keys_group, ["revoke", key.id, "--db", db]).exit_code != 0
    assert runner.invoke(keys_group, ["create", "--db", db]).exit_code != 0
    admin = runner.invoke(keys_group, ["create", "--admin", "--db", db])
    admin_key = store.authenticate(admin.output.split()[-1])
    assert admin_key is not None and admin_key.admin and admin_key.scopes == ("*",)
    store.close()


def test_key_store_raises_store_errors_not_raw_sqlite3_errors(tmp_path: Path) -> None:
    from engram.errors import StoreError

    notes = tmp_path / "notes.txt"
    notes.write_text("not a SQLite database " * 50)
    with pytest.raises(StoreError, match="not a database"):
        KeyStore(notes)
    store = KeyStore(tmp_path / "keys.db")
    store.close()
    with pytest.raises(StoreError):
        store.list()
