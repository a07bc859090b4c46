"""A store set back to before one migration and opened again, so that it and every later one run."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def sqlite_from(db: Path, version: int, *statements: str) -> Iterator[Any]:
    """The SQLite store at ``db`` after ``statements`` and with migrations from ``version`` on run again."""
    from engram.stores.sqlite.store import SQLiteStore

    conn = sqlite3.connect(db)
    for statement in statements:
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {int(version) - 1}")
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def postgres_from(url: str, version: int, *statements: str) -> Iterator[Any]:
    """The PostgreSQL store at ``url`` after ``statements`` and with migrations from ``version`` on run again."""
    import psycopg

    from engram.stores.postgres.store import PostgresStore

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement.encode())
        conn.execute("DELETE FROM engram_schema_migrations WHERE version >= %s", (version,))
    store = PostgresStore(url, min_size=1, max_size=2)
    try:
        yield store
    finally:
        store.close()
