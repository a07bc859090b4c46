"""API keys: random tokens stored only as sha256 digests, each scoped to users or tenants.

A token reads ``egk_<id>_<secret>``: the id finds the row, and the digest of the whole token is
compared in constant time, so neither a timing difference nor a leaked table gives a usable key.
Keys live in an ``api_keys`` table beside Engram's own (:mod:`engram.stores.api_keys`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.errors import ValidationError
from engram.stores.api_keys import KeyTable

__all__ = ["ApiKey", "KeyStore", "hash_token"]

PREFIX = "egk_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key's row. ``scopes`` holds ``user:<id>``, ``tenant:<prefix>`` (every user id starting with
    ``<prefix>:``) or ``*`` for every user. The kinds are spelled out because any character, ``*``
    included, is legal in a user id: a user named ``acme:*`` must not read every ``acme:`` user."""

    id: str
    scopes: tuple[str, ...]
    admin: bool = False
    name: str | None = None
    created_at: str = ""
    revoked_at: str | None = None
    rate: float | None = None
    burst: float | None = None

    def may_access(self, user_id: str) -> bool:
        for scope in self.scopes:
            if scope == "*" or scope == f"user:{user_id}":
                return True
            if scope.startswith("tenant:") and user_id.startswith(scope[len("tenant:") :] + ":"):
                return True
        return False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "scopes": list(self.scopes), "admin": self.admin, "name": self.name,
            "createdAt": self.created_at, "revokedAt": self.revoked_at, "rate": self.rate, "burst": self.burst,
        }


def _row_to_key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(
        id=row[0], scopes=tuple(json.loads(row[2])), admin=bool(row[3]), name=row[4], created_at=row[5],
        revoked_at=row[6], rate=row[7], burst=row[8],
    )


class KeyStore:
    """The API keys of one Engram store (a SQLite file or a PostgreSQL URL), kept in its
    :class:`~engram.stores.api_keys.KeyTable`; errors leave as ``StoreError``/``StoreUnavailable``."""

    def __init__(self, path_or_url: str | Path) -> None:
        self._table = KeyTable(path_or_url)

    def close(self) -> None:
        self._table.close()

    def create(
        self, users: Iterable[str] = (), *, tenants: Iterable[str] = (), admin: bool = False,
        name: str | None = None, rate: float | None = None, burst: float | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key for these exact user ids and tenant prefixes; the token is shown once, never stored."""
        # Ids are taken exactly as given (never stripped): "a " and "a" are different users.
        scoped = [f"user:{u}" for u in users if u] + [f"tenant:{t}" for t in tenants if t]
        clean = tuple(dict.fromkeys(scoped))
        if not clean and admin:
            clean = ("*",)
        if not clean:
            raise ValidationError("users", "a key needs at least one user, tenant or --admin")
        key_id = secrets.token_hex(8)
        token = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        key = ApiKey(
            id=key_id, scopes=clean, admin=admin, name=name,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"), rate=rate, burst=burst,
        )
        self._table.insert(
            (key.id, hash_token(token), json.dumps(list(clean)), int(admin), name, key.created_at, None, rate, burst),
        )
        return key, token

    def list(self, *, include_revoked: bool = False) -> list[ApiKey]:
        keys = [_row_to_key(r) for r in self._table.rows()]
        return [k for k in keys if include_revoked or k.revoked_at is None]

    def revoke(self, key_id: str) -> bool:
        return self._table.revoke(key_id, datetime.now(UTC).isoformat(timespec="seconds"))

    def shared_setting(self, name: str) -> tuple[str, int] | None:
        """A setting every worker of the server shares (JSON text) and its version; None if never set."""
        return self._table.setting(name)

    def share_setting(self, name: str, value: str) -> None:
        self._table.put_setting(name, value)

    def authenticate(self, token: str | None) -> ApiKey | None:
        """The live key a token belongs to, or None; every failure looks the same to the caller."""
        if not token or not token.startswith(PREFIX) or len(token) > 200:
            return None
        key_id = token[len(PREFIX) :].split("_", 1)[0]
        row = self._table.row(key_id)
        # Compare against a dummy digest when the id is unknown, so the time taken says nothing.
        stored = row[1] if row is not None else "0" * 64
        matched = hmac.compare_digest(hash_token(token), stored)
        if row is None or not matched:
            return None
        key = _row_to_key(row)
        return None if key.revoked_at is not None else key
