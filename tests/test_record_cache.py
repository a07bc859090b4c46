"""Records a SQLite store read are kept in memory and answered again only while the user's
counters say nothing changed: every change by another connection (text, status, access counts,
deletes, forgetting) is seen at the next fetch, and a record read inside a write that rolls back is
never kept."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engram.errors import StoreError
from engram.model import MemoryRecord
from engram.stores.sql.reads import ReadMixin
from engram.stores.sqlite.records import RecordCache
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _record(i: int, user: str = "u") -> MemoryRecord:
    return MemoryRecord(id=f"{user}-m{i}", user_id=user, content=f"note {i}", kind="message", content_hash=f"h{i}",
                        created_at=NOW - timedelta(minutes=i), recorded_at=NOW, importance=0.5)


def _put(store: SQLiteStore, *records: MemoryRecord) -> None:
    store.put_many(list(records), np.ones((len(records), 4), dtype=np.float32))


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """A store and a second connection to its file (another process, as far as caches know)."""
    first, second = SQLiteStore(tmp_path / "r.db"), SQLiteStore(tmp_path / "r.db")
    _put(first, *(_record(i) for i in range(3)), _record(0, "other"))
    yield first, second
    first.close()
    second.close()


def test_a_second_fetch_reads_only_what_is_not_held(
    stores: tuple[SQLiteStore, SQLiteStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = stores
    first = store.fetch("u", ["u-m0", "u-m1"])
    asked: list[list[str]] = []
    read = ReadMixin.fetch

    def counted(self: ReadMixin, user_id: str, memory_ids: Sequence[str]) -> list[MemoryRecord]:
        asked.append(list(memory_ids))
        return read(self, user_id, memory_ids)

    monkeypatch.setattr(ReadMixin, "fetch", counted)
    again = store.fetch("u", ["u-m1", "u-m0", "u-m2", "u-m1"])
    assert [r.id for r in again] == ["u-m1", "u-m0", "u-m2"]
    assert again[1] is first[0]  # the same object: held, not read again
    assert asked == [["u-m2"]]
    assert store._records.nbytes > 0


def test_another_connections_changes_are_seen(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    store, other = stores
    assert store.fetch("u", ["u-m0"])[0].content == "note 0"
    other.replace(replace(_record(0), content="edited"), np.ones(4, dtype=np.float32))
    assert store.fetch("u", ["u-m0"])[0].content == "edited"
    other.record_access("u", ["u-m0"], NOW)  # moves only the access counter
    assert store.fetch("u", ["u-m0"])[0].access_count == 1
    other.delete("u", "u-m1")
    assert [r.id for r in store.fetch("u", ["u-m0", "u-m1"])] == ["u-m0"]


def test_forgetting_leaves_nothing_to_answer(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    store, other = stores
    assert len(store.fetch("u", ["u-m0", "u-m2"])) == 2
    other.forget_user("u")  # the user's counters are gone too
    assert store.fetch("u", ["u-m0", "u-m2"]) == []
    store.fetch("other", ["other-m0"])
    store.forget_user("other")
    assert "other" not in store._records._users  # erased text is not held in memory either


def test_one_user_never_gets_anothers_records(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    store, _ = stores
    assert [r.id for r in store.fetch("other", ["other-m0"])] == ["other-m0"]
    assert store.fetch("u", ["other-m0"]) == []
    assert store.fetch("other", ["u-m0"]) == []


def test_a_read_inside_a_rolled_back_write_is_not_kept(stores: tuple[SQLiteStore, SQLiteStore]) -> None:
    store, _ = stores

    def op(conn: object) -> None:
        store._conn.execute("UPDATE memories SET content = 'never' WHERE id = 'u-m2'")
        assert store.fetch("u", ["u-m2"])[0].content == "never"  # its own write, uncommitted
        raise StoreError("rolled back")

    with pytest.raises(StoreError):
        store._write(op)
    assert store.fetch("u", ["u-m2"])[0].content == "note 2"


def test_the_budget_drops_the_least_recent_user() -> None:
    cache = RecordCache(budget=2_000)
    cache.keep("a", (1, 0), [_record(0, "a"), _record(1, "a")])
    cache.keep("b", (1, 0), [_record(0, "b"), _record(1, "b")])
    assert cache.lookup("a", (1, 0), ["a-m0"])[0] == {}
    assert list(cache.lookup("b", (1, 0), ["b-m0"])[0]) == ["b-m0"]
    assert cache.lookup("b", (2, 0), ["b-m0"]) == ({}, ["b-m0"])  # other counters: dropped
    assert cache.nbytes == 0


def test_users_written_before_counters_existed_get_them(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "old.db")
    _put(store, _record(0))
    store._conn.execute("DELETE FROM user_versions")  # as a file written before the counters
    store._conn.execute("PRAGMA user_version = 10")
    store.close()
    reopened = SQLiteStore(tmp_path / "old.db")  # migration 11 gives every user counters
    try:
        assert reopened._read("SELECT user_id, accessed FROM user_versions") == [("u", 0)]
        first = reopened.fetch("u", ["u-m0"])
        assert reopened.fetch("u", ["u-m0"])[0] is first[0]
    finally:
        reopened.close()
