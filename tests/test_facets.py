"""The vectors of a message's standing sentences (engram.ingest.facets): which writes make them,
and ``Memory.upgrade`` / ``engram upgrade``, which gives them to memories stored before, once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from engram import Memory
from engram.cli import cli
from engram.ext import Embedder, Store
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
        expected = embed_facets(embedder, [memory.get(ids["alice"], user_id="alice")])[0]
        np.testing.assert_allclose(found[ids["alice"]], expected, rtol=1e-6)
        assert memory.upgrade() == 1  # bob's
        assert memory.upgrade() == 0


def test_upgrade_derives_again_the_facets_an_older_version_found_fewer_of(tmp_path: Path, embedder: Embedder) -> None:
    # An older version's patterns saw one standing sentence here; this one sees two ("I use ...").
    said = "We moved offices last week. Always send invoices as PDF files. I use pytest with plain fixtures."
    db = tmp_path / "m.db"
    with Memory(db, embedder=embedder) as memory:
        memory_id = memory.add(said, user_id="alice", role="user").id
        assert len(memory.store.facets("alice", [memory_id])[memory_id]) == 2
        record = memory.get(memory_id, user_id="alice")
        one = embed_facets(embedder, [record])[0][:1]  # as the older version stored them
        assert memory.store.put_facets("alice", [(memory_id, record.content_hash, one)], replace=True) == 1
        assert len(memory.store.facets("alice", [memory_id])[memory_id]) == 1
        # Without replace a memory that has facets is left alone; upgrade replaces the stale ones once.
        assert memory.store.put_facets("alice", [(memory_id, record.content_hash, one)]) == 0
        assert memory.upgrade("alice") == 1
        np.testing.assert_allclose(memory.store.facets("alice", [memory_id])[memory_id],
                                   embed_facets(embedder, [record])[0], rtol=1e-6)
        assert memory.upgrade("alice") == 0


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


def test_upgrade_moves_the_change_token(old_store: tuple[Path, dict[str, str]], embedder: Embedder) -> None:
    """Another process's cached retrievals of the user must not outlive the new facets."""
    db, _ = old_store
    with Memory(db, embedder=embedder) as memory:
        before = memory.store.change_token("alice")
        assert memory.upgrade("alice") == 1
        assert memory.store.change_token("alice") != before


def test_a_damaged_facets_value_reads_as_none(old_store: tuple[Path, dict[str, str]], embedder: Embedder) -> None:
    """Bytes that hold no whole vectors never break a retrieval, an edit or an upgrade."""
    db, ids = old_store
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE memories SET facets = zeroblob(100) WHERE id = ?", (ids["alice"],))
    with Memory(db, embedder=embedder) as memory:
        assert memory.store.facets("alice", [ids["alice"]]) == {}
        found = memory.retrieve("Write the invoice e-mail for the new office.", user_id="alice")
        assert ids["alice"] in found.ids()
        memory.update(ids["alice"], user_id="alice", importance=0.9)
        memory.upgrade("alice")


@pytest.mark.postgres
def test_two_users_memories_sharing_an_id_keep_their_own_facets(postgres_store: Store, embedder: Embedder) -> None:
    """Ids are per user in PostgreSQL: one batch may hold alice's m1 and bob's m1."""
    with Memory(store=postgres_store, embedder=embedder) as memory:
        memory.add_many([{"id": "m1", "user_id": "alice", "content": SAID, "role": "user"},
                         {"id": "m1", "user_id": "bob", "content": PLAIN, "role": "user"}])
        assert set(memory.store.facets("alice", ["m1"])) == {"m1"}
        assert memory.store.facets("bob", ["m1"]) == {}
        memory.forget_user("alice")
        assert memory.store.facets("bob", ["m1"]) == {}


def test_a_memory_that_brings_its_vector_is_not_embedded(tmp_path: Path, embedder: Embedder) -> None:
    """An import with vectors needs no embedder: its facets come with engram upgrade."""
    calls: list[list[str]] = []

    class Counting:
        model_id, dimensions = embedder.model_id, embedder.dimensions

        def embed_batch(self, texts: list[str]) -> np.ndarray:
            calls.append(list(texts))
            return np.asarray(embedder.embed_batch(texts))

    vector = [float(x) for x in embedder.embed_batch([SAID])[0]]
    with Memory(tmp_path / "given.db", embedder=Counting()) as memory:
        record = memory.add_many([{"user_id": "u", "content": SAID, "role": "user", "vector": vector,
                                   "embedding_model": embedder.model_id}])[0]
        assert calls == [] and memory.store.facets("u", [record.id]) == {}
        assert memory.upgrade("u") == 1


def test_an_edit_of_role_or_kind_derives_the_facets_again(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "edit.db", embedder=embedder) as memory:
        record = memory.add(SAID, user_id="u", role="assistant")
        assert memory.store.facets("u", [record.id]) == {}
        memory.update(record.id, user_id="u", role="user")
        assert set(memory.store.facets("u", [record.id])) == {record.id}
        memory.update(record.id, user_id="u", kind="chunk")
        assert memory.store.facets("u", [record.id]) == {}


@pytest.mark.postgres
def test_upgrade_on_postgresql(postgres_store: Store, postgres_url: str, embedder: Embedder) -> None:
    import psycopg

    with Memory(store=postgres_store, embedder=embedder) as memory:
        said = memory.add(SAID, user_id="alice", role="user")
        memory.add(PLAIN, user_id="alice", role="user")
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE engram_memories SET facets = NULL")
        before = memory.store.change_token("alice")
        assert memory.upgrade() == 1
        assert set(memory.store.facets("alice", [said.id])) == {said.id}
        assert memory.store.change_token("alice") != before
        assert memory.upgrade() == 0
