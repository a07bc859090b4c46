"""The SQLite store lets no raw ``sqlite3`` error out: every failure is a typed engram error.

A file that is not a database is ``StoreUnavailable`` naming the path; a connection that fails
later (a damaged file, an I/O error, a closed connection) is ``StoreError`` from every method,
``change_token`` included, which the retrieval cache calls on every query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.errors import StoreError, StoreUnavailable
from engram.model import Filters, MemoryRecord
from engram.stores.sqlite.readers import ReadPool
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2024, 2, 15, tzinfo=UTC)


@pytest.mark.parametrize("garbage", [b"these are notes, not a SQLite database " * 40, b"\x00" * 4096,
                                     b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_file_that_is_not_a_database_is_store_unavailable_naming_the_path(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(garbage)
    with pytest.raises(StoreUnavailable) as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)
    assert path.read_bytes() == garbage  # untouched


class _Broken:
    """A connection whose every statement fails the way a damaged file or a failing disk does."""

    def __init__(self, error: sqlite3.Error) -> None:
        self.error = error
        self.in_transaction = False

    def execute(self, *args: Any) -> Any:
        raise self.error

    def close(self) -> None:
        pass


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "ok.db")
    yield s
    s.close()


def _record() -> MemoryRecord:
    return MemoryRecord(id="m1", user_id="u", content="hello", kind="message", created_at=NOW, recorded_at=NOW,
                        content_hash="h")


CALLS: dict[str, Callable[[SQLiteStore], Any]] = {
    "change_token": lambda s: s.change_token("u"),
    "entity_names": lambda s: s.entity_names("u", max_aliases=10),
    "vectors": lambda s: s.vectors("u", ["m1"]),
    "get": lambda s: s.get("u", "m1"),
    "list": lambda s: s.list("u", Filters()),
    "count": lambda s: s.count("u"),
    "delete": lambda s: s.delete("u", "m1"),
    "put_many": lambda s: s.put_many([_record()], np.zeros((1, 4), dtype=np.float32)),
    "keyword_search": lambda s: s.keyword_search("u", "hello", 5, Filters()),
    "vector_search": lambda s: s.vector_search("u", np.ones(4, dtype=np.float32), 5, Filters()),
}


@pytest.mark.parametrize("error", [sqlite3.DatabaseError("database disk image is malformed"),
                                   sqlite3.OperationalError("disk I/O error"),
                                   sqlite3.ProgrammingError("Cannot operate on a closed database.")],
                         ids=["malformed", "io", "closed"])
@pytest.mark.parametrize("call", list(CALLS))
def test_a_failing_connection_is_store_error_from_every_method(
    store: SQLiteStore, call: str, error: sqlite3.Error
) -> None:
    store._conn = _Broken(error)  # type: ignore[assignment]
    store._readers = ReadPool(lambda: _Broken(error), 2)  # type: ignore[arg-type,return-value]
    with pytest.raises(StoreError) as info:
        CALLS[call](store)
    assert not isinstance(info.value, sqlite3.Error)
    assert str(error) in str(info.value)
