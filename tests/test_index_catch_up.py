"""Held indexes catching up on other processes' writes in place stay exactly what a fresh process
reads, through rowids SQLite hands out again, random mixes of both processes' writes, and this
process's own writes during a catch-up."""

from __future__ import annotations

import random
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from engram.model import Filters, MemoryRecord
from engram.stores.sqlite import saved
from engram.stores.sqlite.store import SQLiteStore
from engram.stores.sqlite.user_cache import Turns
from engram.stores.sqlite.versions import log_removals
from tests.waiting import until

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIMS = 8
EVERY_STATUS = Filters(statuses=("active", "archived", "superseded"))


def _vector(seed: int) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def _record(memory_id: str, user: str, word: str = "x") -> MemoryRecord:
    return MemoryRecord(id=memory_id, user_id=user, content=f"note {word}", kind="message", content_hash=memory_id,
                        created_at=NOW, recorded_at=NOW, importance=0.5)


def _put(store: SQLiteStore, memory_id: str, user: str = "u") -> None:
    store.put_many([_record(memory_id, user)], np.stack([_vector(zlib.crc32(memory_id.encode()))]))


def _held(store: SQLiteStore, user: str = "u") -> tuple[list[str], list[str]]:
    """What the store's vector and keyword indexes hold of the user (every row, any status)."""
    vectors = sorted(m for m, _ in store.vector_search(user, _vector(1), 10_000, EVERY_STATUS))
    words = sorted(m for m, _ in store.keyword_search(user, "note", 10_000, EVERY_STATUS))
    return vectors, words


def _fresh(path: Path, user: str = "u") -> tuple[list[str], list[str]]:
    store = _open(path)
    try:
        return _held(store, user)
    finally:
        store.close()


def _open(path: Path) -> SQLiteStore:
    store = SQLiteStore(path)
    store.bind_embedder("m", DIMS)
    store.keyword_build_inline = 10**9  # postings held from the first search, whatever the size
    return store


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore, Path]]:
    path = tmp_path / "c.db"
    reader, writer = _open(path), _open(path)
    yield reader, writer, path
    reader.close()
    writer.close()


def test_a_rowid_handed_out_again_after_the_index_took_its_delete(
    pair: tuple[SQLiteStore, SQLiteStore, Path],
) -> None:
    """Deleting the newest memory frees its rowid, and the next insert takes it: below the rowid the
    reader's index had read up to, after it had taken the delete."""
    reader, writer, path = pair
    _put(writer, "a1")
    _put(writer, "a2")
    assert _held(reader) == (["a1", "a2"], ["a1", "a2"])
    assert writer.delete("u", "a2")
    assert _held(reader) == (["a1"], ["a1"])
    _put(writer, "a3")  # the rowid a2 had
    assert _held(reader) == (["a1", "a3"], ["a1", "a3"]) == _fresh(path)


def test_a_rowid_another_user_freed(pair: tuple[SQLiteStore, SQLiteStore, Path]) -> None:
    reader, writer, path = pair
    _put(writer, "a1")
    _put(writer, "v1", user="v")
    _put(writer, "a2")
    _put(writer, "v2", user="v")
    assert _held(reader) == (["a1", "a2"], ["a1", "a2"])
    assert writer.delete("u", "a2") and writer.delete("v", "v2")
    assert _held(reader) == (["a1"], ["a1"])
    _put(writer, "a3")  # the rowid v2 had, below the last the reader read
    _put(writer, "a4")
    assert _held(reader) == (["a1", "a3", "a4"],) * 2 == _fresh(path)
    assert _held(reader, "v") == (["v1"], ["v1"]) == _fresh(path, "v")


