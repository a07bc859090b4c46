"""What PostgresStore leaves on Citus: the tables distributed by user_id and co-located, the
user-less ones as reference tables, idempotently, existing rows kept; and a user's write counter
still bumped by the triggers running on the workers."""

from __future__ import annotations

import psycopg
import pytest

from engram.stores.postgres.distributed import DISTRIBUTED_TABLES, REFERENCE_TABLES, distribute
from engram.stores.postgres.store import PostgresStore
from tests.contract.test_store_contract import put, rec

pytestmark = pytest.mark.citus


def _layout(url: str) -> dict[str, tuple[str, str | None, int]]:
    """table -> (method: h hash / n reference, distribution column, colocation group)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT logicalrelid::regclass::text, partmethod, column_to_column_name(logicalrelid, partkey), "
            "colocationid FROM pg_dist_partition"
        ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_tables_are_distributed_by_user_and_colocated(postgres_store: PostgresStore, postgres_url: str) -> None:
    layout = _layout(postgres_url)
    assert {t: layout[t][:2] for t in DISTRIBUTED_TABLES} == {t: ("h", "user_id") for t in DISTRIBUTED_TABLES}
    assert len({layout[t][2] for t in DISTRIBUTED_TABLES}) == 1
    assert {layout[t][0] for t in REFERENCE_TABLES} == {"n"}
    # Every engram table is known to Citus: none was forgotten (a local table on the coordinator).
    with psycopg.connect(postgres_url) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'engram%'")}
    assert tables == set(layout)


def test_distribute_is_idempotent_and_keeps_existing_rows(postgres_store: PostgresStore, postgres_url: str) -> None:
    mine = rec("u1", "kept across redistribution")
    put(postgres_store, mine)
    before = _layout(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert distribute(conn) is True
        assert _layout(postgres_url) == before
        # Back to a local table with rows (as a database that had the store before Citus), then again.
        conn.execute("SET citus.enable_unsafe_triggers = on")
        conn.execute("SELECT undistribute_table('engram_tuned_weights')")
        conn.execute("INSERT INTO engram_tuned_weights VALUES ('u1', 'analytical', '{\"importance\": 1.0}', now())")
        assert "engram_tuned_weights" not in _layout(postgres_url)
        assert distribute(conn) is True
    assert _layout(postgres_url) == before
    assert postgres_store.load_weights("u1") == {"analytical": {"importance": 1.0}}
    assert postgres_store.get("u1", mine.id) == mine


def test_change_token_is_bumped_by_writes_on_the_workers(postgres_store: PostgresStore) -> None:
    before = postgres_store.change_token("u1")
    put(postgres_store, rec("u1", "one"), rec("u2", "other"))
    after = postgres_store.change_token("u1")
    assert after != before
    assert postgres_store.change_token("u2") != "0"
    record = rec("u1", "two")
    put(postgres_store, record)
    token = postgres_store.change_token("u1")
    assert token != after
    assert postgres_store.delete("u1", record.id)
    assert postgres_store.change_token("u1") != token


def test_a_coordinator_without_shard_nodes_keeps_local_tables_until_one_may(citus_cluster: object) -> None:
    """Citus refuses to distribute with no node for shards: the store stays usable, and distributes
    its tables, rows and all, once a node may hold them (here the coordinator itself)."""
    from engram.testing.citus import start_citus

    with start_citus(workers=0) as single:
        store = PostgresStore(single.url, min_size=1, max_size=1)
        mine = rec("u1", "written before any shard node")
        try:
            put(store, mine)
        finally:
            store.close()
        assert _layout(single.url) == {}
        with psycopg.connect(single.url, autocommit=True) as conn:
            conn.execute("SELECT citus_set_node_property('127.0.0.1', %s, 'shouldhaveshards', true)",
                         (single.ports[0],))
        store = PostgresStore(single.url, min_size=1, max_size=1)
        try:
            assert set(_layout(single.url)) == set(DISTRIBUTED_TABLES + REFERENCE_TABLES)
            assert store.get("u1", mine.id) == mine
        finally:
            store.close()
