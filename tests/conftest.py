"""Fixtures shared by every test: stores per backend (fixtures for PostgreSQL live in
tests/postgres_fixtures.py), the real embedder loaded once, and a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram import Memory
from engram.embedders import default_embedder
from engram.embedders.fake import FakeEmbedder
from engram.ext import Embedder, Store
from engram.stores.sqlite.store import SQLiteStore

pytest_plugins = ["tests.postgres_fixtures"]

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return default_embedder()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "engram.db")
    yield store
    store.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every backend, for the contract suite."""
    if request.param == "sqlite":
        s: Store = SQLiteStore(tmp_path / "engram.db")
    else:
        s = request.getfixturevalue("postgres_store")
    yield s
    if request.param == "sqlite":
        s.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def each_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A Memory (fake embedder) over every backend, for behaviour both stores must share."""
    if request.param == "sqlite":
        made = Memory(tmp_path / "engram.db", embedder=FakeEmbedder())
    else:
        made = Memory(store=request.getfixturevalue("postgres_store"), embedder=FakeEmbedder())
    with made:
        yield made
