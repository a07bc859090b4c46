"""Citus: distribute the engram tables by ``user_id`` when the server has the ``citus`` extension.

Every per-user table is hash-distributed on ``user_id`` and co-located with ``engram_memories``, so a
user's memories, links, entities, log and counters live in shards of one node, and every query
that names one ``user_id`` (all of the store's hot reads and writes) is routed to one shard. Their
primary keys all lead with ``user_id``, which Citus requires of unique constraints on distributed
tables; there are no foreign keys. ``engram_meta`` (the bound embedder: no user) and the migration
ledger are reference tables, copied to every node. The schema stays valid on plain PostgreSQL:
nothing here runs without the extension.

:func:`distribute` runs after the migrations and is idempotent: a table Citus already knows is
left alone, and a migration added later changes distributed tables through Citus's DDL
propagation.

The triggers that bump ``engram_user_versions`` (migration 3) are propagated to the shards:
``citus.enable_unsafe_triggers`` is set for that, which is safe here because each trigger writes
only the counters of the users whose rows it saw, and those live in a co-located shard on the same
node. Their function is replaced on Citus by an equivalent that inserts one user at a time: Citus
cannot plan an ``INSERT ... SELECT`` from a transition table ("could not find named tuplestore"),
while an INSERT of one value is routed to the co-located shard and executed locally.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

__all__ = ["DISTRIBUTED_TABLES", "REFERENCE_TABLES", "distribute", "has_citus", "set_local"]

#: Hash-distributed on user_id, all co-located with the first.
DISTRIBUTED_TABLES = (
    "engram_memories", "engram_links", "engram_entities", "engram_user_versions", "engram_entity_ontology",
    "engram_entity_relations", "engram_retrieval_log", "engram_retrieval_feedback", "engram_tuned_weights",
    "engram_memory_history",
)
#: No user_id: a full copy on every node.
REFERENCE_TABLES = ("engram_meta", "engram_schema_migrations")

log = logging.getLogger("engram.stores.postgres")

_LOCK_KEY = 0x656E6772616D  # as schema.migrate's: distribution and migrations never interleave

_BUMP_BODY = """
DECLARE
    changed_user text;
BEGIN
    FOR changed_user IN SELECT DISTINCT user_id FROM changed LOOP
        INSERT INTO engram_user_versions (user_id, version) VALUES (changed_user, 1)
        ON CONFLICT (user_id) DO UPDATE SET version = engram_user_versions.version + 1;
    END LOOP;
    RETURN NULL;
END
"""


def has_citus(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is not None


def _known(conn: psycopg.Connection[Any]) -> set[str]:
    rows = conn.execute("SELECT logicalrelid::regclass::text FROM pg_dist_partition").fetchall()
    return {str(r[0]) for r in rows}


def _bump_is_ours(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'engram_bump_user_version'").fetchone()
    return row is not None and row[0] == _BUMP_BODY


def set_local(conn: psycopg.Connection[Any], settings: Mapping[str, str], *, citus: bool) -> None:
    """``SET LOCAL`` each setting for the rest of the caller's transaction, on Citus's workers too.

    ``set_config(..., true)`` changes only the coordinator's session, and the shards are read on
    the workers (the HNSW path would scan with the default ``ef_search`` and no iterative scan);
    Citus forwards ``SET LOCAL`` to the workers of the transaction when told to.
    """
    statements: list[sql.Composable] = [sql.SQL("SET LOCAL citus.propagate_set_commands = 'local'")] if citus else []
    statements += [
        sql.SQL("SET LOCAL {} = {}").format(sql.SQL(".").join(map(sql.Identifier, name.split("."))), sql.Literal(value))
        for name, value in settings.items()
    ]
    conn.execute(sql.SQL("; ").join(statements))


def _shard_nodes(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM pg_dist_node WHERE isactive AND shouldhaveshards").fetchone()
    return int(row[0]) if row else 0


def distribute(conn: psycopg.Connection[Any]) -> bool:
    """Distribute what is not yet distributed; whether the tables are distributed.

    False, and nothing done, without Citus, or while no node may hold shards (the extension
    created but no worker added yet: Citus would refuse, and the store stays usable on the
    coordinator's local tables until a later open distributes them, rows and all).
    ``conn`` is in autocommit mode (as for :func:`engram.stores.postgres.schema.migrate`).
    """
    if not has_citus(conn):
        return False
    if set(DISTRIBUTED_TABLES + REFERENCE_TABLES) <= _known(conn) and _bump_is_ours(conn):
        return True  # the common case: two catalogue reads per store opened
    if _shard_nodes(conn) == 0:
        log.warning("citus is installed but no node may hold shards: the engram tables stay local")
        return False
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
        if not _bump_is_ours(conn):  # before distributing: the shards' triggers then call this one
            conn.execute(
                "CREATE OR REPLACE FUNCTION engram_bump_user_version() RETURNS trigger LANGUAGE plpgsql AS "
                + "$body$" + _BUMP_BODY + "$body$"
            )
        known = _known(conn)
        for table in REFERENCE_TABLES:
            if table not in known:
                conn.execute("SELECT create_reference_table(%s)", (table,))
        for table in DISTRIBUTED_TABLES:
            if table not in known:
                colocate = "none" if table == DISTRIBUTED_TABLES[0] else DISTRIBUTED_TABLES[0]
                conn.execute(
                    "SELECT create_distributed_table(%s, 'user_id', colocate_with => %s)", (table, colocate)
                )
    return True
