"""Warming the largest users before the first question: ``SQLiteStore.warm`` and ``engram serve
--warm-users``."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from engram.errors import ConfigError
from engram.model import MemoryRecord
from engram.service import workers
from engram.service.cli import serve_command
from engram.stores.sqlite import saved, warm
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIMS = 16
SIZES = {"small": 20, "large": 300, "middle": 120}


def _put(store: SQLiteStore, user: str, count: int) -> None:
    records = [
        MemoryRecord(id=f"{user}-{i}", user_id=user, content=f"note {i} of {user}", kind="message",
                     content_hash=f"{user}{i}", created_at=NOW - timedelta(minutes=i), recorded_at=NOW)
        for i in range(count)
    ]
    vectors = np.random.default_rng(zlib.crc32(user.encode())).standard_normal((count, DIMS)).astype(np.float32)
    store.put_many(records, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    db = tmp_path / "w.db"
    store = SQLiteStore(db)
    for user, count in SIZES.items():
        _put(store, user, count)
    store.close()
    return db


@pytest.fixture
def store(path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(path)  # a new process's store: nothing loaded yet
    yield s
    s.close()


def test_the_largest_users_are_loaded_first(store: SQLiteStore) -> None:
    assert store.warm(2) == ["large", "middle"]
    assert store._indexes.users() == ["large", "middle"]
    assert store._postings.holds("large") and store._postings.holds("middle")
    assert not store._postings.holds("small")
    assert store.warm(0) == []
    assert store.warm(10) == ["large", "middle", "small"]  # fewer users than asked: all of them


def test_warming_stops_where_the_cache_would_drop_those_warmed(path: Path) -> None:
    probe = SQLiteStore(path)
    probe.warm(1)
    large = probe._indexes.nbytes
    probe.close()
    # Room for the largest user and half again: the middle one (120 of 300 memories) would not fit.
    store = SQLiteStore(path, vector_cache_bytes=int(large * 1.3))
    try:
        assert store.warm(3) == ["large"]
        assert store._indexes.users() == ["large"]
    finally:
        store.close()


def test_the_warmed_users_saved_files_are_read_through(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = SQLiteStore(path)
    first.warm(3)  # loads from SQL and saves the users large enough to save
    first.close()
    read: list[Path] = []
    read_through = warm.read_through
    monkeypatch.setattr(warm, "read_through", lambda paths: read.extend(paths))
    store = SQLiteStore(path)
    try:
        assert store.warm(3) == ["large", "middle", "small"]
    finally:
        store.close()
    expected = [*saved.user_files(str(path), "large"), *saved.user_files(str(path), "middle")]
    assert {p.parent.name for p in expected} == {"w.db.vectors", "w.db.keywords"}
    assert read == expected  # the small user (under saved.SAVE_ABOVE) has none
    read_through([*expected, path.with_name("gone.bin")])  # a file gone since is passed over


@pytest.mark.parametrize("bad", [-1, 100_001, 1.5, True, "3"])
def test_a_bad_count_names_the_setting(store: SQLiteStore, bad: object) -> None:
    with pytest.raises(ConfigError, match="warm_users"):
        store.warm(bad)  # type: ignore[arg-type]


def test_serve_warms_before_it_listens(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def run(app: object, **_kwargs: object) -> None:  # uvicorn.run: what the server would serve
        store = app.state.service.memory.store  # type: ignore[attr-defined]
        seen["held"] = store._indexes.users()

    monkeypatch.setattr("uvicorn.run", run)
    monkeypatch.setattr(workers, "tune_collector", lambda: None)  # this test process is not a server
    result = CliRunner().invoke(serve_command, ["--db", str(path), "--embedder", "hash-16", "--warm-users", "2"])
    assert result.exit_code == 0, result.output
    assert seen["held"] == ["large", "middle"]
    result = CliRunner().invoke(serve_command, ["--db", str(path), "--warm-users", "-1"])
    assert result.exit_code == 2 and "--warm-users" in result.output
