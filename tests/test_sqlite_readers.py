"""The SQLite store's reads run on a pool of read-only connections beside its one writer.

What must hold: a read does not wait for a write in progress, yet sees every commit made before
it started (this process's included); a read inside a write transaction sees that transaction's
rows; an erasing checkpoint is never kept from truncating the WAL by this process's own reads.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram.errors import StoreError
from engram.model import MemoryRecord
from engram.stores.sqlite.readers import ReadPool
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2024, 2, 15, tzinfo=UTC)


def _record(memory_id: str, user_id: str = "u") -> MemoryRecord:
    return MemoryRecord(id=memory_id, user_id=user_id, content=f"note {memory_id} about oat milk", kind="message",
                        created_at=NOW, recorded_at=NOW, content_hash=memory_id)


def _put(store: SQLiteStore, *ids: str, user_id: str = "u") -> None:
    store.put_many([_record(i, user_id) for i in ids], np.ones((len(ids), 4), dtype=np.float32))


def test_a_read_does_not_wait_for_a_write_in_progress(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        _put(store, "m1")
        inside, release = threading.Event(), threading.Event()

        def hold(c: sqlite3.Connection) -> None:
            inside.set()
            release.wait(10)

        def slow_write() -> None:
            store._write(hold)

        writer = threading.Thread(target=slow_write)
        writer.start()
        assert inside.wait(10)
        started = time.perf_counter()
        found = store.get("u", "m1")
        waited = time.perf_counter() - started
        held = not release.is_set()
        release.set()
        writer.join()
        assert found is not None and found.id == "m1"
        assert held and waited < 5  # on one connection the read would have waited the 10 s out
    finally:
        store.close()


def test_a_read_sees_every_commit_made_before_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        seen: list[bool] = []
        for i in range(30):
            worker = threading.Thread(target=_put, args=(store, f"m{i}"))
            worker.start()
            worker.join()
            seen.append(store.get("u", f"m{i}") is not None)  # on another thread, right after the commit
            store.delete("u", f"m{i}")
            seen.append(store.get("u", f"m{i}") is None)
        assert all(seen)
        assert store.count("u") == 0
    finally:
        store.close()


def test_a_read_inside_a_write_sees_the_write(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        def op(c: sqlite3.Connection) -> list[tuple[str]]:
            c.execute("INSERT INTO meta (key, value) VALUES ('probe', 'uncommitted')")
            return store._read("SELECT value FROM meta WHERE key = 'probe'")

        assert store._write(op) == [("uncommitted",)]
    finally:
        store.close()


def test_forgetting_truncates_the_wal_while_this_process_reads(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    reading = threading.Event()

    def long_read(c: sqlite3.Connection) -> None:
        # A read holding its snapshot for longer than the checkpoint waits for other processes.
        c.execute("BEGIN")
        c.execute("SELECT count(*) FROM memories").fetchone()
        reading.set()
        time.sleep(0.6)
        c.execute("COMMIT")

    try:
        _put(store, "k1", user_id="keep")
        _put(store, *(f"g{i}" for i in range(50)), user_id="gone")
        assert store._readers is not None
        reader = threading.Thread(target=store._readers.run, args=(long_read,))
        reader.start()
        assert reading.wait(10)
        assert store.forget_user("gone") == 50
        wal = Path(f"{path}-wal")
        assert not store._checkpoint_pending
        assert not wal.exists() or wal.stat().st_size == 0
        reader.join()
        assert store.get("keep", "k1") is not None
    finally:
        store.close()


def test_paused_pool_waits_for_reads_under_way_and_holds_new_ones(tmp_path: Path) -> None:
    pool = ReadPool(lambda: sqlite3.connect(tmp_path / "p.db", check_same_thread=False), 2)
    reading, release = threading.Event(), threading.Event()
    order: list[str] = []
    late: list[threading.Thread] = []

    def hold(c: sqlite3.Connection) -> None:
        reading.set()
        release.wait(10)
        order.append("read done")

    def long_read() -> None:
        pool.run(hold)

    def pause() -> None:
        with pool.paused():
            order.append("paused")
            late.append(threading.Thread(target=pool.run, args=(lambda c: order.append("held read"),)))
            late[0].start()
            time.sleep(0.2)
            order.append("resuming")

    first = threading.Thread(target=long_read)
    first.start()
    assert reading.wait(10)
    pauser = threading.Thread(target=pause)
    pauser.start()
    time.sleep(0.1)
    assert order == []  # the pause waits for the read under way
    release.set()
    pauser.join()
    first.join()
    late[0].join()
    assert order == ["read done", "paused", "resuming", "held read"]
    pool.close()


def test_a_closed_store_reads_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    _put(store, "m1")
    store.close()
    with pytest.raises(StoreError):
        store.get("u", "m1")


def test_many_threads_share_a_small_pool_and_every_read_is_answered(tmp_path: Path) -> None:
    pool = ReadPool(lambda: sqlite3.connect(tmp_path / "p.db", check_same_thread=False), 2)
    answers: list[int] = []

    def read(c: sqlite3.Connection) -> None:
        time.sleep(0.002)  # hold the connection while the others queue for it
        answers.append(c.execute("SELECT 1").fetchone()[0])

    threads = [threading.Thread(target=lambda: [pool.run(read) for _ in range(5)]) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert answers == [1] * 160
    assert pool._opened == 2
    pool.close()
