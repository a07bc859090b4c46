"""The HTTP service's tables, ``api_keys`` and ``service_settings``, beside a store's own tables (a
SQLite file or a PostgreSQL URL), spelled by the same dialects as the stores.

The tables are created here on first use, outside the stores' numbered migrations: a store that
never serves HTTP never has them. ``service_settings`` holds what every worker of a server must
share (the admin retrieval settings), each value with a version that moves on every change.
Driver errors leave as ``StoreUnavailable`` when they may pass (a locked or unreachable database,
a 503) and ``StoreError`` otherwise, never as raw sqlite3/psycopg exceptions. What a key means
(scopes, tokens, digests) is :mod:`engram.service.auth`'s business.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engram.errors import StoreError, StoreUnavailable, ValidationError
from engram.stores.open import is_url
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.sql.dialect import Dialect
from engram.stores.sqlite.dialect import SQLITE

__all__ = ["COLUMNS", "KeyTable"]

#: The columns of a key's row, in the order :meth:`KeyTable.insert` takes and the reads return them.
COLUMNS = "id, digest, scopes, admin, name, created_at, revoked_at, rate, burst"
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
_CREATE_SETTINGS = """
CREATE TABLE IF NOT EXISTS service_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    version INTEGER NOT NULL
)
"""


def _driver_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def _store_error(exc: Exception) -> StoreError:
    message = f"api keys: {exc}"
    transient = isinstance(exc, sqlite3.OperationalError) or type(exc).__name__ == "OperationalError"
    return StoreUnavailable(message) if transient else StoreError(message)


class KeyTable:
    """One connection (autocommit) to the database of a store; safe to share between threads."""

    def __init__(self, path_or_url: str | Path) -> None:
        target = str(path_or_url)
        self._lock = threading.Lock()
        self._conn: Any
        self._dialect: Dialect
        if target == ":memory:":
            raise ValidationError("path", "API keys need a persistent store, not :memory:")
        try:
            if is_url(target):
                import psycopg

                self._conn = psycopg.connect(target, autocommit=True)
                self._dialect = POSTGRES
            else:
                self._conn = sqlite3.connect(target, timeout=10.0, isolation_level=None, check_same_thread=False)
                self._dialect = SQLITE
                self._conn.execute("PRAGMA busy_timeout=10000")
            with self._lock:
                self._conn.execute(_CREATE)
                self._conn.execute(_CREATE_SETTINGS)
        except _driver_errors() as exc:
            raise _store_error(exc) from exc

    def _execute(self, text: str, params: Sequence[Any] = ()) -> tuple[list[Any], int]:
        """Rows and row count of one statement in shared SQL (``?`` parameters)."""
        try:
            with self._lock:
                cursor = self._dialect.run(self._conn, text, tuple(params))
                rows = cursor.fetchall() if cursor.description is not None else []
                return list(rows), int(cursor.rowcount)
        except _driver_errors() as exc:
            raise _store_error(exc) from exc

    def insert(self, row: Sequence[Any]) -> None:
        """A new key's row, in :data:`COLUMNS` order."""
        self._execute(f"INSERT INTO api_keys ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def rows(self) -> list[Any]:
        """Every key's row, oldest first."""
        return self._execute(f"SELECT {COLUMNS} FROM api_keys ORDER BY created_at, id")[0]

    def row(self, key_id: str) -> Any | None:
        rows = self._execute(f"SELECT {COLUMNS} FROM api_keys WHERE id = ?", (key_id,))[0]
        return rows[0] if rows else None

    def revoke(self, key_id: str, at: str) -> bool:
        """Mark a live key revoked at ``at``; False when there is no such live key."""
        _, count = self._execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (at, key_id))
        return count > 0

    def setting(self, name: str) -> tuple[str, int] | None:
        """A shared setting's value and version, None if never set."""
        rows = self._execute("SELECT value, version FROM service_settings WHERE name = ?", (name,))[0]
        return (str(rows[0][0]), int(rows[0][1])) if rows else None

    def put_setting(self, name: str, value: str) -> None:
        self._execute(
            "INSERT INTO service_settings (name, value, version) VALUES (?, ?, 1) ON CONFLICT (name) "
            "DO UPDATE SET value = excluded.value, version = service_settings.version + 1",
            (name, value),
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()
