"""Concurrency: several processes write and read one store; nothing locks out, tears or goes missing.

Writers ``add_many`` batches tagged with their batch id and size (one transaction each) and update
counters in place; readers check that a batch is seen whole or not at all, that a counter being
replaced is never missing nor half-written, that retrieve never falls back on a store error, and at
the end every recorded batch and counter value reconciles with the store.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.model import Filters
from tests.reliability._workers import concurrency_run, report, scale


def _check(figures: dict[str, object]) -> None:
    report(f"concurrency_{figures['backend']}", figures)
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["torn_reads"] == 0, figures["torn_samples"]
    assert figures["reconcile_problems"] == []
    assert isinstance(figures["write_ops"], int) and figures["write_ops"] > 0
    assert isinstance(figures["read_ops"], int) and figures["read_ops"] > 0


def test_concurrent_writers_and_readers_sqlite(tmp_path: Path) -> None:
    seconds = scale(10, 60)
    _check(concurrency_run(str(tmp_path / "c.db"), tmp_path, writers=3, readers=3, seconds=seconds))


_HAS_PG = (
    importlib.util.find_spec("engram.testing.pgserver") is not None
    and importlib.util.find_spec("engram.stores.postgres.store") is not None
)


@pytest.mark.postgres
@pytest.mark.skipif(not _HAS_PG, reason="PostgreSQL backend not built yet")
def test_concurrent_writers_and_readers_postgres(tmp_path: Path) -> None:
    from engram.testing.pgserver import start_postgres

    seconds = scale(10, 60)
    with start_postgres() as server:
        _check(concurrency_run(server.url, tmp_path, writers=3, readers=3, seconds=seconds))


def test_foreign_commit_then_own_write_keeps_vector_index_current(tmp_path: Path) -> None:
    db = tmp_path / "dv.db"
    with Memory(db, embedder=FakeEmbedder()) as a, Memory(db, embedder=FakeEmbedder()) as b:
        a.add("alpha invoice", user_id="u")
        query = a.embedder.embed_batch(["bravo freight"])[0]
        a.store.vector_search("u", query, 10, Filters())  # a caches u's index
        foreign = b.add("bravo freight", user_id="u")  # another process writes u
        a.add("unrelated", user_id="someone-else")  # a writes anything: data_version re-read
        hits = a.store.vector_search("u", query, 10, Filters())
        assert foreign.id in [h[0] for h in hits]


def test_foreign_delete_then_own_write_drops_vector(tmp_path: Path) -> None:
    db = tmp_path / "dv2.db"
    with Memory(db, embedder=FakeEmbedder()) as a, Memory(db, embedder=FakeEmbedder()) as b:
        victim = a.add("bravo freight", user_id="u")
        query = a.embedder.embed_batch(["bravo freight"])[0]
        a.store.vector_search("u", query, 10, Filters())
        assert b.delete(victim.id, user_id="u")
        a.add("unrelated", user_id="someone-else")
        assert victim.id not in [h[0] for h in a.store.vector_search("u", query, 10, Filters())]
