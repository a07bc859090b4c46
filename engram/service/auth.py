"""API keys: random tokens stored only as sha256 digests, each scoped to users or tenants.

A token reads ``egk_<id>_<secret>``: the id finds the row, and the digest of the whole token is
compared in constant time, so neither a timing difference nor a leaked table gives a usable key.
Keys live in an ``api_keys`` table beside Engram's own, created here on first use (outside
Engram's migrations, which know nothing of the service).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.errors import StoreError, StoreUnavailable, ValidationError

__all__ = ["ApiKey", "KeyStore", "hash_token"]

PREFIX = "egk_"
_COLUMNS = "id, digest, scopes, admin, name, created_at, revoked_at, rate, burst"
_CREATE = """
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    scopes TEXT NOT NULL,
    admin INTEGER NOT NULL DEFAULT 0,
    name TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    rate DOUBLE PRECISION,
    burst DOUBLE PRECISION
)
"""


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


def _driver_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def _store_error(exc: Exception) -> StoreError:
    """A database driver's error as Engram's: unavailable (503) when it may pass, else a StoreError."""
    message = f"api keys: {exc}"
    transient = isinstance(exc, sqlite3.OperationalError) or type(exc).__name__ == "OperationalError"
    return StoreUnavailable(message) if transient else StoreError(message)


class KeyStore:
    """The ``api_keys`` table of one Engram store (a SQLite file or a PostgreSQL URL).

    Driver errors leave as ``StoreError``/``StoreUnavailable`` (a locked or unreachable database is
    a 503, a file that is not a database a clear error), never as raw sqlite3/psycopg exceptions.
    """

    def __init__(self, path_or_url: str | Path) -> None:
        target = str(path_or_url)
        self._lock = threading.Lock()
        self._pg = target.startswith(("postgresql://", "postgres://"))
        self._conn: Any
        if not self._pg and target == ":memory:":
            raise ValidationError("path", "API keys need a persistent store, not :memory:")
        try:
            if self._pg:
                import psycopg

                self._conn = psycopg.connect(target, autocommit=True)
                self._mark = "%s"
            else:
                self._conn = sqlite3.connect(target, timeout=10.0, isolation_level=None, check_same_thread=False)
                self._mark = "?"
                self._conn.execute("PRAGMA busy_timeout=10000")
            with self._lock:
                self._conn.execute(_CREATE)
        except _driver_errors() as exc:
            raise _store_error(exc) from exc

    def _sql(self, text: str) -> str:
        return text.replace("?", self._mark)

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            with self._lock:
                cursor = self._conn.execute(self._sql(sql), tuple(params))
                rows = cursor.fetchall() if cursor.description is not None else []
        except _driver_errors() as exc:
            raise _store_error(exc) from exc
        return list(rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

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
        self._execute(
            f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key.id, hash_token(token), json.dumps(list(clean)), int(admin), name, key.created_at, None, rate, burst),
        )
        return key, token

    def list(self, *, include_revoked: bool = False) -> list[ApiKey]:
        rows = self._execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")
        keys = [_row_to_key(r) for r in rows]
        return [k for k in keys if include_revoked or k.revoked_at is None]

    def revoke(self, key_id: str) -> bool:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        found = self._execute("SELECT id FROM api_keys WHERE id = ? AND revoked_at IS NULL", (key_id,))
        if not found:
            return False
        self._execute("UPDATE api_keys SET revoked_at = ? WHERE id = ?", (now, key_id))
        return True

    def authenticate(self, token: str | None) -> ApiKey | None:
        """The live key a token belongs to, or None; every failure looks the same to the caller."""
        if not token or not token.startswith(PREFIX) or len(token) > 200:
            return None
        key_id = token[len(PREFIX) :].split("_", 1)[0]
        rows = self._execute(f"SELECT {_COLUMNS} FROM api_keys WHERE id = ?", (key_id,))
        # Compare against a dummy digest when the id is unknown, so the time taken says nothing.
        stored = rows[0][1] if rows else "0" * 64
        matched = hmac.compare_digest(hash_token(token), stored)
        if not rows or not matched:
            return None
        key = _row_to_key(rows[0])
        return None if key.revoked_at is not None else key
