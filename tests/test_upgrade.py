"""``Memory.upgrade`` and ``engram upgrade``: memories stored before a message's standing sentences
had vectors of their own gain them, once; nothing else changes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from engram import Memory
from engram.cli import cli
from engram.ext import Embedder
from engram.ingest.facets import embed_facets

SAID = "We moved offices last week. From now on, always send invoices as PDF files."
PLAIN = "We moved offices last week. The new desk is by the window."


@pytest.fixture
def old_store(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Path, dict[str, str]]]:
    """A store whose memories were written as an older version wrote them: without facets."""
    db = tmp_path / "old.db"
    with Memory(db, embedder=embedder) as memory:
        ids = {
            "alice": memory.add(SAID, user_id="alice", role="user").id,
            "bob": memory.add(SAID, user_id="bob", role="user").id,
            "plain": memory.add(PLAIN, user_id="alice", role="user").id,
            "assistant": memory.add(SAID, user_id="alice", role="assistant").id,
            "passage": memory.add(SAID, user_id="alice", kind="chunk").id,
        }
        assert set(memory.store.facets("alice", list(ids.values()))) == {ids["alice"]}
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE memories SET facets = NULL")
    yield db, ids


def test_upgrade_gives_old_memories_their_facets_once(
    old_store: tuple[Path, dict[str, str]], embedder: Embedder,
) -> None:
    db, ids = old_store
    with Memory(db, embedder=embedder) as memory:
        assert memory.store.facets("alice", [ids["alice"]]) == {}
        assert memory.upgrade("alice") == 1
        assert memory.store.facets("bob", [ids["bob"]]) == {}  # only the user asked for
        found = memory.store.facets("alice", list(ids.values()))
        assert set(found) == {ids["alice"]}
        expected = embed_facets(embedder, [memory.get(ids["alice"], user_id="alice")])[ids["alice"]]
        np.testing.assert_allclose(found[ids["alice"]], expected, rtol=1e-6)
        assert memory.upgrade() == 1  # bob's
        assert memory.upgrade() == 0


def test_upgrade_leaves_a_memory_edited_since_it_was_read(
    old_store: tuple[Path, dict[str, str]], embedder: Embedder,
) -> None:
    db, ids = old_store
    with Memory(db, embedder=embedder) as memory:
        stale = memory.get(ids["alice"], user_id="alice")
        memory.update(ids["alice"], user_id="alice", content=PLAIN)
        matrix = np.ones((1, memory.embedder.dimensions), dtype=np.float32)
        assert memory.store.put_facets("alice", [(ids["alice"], stale.content_hash, matrix)]) == 0
        assert memory.store.put_facets("bob", [(ids["alice"], stale.content_hash, matrix)]) == 0
        assert memory.store.facets("alice", [ids["alice"]]) == {}


def test_engram_upgrade_command(old_store: tuple[Path, dict[str, str]]) -> None:
    db, _ = old_store
    first = CliRunner().invoke(cli, ["upgrade", "--db", str(db)])
    assert first.exit_code == 0, first.output
    assert first.output.strip() == "upgraded 2 memories"
    again = CliRunner().invoke(cli, ["upgrade", "--db", str(db), "--user", "alice"])
    assert again.output.strip() == "upgraded 0 memories"
    missing = CliRunner().invoke(cli, ["upgrade", "--db", str(db.with_name("nope.db"))])
    assert missing.exit_code != 0
