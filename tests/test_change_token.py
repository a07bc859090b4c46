"""SQLite's change token is each user's write counter: another process's retrievals leave it, its
writes to that user move it (a server of several workers keeps its caches)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.model import Entity, Link, LoggedRetrieval, MemoryRecord
from engram.stores.sqlite.store import SQLiteStore

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def rec(mid: str, user: str = "u") -> MemoryRecord:
    return MemoryRecord(id=mid, user_id=user, content=f"note {mid}", kind="fact", created_at=NOW, recorded_at=NOW,
                        content_hash=mid)


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    a, b = SQLiteStore(tmp_path / "e.db"), SQLiteStore(tmp_path / "e.db")  # two processes' connections
    a.bind_embedder("fake", 4)
    a.put_many([rec("m1"), rec("m2")], np.eye(4, dtype=np.float32)[:2])
    yield a, b
    a.close()
    b.close()


def test_what_a_retrieval_writes_and_other_users_writes_leave_the_token(two: tuple[SQLiteStore, SQLiteStore]) -> None:
    a, b = two
    token = b.change_token("u")
    a.record_access("u", ["m1"], NOW)
    a.log_retrieval("u", LoggedRetrieval(id="r1", query="q", category="factual", strategy="s", items=(),
                                         settings={}, created_at=NOW))
    a.put_many([rec("x1", user="v")], np.eye(4, dtype=np.float32)[:1])
    assert b.change_token("u") == token


@pytest.mark.parametrize("write", ["insert", "replace", "delete", "link", "entity"])
def test_every_write_to_the_user_moves_the_token(two: tuple[SQLiteStore, SQLiteStore], write: str) -> None:
    a, b = two
    token = b.change_token("u")
    if write == "insert":
        a.put_many([rec("m3")], np.eye(4, dtype=np.float32)[:1])
    elif write == "replace":
        old = a.get("u", "m1")
        assert old is not None
        a.replace(replace(old, tags=("t",)), None)
    elif write == "delete":
        assert a.delete("u", "m2")
    elif write == "link":
        a.add_link("u", Link(from_id="m1", to_id="m2", type="relates_to", strength=0.5))
    else:
        a.upsert_entity("u", Entity("customer:acme", "customer", "Acme", ()))
    assert b.change_token("u") != token


def test_another_workers_retrievals_leave_this_workers_cache_warm(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    with Memory(db, embedder=FakeEmbedder()) as first, Memory(db, embedder=FakeEmbedder()) as second:
        first.add("Acme pays NET30", user_id="u", kind="fact")
        assert not second.retrieve("How does Acme pay?", user_id="u", now=NOW).metadata.cached
        first.retrieve("Who is Acme?", user_id="u", now=NOW)  # logs a retrieval: a commit to the file
        assert second.retrieve("How does Acme pay?", user_id="u", now=NOW).metadata.cached
        first.add("Acme now pays NET45", user_id="u", kind="fact")
        again = second.retrieve("How does Acme pay?", user_id="u", now=NOW)
        assert not again.metadata.cached and any("NET45" in m.content for m in again.memories)
