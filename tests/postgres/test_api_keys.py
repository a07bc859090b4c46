"""The API key table on PostgreSQL: the same SQL as on SQLite, spelled by the PostgreSQL dialect."""

from __future__ import annotations

from typing import Any

import pytest

from engram.service.auth import KeyStore

pytestmark = pytest.mark.postgres


def test_keys_round_trip_and_revoke_on_postgres(postgres_store: Any, postgres_url: str) -> None:
    keys = KeyStore(postgres_url)
    try:
        key, token = keys.create(["alice"], tenants=["acme"], name="50% of traffic", rate=2.5)
        found = keys.authenticate(token)
        assert found == key
        assert found.may_access("alice") and found.may_access("acme:bob") and not found.may_access("bob")
        assert [k.id for k in keys.list()] == [key.id]
        assert keys.revoke(key.id) is True
        assert keys.revoke(key.id) is False  # already revoked
        assert keys.authenticate(token) is None
        assert keys.list() == [] and keys.list(include_revoked=True)[0].revoked_at is not None
    finally:
        with postgres_store._tx() as conn:
            conn.execute("DROP TABLE IF EXISTS api_keys")
        keys.close()
