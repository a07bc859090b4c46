"""copy_store: SQLite -> PostgreSQL -> SQLite keeps every record, vector, link and entity exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from engram.model import STATUSES, Entity, Filters, Link
from engram.stores.copy import copy_command, copy_store
from engram.stores.sqlite.store import SQLiteStore
from tests.postgres.test_congruence import USERS, _corpus

pytestmark = pytest.mark.postgres

EVERYTHING = Filters(statuses=STATUSES)


def _fill(store: SQLiteStore) -> None:
    records, vectors = _corpus(seed=21, count=120)
    store.bind_embedder("fake-model", vectors.shape[1])
    # Every seventh memory has vectors of two of its parts (engram.ingest.facets).
    facets = [np.roll(vectors[i : i + 2], 1, axis=1) if i % 7 == 0 else None for i in range(len(records))]
    store.put_many(records[:60], vectors[:60], facets=facets[:60])
    store.put_many(records[60:], vectors[60:], facets=facets[60:])
    mine = [r for r in records if r.user_id == "alice"]
    store.add_link("alice", Link(mine[0].id, mine[1].id, "part_of", 0.5))
    store.add_link("alice", Link(mine[2].id, mine[0].id, "supersedes", 0.9))
    store.upsert_entity("bob", Entity("customer:acme", "customer", "Acme", ("Acme Corp", "ACME")))
    store.upsert_entity("dave", Entity("person:sarah", "person", "Sarah"))  # a user with entities only
    store.record_access("carol", [r.id for r in records if r.user_id == "carol"][:5], records[0].created_at)


def _snapshot(store: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for user in (*USERS, "dave"):
        records = store.list(user, EVERYTHING, limit=10_000)
        vectors = store.vectors(user, [r.id for r in records])
        facets = store.facets(user, [r.id for r in records])
        links = sorted({(k.from_id, k.to_id, k.type, k.strength) for r in records for k in store.links(user, r.id)})
        out[user] = (records, {k: v.tobytes() for k, v in vectors.items()},
                     {k: v.tobytes() for k, v in facets.items()}, links, store.entities(user))
    return out


def test_round_trip_preserves_everything(postgres_store: Any, tmp_path: Path) -> None:
    src = SQLiteStore(tmp_path / "src.db")
    back = SQLiteStore(tmp_path / "back.db")
    try:
        _fill(src)
        seen: list[tuple[int, int]] = []
        report = copy_store(src, postgres_store, batch=17, progress=lambda d, t: seen.append((d, t)))
        assert (report.users, report.memories, report.links, report.entities) == (4, 120, 2, 2)
        assert seen[0] == (0, 120) and seen[-1] == (120, 120)
        assert _snapshot(postgres_store) == _snapshot(src)
        assert postgres_store.stats()["model_id"] == "fake-model"
        copy_store(postgres_store, back, batch=1000)
        original, returned = _snapshot(src), _snapshot(back)
        assert returned == original
        for user in USERS:
            ids = [r.id for r in src.list(user, EVERYTHING, limit=10_000)]
            a, b = src.vectors(user, ids), back.vectors(user, ids)
            assert all(np.array_equal(a[i], b[i]) for i in ids)
    finally:
        src.close()
        back.close()


def test_copy_command(postgres_store: Any, tmp_path: Path) -> None:
    src = SQLiteStore(tmp_path / "cli.db")
    _fill(src)
    src.close()
    result = CliRunner().invoke(copy_command, [str(tmp_path / "cli.db"), postgres_store.url])
    assert result.exit_code == 0, result.output
    assert "copied 120 memories" in result.output
    assert postgres_store.count() == 120
