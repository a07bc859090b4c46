"""Admin settings are the server's, not one worker's: every worker reads them from the key store."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram import Memory
from engram.config import AdminMemorySettings
from engram.embedders.fake import FakeEmbedder
from engram.service import deps
from engram.service.app import create_app
from engram.service.auth import KeyStore


def _worker(db: Path) -> tuple[TestClient, Memory, KeyStore]:
    """One worker of a server: its own Memory and key store over the shared file."""
    memory = Memory(db, embedder=FakeEmbedder())
    keys = KeyStore(db)
    return TestClient(create_app(memory, keys)), memory, keys


def test_a_change_on_one_worker_reaches_the_others_and_survives_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deps, "ADMIN_SETTINGS_TTL", 0.0)  # read the shared value on every use
    db = tmp_path / "engram.db"
    first, m1, k1 = _worker(db)
    second, m2, k2 = _worker(db)
    token = k1.create(admin=True)[1]
    with first, second:
        for client in (first, second):
            client.headers["X-API-Key"] = token
        assert second.get("/v1/admin/settings").json()["retrieval"]["topK"] == AdminMemorySettings().top_k
        changed = first.put("/v1/admin/settings", json={"retrieval": {"topK": 3}})
        assert changed.status_code == 200, changed.text
        assert second.get("/v1/admin/settings").json()["retrieval"]["topK"] == 3
        m2.add_many([{"content": f"Acme note {i} about payments", "user_id": "u1"} for i in range(6)])
        found = second.post("/v1/retrieve", params={"userId": "u1"}, json={"message": "Acme payments"})
        assert len(found.json()["memories"]) == 3  # the other worker retrieves with the new top k
    third, m3, k3 = _worker(db)  # a restarted server
    with third:
        third.headers["X-API-Key"] = token
        assert third.get("/v1/admin/settings").json()["retrieval"]["topK"] == 3
    for memory, keys in ((m1, k1), (m2, k2), (m3, k3)):
        keys.close()
        memory.close()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_shared_setting_keeps_its_last_value_and_moves_its_version(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    target = str(tmp_path / "keys.db") if backend == "sqlite" else request.getfixturevalue("postgres_url")
    keys = KeyStore(target)
    try:
        name = f"test_setting_{tmp_path.name}"  # a PostgreSQL database is shared by the session's tests
        assert keys.shared_setting(name) is None
        keys.share_setting(name, '{"a": 1}')
        first = keys.shared_setting(name)
        keys.share_setting(name, '{"a": 2}')
        second = keys.shared_setting(name)
        assert first is not None and second is not None
        assert second[0] == '{"a": 2}' and second[1] == first[1] + 1
    finally:
        keys.close()
