"""Open the store a path or URL names: a file path is SQLite, a ``postgresql://`` URL PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

from engram.ext import Store

__all__ = ["DEFAULT_PATH", "open_store"]

DEFAULT_PATH = "engram.db"


def open_store(path_or_url: str | os.PathLike[str] | None) -> Store:
    """A store for a file path (SQLite) or a ``postgresql://`` URL; None reads ``$ENGRAM_DB``, else
    ``./engram.db``. Each backend is imported only when named (psycopg is an optional extra)."""
    target = os.fspath(path_or_url) if path_or_url is not None else os.environ.get("ENGRAM_DB", DEFAULT_PATH)
    if target.startswith(("postgresql://", "postgres://")):
        from engram.stores.postgres.store import PostgresStore

        return PostgresStore(target)
    from engram.stores.sqlite.store import SQLiteStore

    return SQLiteStore(Path(target) if target != ":memory:" else target)
