"""A large user's vectors are saved beside the database so that a new process loads them from one
file: used only while the user's version is the one saved, never kept past a delete, replace or
forget, and the index loaded from it answers as one read from SQL does."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from engram.model import Filters, MemoryRecord
from engram.stores.sqlite import keyword, saved
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIMS = 16
ROWS = 120


def _vector(seed: int) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def _put(store: SQLiteStore, start: int, count: int) -> None:
    records = [
        MemoryRecord(id=f"m{i:04d}", user_id="u", content=f"note {i}", kind="message", content_hash=f"h{i}",
                     created_at=NOW - timedelta(minutes=i), recorded_at=NOW, importance=0.5)
        for i in range(start, start + count)
    ]
    store.put_many(records, np.stack([_vector(zlib.crc32(r.id.encode())) for r in records]))


def _top(store: SQLiteStore, memory_id: str, n: int = 1) -> list[str]:
    return [m for m, _ in store.vector_search("u", _vector(zlib.crc32(memory_id.encode())), n, Filters())]


def _saved(path: Path, kind: str = "vectors") -> list[Path]:
    directory = Path(f"{path}.{kind}")
    return [p for p in directory.iterdir() if p.suffix == ".bin"] if directory.is_dir() else []


def _settle(store: SQLiteStore) -> None:
    """Wait for the saves under way (the store's own pool)."""
    saves = store._saves
    if saves is not None:
        saves.submit(lambda: None).result()


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(saved, "SAVE_ABOVE", 100)
    db = tmp_path / "v.db"
    store = SQLiteStore(db)
    _put(store, 0, ROWS)
    assert _top(store, "m0007") == ["m0007"]  # the first load reads SQL and saves the file
    assert store.keyword_search("u", "note 42", 5, Filters())  # the keyword postings too
    _settle(store)
    store.close()
    yield db


def test_a_new_process_loads_the_saved_vectors(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(_saved(path)) == 1
    store = SQLiteStore(path)
    try:
        def no_sql(*_args: object) -> None:
            raise AssertionError("read from SQL although the saved vectors are current")

        monkeypatch.setattr(store._loader, "read", no_sql)
        assert _top(store, "m0042") == ["m0042"]
        # Writes reach an index mapped from the file (copy-on-write: the file is left as it was).
        before = _saved(path)[0].read_bytes()
        _put(store, ROWS, 80)
        assert _top(store, "m0150") == ["m0150"] and _top(store, "m0003") == ["m0003"]
        assert len(store.vector_search("u", _vector(1), ROWS + 80, Filters())) == ROWS + 80
        assert _saved(path)[0].read_bytes() == before
    finally:
        store.close()


def test_a_write_since_the_save_makes_the_file_stale(path: Path) -> None:
    writer = SQLiteStore(path)
    _put(writer, ROWS, 5)  # another process adds: the user's version moves
    writer.close()
    reader = SQLiteStore(path)
    try:
        assert _top(reader, "m0122") == ["m0122"]  # read from SQL: the file did not hold it
        _settle(reader)
        assert len(_saved(path)) == 1  # saved again, at the new version
    finally:
        reader.close()
    again = SQLiteStore(path)
    try:
        assert _top(again, "m0123") == ["m0123"]
    finally:
        again.close()


@pytest.mark.parametrize("erase", ["delete", "forget", "replace"])
def test_erasing_writes_erase_the_file_in_any_process(path: Path, erase: str) -> None:
    store = SQLiteStore(path)  # has not loaded the user: the file is still erased
    try:
        if erase == "delete":
            assert store.delete("u", "m0009")
        elif erase == "forget":
            assert store.forget_user("u") == ROWS
        else:
            record = store.get("u", "m0009")
            assert record is not None
            store.replace(record, _vector(5))
        assert _saved(path) == [] and _saved(path, "keywords") == []
    finally:
        store.close()


@pytest.mark.parametrize("large", [False, True])
def test_keyword_postings_load_from_their_file(path: Path, monkeypatch: pytest.MonkeyPatch, large: bool) -> None:
    """Also for a user past the inline build, who would otherwise be answered by an SQL scan while
    the postings build on a thread."""
    assert len(_saved(path, "keywords")) == 1
    reference = SQLiteStore(path)
    reference.keyword_build_inline = 10**9
    monkeypatch.setattr(saved, "SAVE_ABOVE", 10**9)  # the reference neither reads nor writes files
    monkeypatch.setattr(reference, "_saved_postings", lambda _user: None)
    want = {q: reference.keyword_search("u", q, 10, Filters()) for q in ("note 42", "note", "note 7 99")}
    reference.close()
    store = SQLiteStore(path)
    try:
        if large:
            store.keyword_build_inline = 0
        def no_sql(*_args: object) -> None:
            raise AssertionError("read from SQL although the saved postings are current")

        monkeypatch.setattr(store._postings_loader, "read", no_sql)
        monkeypatch.setattr(keyword, "scan_hits", no_sql)
        assert {q: store.keyword_search("u", q, 10, Filters()) for q in want} == want
        _put(store, ROWS, 3)  # writes reach postings loaded from the file
        assert [m for m, _ in store.keyword_search("u", "note 121", 1, Filters())] == ["m0121"]
    finally:
        store.close()


def test_a_save_overtaken_by_an_erasure_is_not_kept(path: Path) -> None:
    store = SQLiteStore(path)
    gate = threading.Event()
    try:
        store._erase_saved("u")
        store._saves = ThreadPoolExecutor(1)
        store._saves.submit(gate.wait)  # the save queues behind this
        index = store._cached_index("u")  # loads from SQL and queues a save
        store._erase_saved("u")  # before the save runs
        gate.set()
        _settle(store)
        assert _saved(path) == []
        assert len(index) == ROWS
    finally:
        gate.set()
        store.close()