@pytest.mark.parametrize("seed", [1, 14, 16, 24])  # 14-24 lost a row before reused rowids counted
def test_random_writes_of_both_processes(pair: tuple[SQLiteStore, SQLiteStore, Path], seed: int) -> None:
    """Adds, deletes and replaces by either store, two users, the reader searching between them: its
    held indexes always hold what a fresh process reads."""
    reader, writer, path = pair
    rng = random.Random(seed)
    live: dict[str, set[str]] = {"u": set(), "v": set()}
    for step in range(160):
        store, user = rng.choice([reader, writer]), rng.choice(["u", "u", "v"])
        choice = rng.random()
        if choice < 0.5 or not live[user]:
            memory_id = f"{user}{step}"
            _put(store, memory_id, user)
            live[user].add(memory_id)
        elif choice < 0.8:
            memory_id = rng.choice(sorted(live[user]))
            assert store.delete(user, memory_id)
            live[user].discard(memory_id)
        else:
            memory_id = rng.choice(sorted(live[user]))
            store.replace(_record(memory_id, user, "y"), _vector(rng.randrange(1000)))
        if rng.random() < 0.5:
            _held(reader, rng.choice(["u", "v"]))
        if step % 20 == 19:
            for who in ("u", "v"):
                assert _held(reader, who) == (sorted(live[who]),) * 2 == _fresh(path, who), (seed, step, who)


def _stripe(user_id: str) -> int:
    return zlib.crc32(user_id.encode()) % Turns.STRIPES


@pytest.fixture
def large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteStore]:
    """A store holding a user of 150 memories (above the size whose indexes are saved)."""
    monkeypatch.setattr(saved, "SAVE_ABOVE", 100)
    store = _open(tmp_path / "l.db")
    store.put_many([_record(f"m{i}", "u") for i in range(150)], np.stack([_vector(i) for i in range(150)]))
    _held(store)
    yield store
    store.close()


def test_a_delete_waits_for_a_catch_up_between_its_read_and_its_apply(large: SQLiteStore) -> None:
    """A catch-up reads what changed, then applies it in place; this process's delete landing in
    between would see its row put back by the apply. It waits for the catch-up instead."""
    _put(large, "x1")  # this process's insert after the load: in the catch-up's read
    paused, go = threading.Event(), threading.Event()
    real = large._changes_reader.changed_since

    def pausing(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        if threading.current_thread().name == "engram-index-resaves" and not paused.is_set():
            paused.set()
            assert go.wait(20)
        return found

    large._changes_reader.changed_since = pausing  # type: ignore[method-assign]
    large._resaves.quiet = 0.01
    assert large.delete("u", "m0")  # erases the files: the saving again starts with a catch-up
    assert paused.wait(20)
    deleting = threading.Thread(target=lambda: large.delete("u", "x1"))
    deleting.start()
    deleting.join(0.3)
    assert deleting.is_alive()  # waits for the catch-up to apply what it read
    other = next(f"w{i}" for i in range(100) if _stripe(f"w{i}") != _stripe("u"))
    writing = threading.Thread(target=lambda: _put(large, "y1", other))
    writing.start()
    writing.join(10)
    assert not writing.is_alive()  # another user's write does not wait
    go.set()
    deleting.join(20)
    assert "x1" not in _held(large)[0] and "x1" not in _held(large)[1]


def test_saving_again_leaves_this_processs_own_rows_in_place(large: SQLiteStore) -> None:
    """The catch-up before saving again reads this process's inserts since the load; held already,
    they stay as they are (added again, each would leave a hole, and a rebuild of a large user's
    approximate index)."""
    for i in range(40):
        _put(large, f"x{i}")
    large._resaves.quiet = 0.01
    assert large.delete("u", "m0")
    assert until(lambda: bool(saved.path_of(large.path, "vectors", "u") and
                              saved.load(large.path, "vectors", "u") is not None))
    index = large._indexes.peek("u")
    assert index is not None and index._holes == 1 and len(index) == 189


def test_the_record_of_reused_rowids_runs_again_unchanged(tmp_path: Path) -> None:
    """The migration runs again on a store whose version was set back: one mark, the highest rowid."""
    store = _open(tmp_path / "m.db")
    try:
        _put(store, "a1")
        _put(store, "a2")
        store._write(lambda c: log_removals(c))
        assert store._read("SELECT h FROM memory_rowid_high") == [(2,)]
    finally:
        store.close()
