"""Stores written before the index of named days get it by migration (engram.days)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest

from engram.model import Filters, MemoryRecord
from tests.migrations import postgres_from, sqlite_from

SAID = datetime(2026, 11, 13, 9, 0, tzinfo=UTC)


def _put_old(store: object) -> None:
    def rec(mid: str, user: str, content: str) -> MemoryRecord:
        return MemoryRecord(id=mid, user_id=user, content=content, kind="message", created_at=SAID, recorded_at=SAID,
                            content_hash=mid)

    records = [rec("m1", "u1", "The appointment is on Dec 1."), rec("m2", "u1", "Nothing dated."),
               rec("m3", "u2", "Leo lost a tooth yesterday."), rec("m4", "u1", "October was 4,120 credits."),
               rec("m5", "u2", "went to the pub on thurs, saw jo"), rec("m6", "u1", "Q3 churn came out at 5.4%.")]
    store.bind_embedder("fake", 4)  # type: ignore[attr-defined]
    store.put_many(records, np.eye(6, 4, dtype=np.float32))  # type: ignore[attr-defined]


def _check(store: object) -> None:
    def days(user: str, day: date) -> list[str]:
        return [i for i, _ in store.by_named_days(user, day, day, 10, Filters(), told=True)]  # type: ignore[attr-defined]

    assert days("u1", date(2026, 12, 1)) == ["m1"]
    assert sorted(days("u2", date(2026, 11, 12))) == ["m3", "m5"]  # Thursday, as chats shorten it
    assert days("u1", date(2026, 11, 12)) == []
    assert days("u1", date(2026, 10, 14)) == ["m4"]  # a whole month gone by
    assert days("u1", date(2026, 8, 14)) == ["m6"]  # a quarter gone by


def _old_sqlite(tmp_path: Path) -> None:
    """The memories of :func:`_put_old` in a SQLite store at ``tmp_path / "old.db"``, closed."""
    from engram.stores.sqlite.store import SQLiteStore

    store = SQLiteStore(tmp_path / "old.db")
    _put_old(store)
    store.close()


def test_sqlite_migration_indexes_the_days_of_stored_memories(tmp_path: Path) -> None:
    _old_sqlite(tmp_path)
    with sqlite_from(tmp_path / "old.db", 18, "DROP TABLE memory_days") as old:  # as a store from before 18
        _check(old)


@pytest.mark.postgres
def test_postgres_migration_indexes_the_days_of_stored_memories(postgres_store: object, postgres_url: str) -> None:
    _put_old(postgres_store)
    with postgres_from(postgres_url, 13, "DROP INDEX engram_memories_named_days",
                       "ALTER TABLE engram_memories DROP COLUMN named_days") as old:
        _check(old)


# What each later migration adds: as a store from before it, the memory it concerns without its days.
ADDED = [pytest.param(22, 16, "m4", id="a whole month gone by"),
         pytest.param(23, 17, "m5", id="a day told as chats shorten it"),
         pytest.param(24, 18, "m6", id="a quarter gone by")]


@pytest.mark.parametrize(("sqlite", "postgres", "memory"), ADDED)
def test_sqlite_migration_adds_the_days_a_later_reading_finds(tmp_path: Path, sqlite: int, postgres: int,
                                                              memory: str) -> None:
    _old_sqlite(tmp_path)
    forgotten = f"DELETE FROM memory_days WHERE memory_rowid = (SELECT rowid FROM memories WHERE id = '{memory}')"
    with sqlite_from(tmp_path / "old.db", sqlite, forgotten) as old:
        _check(old)


@pytest.mark.postgres
@pytest.mark.parametrize(("sqlite", "postgres", "memory"), ADDED)
def test_postgres_migration_adds_the_days_a_later_reading_finds(postgres_store: object, postgres_url: str,
                                                                sqlite: int, postgres: int, memory: str) -> None:
    _put_old(postgres_store)
    forgotten = f"UPDATE engram_memories SET named_days = '{{}}' WHERE id = '{memory}'"
    with postgres_from(postgres_url, postgres, forgotten) as old:
        _check(old)
