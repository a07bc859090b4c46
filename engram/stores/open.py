"""Open the store a path or URL names: a file path is SQLite, a ``postgresql://`` URL PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from engram.extras import needs

if TYPE_CHECKING:  # not at run time: engram.ext imports numpy, which `engram keys` never needs
    from engram.ext import Store

__all__ = ["DEFAULT_PATH", "is_url", "open_store", "store_target"]

DEFAULT_PATH = "engram.db"


def open_store(path_or_url: str | os.PathLike[str] | None) -> Store:
    """A store for a file path (SQLite) or a ``postgresql://`` URL; None reads ``$ENGRAM_DB``, else
    ``./engram.db``. Each backend is imported only when named (psycopg is an optional extra)."""
    target = store_target(path_or_url)
    if is_url(target):
        with needs("a postgresql:// store", "postgres"):
            from engram.stores.postgres.store import PostgresStore

        return PostgresStore(target)
    from engram.stores.sqlite.store import SQLiteStore

    return SQLiteStore(Path(target) if target != ":memory:" else target)


def store_target(path_or_url: str | os.PathLike[str] | None) -> str:
    """The URL, ``:memory:`` or the absolute path :func:`open_store` opens for ``path_or_url``, as
    of now: the same store whatever the working directory or ``$ENGRAM_DB`` later."""
    target = os.fspath(path_or_url) if path_or_url is not None else os.environ.get("ENGRAM_DB", DEFAULT_PATH)
    if target == ":memory:" or is_url(target):
        return target
    return os.path.abspath(target)


def is_url(target: str) -> bool:
    """Whether a store target names PostgreSQL (a URL) rather than a SQLite file."""
    return target.startswith(("postgresql://", "postgres://"))
