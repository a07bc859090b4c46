"""PostgreSQL plans the hot per-user queries through their indexes, right after a bulk load.

Right after a load the planner still sees the table as it was (autovacuum analyzes a minute or
more later) and, without the store's own ANALYZE, scans one user's rows and sorts them instead of
walking the HNSW index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.model import Filters, MemoryRecord
from engram.stores.copy import copy_store
from engram.stores.postgres.candidates import exact_sql, hnsw_sql
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.postgres.keyword import TERMS_VERSION, USER_TERMS, passing_sql
from engram.stores.postgres.store import CACHED_VECTORS
from engram.stores.sqlite.store import SQLiteStore

pytestmark = pytest.mark.postgres

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DIM = 8
WORDS = ("alpha", "beta", "gamma", "delta", "espresso", "order", "invoice", "acme", "tea", "ship")


def _corpus(users: Sequence[tuple[str, int]]) -> tuple[list[MemoryRecord], np.ndarray]:
    rng = np.random.default_rng(7)
    records = [
        MemoryRecord(id=f"{user}-{i}", user_id=user, kind="message",
                     content=" ".join([*rng.choice(WORDS, 6), f"lot{i % 97}"]), content_hash=f"{user}-{i}",
                     created_at=T0 + timedelta(minutes=i), recorded_at=T0)
        for user, n in users for i in range(n)
    ]
    vectors = rng.standard_normal((len(records), DIM)).astype(np.float32)
    return records, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


#: One heavy user (above the store's exact limit: the HNSW path) and a tail of small ones.
USERS = [("heavy", 2000), *((f"small-{i}", 100) for i in range(20))]


@pytest.fixture
def loaded(postgres_store: Any) -> Iterator[tuple[Any, np.ndarray]]:
    records, vectors = _corpus(USERS)
    postgres_store.put_many(records, vectors)  # one bulk load, no autovacuum in between
    yield postgres_store, vectors


def _plan(store: Any, sql: str, params: Sequence[Any]) -> str:
    with store._tx() as conn:
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + POSTGRES.sql(sql), params).fetchall())


def test_a_heavy_users_vector_search_walks_the_hnsw_index(loaded: tuple[Any, np.ndarray]) -> None:
    store, vectors = loaded
    plan = _plan(store, hnsw_sql(DIM, POSTGRES.true), (vectors[0], "heavy", 10))
    assert f"Index Scan using engram_memories_hnsw_{DIM}" in plan, plan


def test_a_small_users_exact_search_reads_only_their_rows(loaded: tuple[Any, np.ndarray]) -> None:
    store, vectors = loaded
    plan = _plan(store, exact_sql(POSTGRES.true), (vectors[0], "small-3", DIM, 10))
    assert "Seq Scan on engram_memories" not in plan, plan
    assert "Index Cond: (user_id = 'small-3'::text)" in plan, plan


def test_an_adds_lookup_of_stored_vectors_reads_the_users_rows_with_those_hashes(
    loaded: tuple[Any, np.ndarray],
) -> None:
    store, _ = loaded
    plan = _plan(store, CACHED_VECTORS.replace("%s", "?"), ("heavy", ["heavy-3", "heavy-1500"], ["user"]))
    assert "engram_memories_user_hash" in plan, plan
    assert store.cached_vectors("heavy", "any", ["heavy-3", "small-1-3"]).keys() == {"heavy-3"}


@pytest.mark.parametrize("user", ["heavy", "small-3"])
def test_keyword_reads_go_through_the_user_leading_indexes(loaded: tuple[Any, np.ndarray], user: str) -> None:
    """A search reads the user's terms version, a filtered one whether its best rows pass, a first
    one the stored terms of a small user: each by the user's key, none a scan of the table (a
    heavy user's load reads half of it, where a scan is the better plan)."""
    store, _ = loaded
    reads = [
        (TERMS_VERSION.replace("%s", "?"), (user,)),
        (passing_sql("m.kind = ?"), (user, [f"{user}-1", f"{user}-2"], "message")),
    ]
    if user != "heavy":
        reads.append((USER_TERMS.replace("%s", "?"), (user,)))
    for sql, params in reads:
        plan = _plan(store, sql, params)
        assert "Seq Scan" not in plan, plan
        assert f"user_id = '{user}'::text" in plan, plan


def _statements(store: Any, monkeypatch: pytest.MonkeyPatch, search: Callable[[], object]) -> list[tuple[str, Any]]:
    """The statements (SQL and parameters) ``search`` runs on ``store``."""
    seen: list[tuple[str, Any]] = []
    real = store._query

    def recorded(sql: str, params: Sequence[Any] = ()) -> Any:
        seen.append((sql, params))
        return real(sql, params)

    monkeypatch.setattr(store, "_query", recorded)
    search()
    return seen


@pytest.mark.parametrize("user", ["heavy", "small-3"])
def test_a_rare_substring_is_read_through_the_substring_index(
    loaded: tuple[Any, np.ndarray], user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few matches (~40 rows hold "lot13", of 4,000): counted, then read, through the trigram GIN
    index, not by walking the user's rows newest first (a heavy user's every row)."""
    store, _ = loaded
    search = lambda: store.substring_search(user, ["ot13", "qzx"], 10, Filters())  # noqa: E731
    [count, read] = _statements(store, monkeypatch, search)
    assert "Bitmap Index Scan on engram_memories_substrings" in _plan(store, *count)
    plan = _plan(store, *read)
    assert "Seq Scan" not in plan and "Index Scan using engram_memories_user_created" not in plan, plan
    if user == "heavy":
        assert "Bitmap Index Scan on engram_memories_substrings" in plan, plan


def test_a_common_substring_walks_the_users_rows_newest_first(
    loaded: tuple[Any, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = loaded  # most rows hold one of these: the index would read each
    search = lambda: store.substring_search("heavy", ["acm", "alph", "bet"], 10, Filters())  # noqa: E731
    [count, read] = _statements(store, monkeypatch, search)
    assert "Bitmap Index Scan on engram_memories_substrings" in _plan(store, *count)
    plan = _plan(store, *read)
    assert "Index Scan using engram_memories_user_created" in plan and "engram_memories_substrings" not in plan, plan


def _analyzed(store: Any) -> int:
    with store._tx() as conn:
        row = conn.execute("SELECT pg_stat_get_analyze_count('engram_memories'::regclass)").fetchone()
    return int(row[0])


def test_copy_into_postgres_analyzes_what_it_copied(postgres_store: Any, tmp_path: Path) -> None:
    records, vectors = _corpus([("alice", 40), ("bob", 20)])  # too few for a load's own ANALYZE
    src = SQLiteStore(tmp_path / "src.db")
    try:
        src.bind_embedder("fake-model", DIM)
        src.put_many(records, vectors)
        before = _analyzed(postgres_store)
        copy_store(src, postgres_store)
    finally:
        src.close()
    assert _analyzed(postgres_store) == before + 1
