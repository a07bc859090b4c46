"""PostgreSQL side of entity relations, ontology, retrieval log, feedback and tuned weights (migration 2).

Semantics, ordering and tie-breaks are SQLite's (:mod:`engram.stores.sqlite.knowledge`).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

from engram.model import Entity, EntityRelation, LoggedRetrieval, RelationType
from engram.stores.entity_names import with_aliases
from engram.stores.log_codec import decode_items, decode_settings, encode_items, item_token

# One retention policy for both backends; it is plain Python that lives beside the SQLite log.
from engram.stores.sqlite.knowledge import LOG_RETENTION, prune_due

__all__ = ["KnowledgeMixin", "forget_knowledge", "forget_memory_in_log"]

_KNOWLEDGE_TABLES = (
    "engram_entity_ontology", "engram_entity_relations", "engram_retrieval_log", "engram_retrieval_feedback",
    "engram_tuned_weights",
)
_LOG_COLUMNS = "l.id, l.query, l.category, l.strategy, l.created_at, l.items, l.settings"
# The user is a parameter, not l.user_id: Citus routes a correlated subquery in the SELECT list to
# one shard only when it names the user itself (else it reads every shard).
_USED = (
    "ARRAY(SELECT f.memory_id FROM engram_retrieval_feedback f "
    "WHERE f.user_id = %s AND f.retrieval_id = l.id ORDER BY f.memory_id)"
)


def prune_log(conn: psycopg.Connection[Any], user_id: str, keep: int) -> None:
    """Drop a user's logged retrievals beyond the newest ``keep``, with their feedback (as SQLite's)."""
    # Only the (user_id, created_at) index is walked: sorting by id as well would read every row.
    row = conn.execute(
        "SELECT created_at FROM engram_retrieval_log WHERE user_id = %s ORDER BY created_at DESC OFFSET %s LIMIT 1",
        (user_id, keep),
    ).fetchone()
    if row is None:  # the common case: no more than keep
        return
    at = row[0]  # when the newest retrieval to drop was logged
    newer = conn.execute(
        "SELECT count(*) FROM engram_retrieval_log WHERE user_id = %s AND created_at > %s", (user_id, at)
    ).fetchone()
    # Of the retrievals logged in that same microsecond, the highest ids stay, as many as still fit.
    conn.execute(
        "WITH old AS (SELECT id FROM engram_retrieval_log WHERE user_id = %(u)s AND created_at < %(at)s"
        "  UNION ALL (SELECT id FROM engram_retrieval_log WHERE user_id = %(u)s AND created_at = %(at)s"
        "  ORDER BY id DESC OFFSET %(ties)s)),"
        " feedback AS (DELETE FROM engram_retrieval_feedback f USING old"
        "  WHERE f.user_id = %(u)s AND f.retrieval_id = old.id)"
        " DELETE FROM engram_retrieval_log l USING old WHERE l.user_id = %(u)s AND l.id = old.id",
        {"u": user_id, "at": at, "ties": keep - (newer[0] if newer else 0)},
    )


def forget_knowledge(conn: psycopg.Connection[Any], user_id: str) -> None:
    """Called inside forget_user's transaction."""
    for table in _KNOWLEDGE_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE user_id = %s", (user_id,))


def forget_memory_in_log(conn: psycopg.Connection[Any], user_id: str, memory_id: str) -> None:
    """Called inside delete's transaction; as SQLite's (``json`` keeps the text as written)."""
    token = item_token(memory_id)
    conn.execute(
        "DELETE FROM engram_retrieval_feedback WHERE user_id = %s AND retrieval_id IN ("
        " SELECT id FROM engram_retrieval_log WHERE user_id = %s AND strpos(items::text, %s) > 0)",
        (user_id, user_id, token),
    )
    conn.execute(
        "DELETE FROM engram_retrieval_log WHERE user_id = %s AND strpos(items::text, %s) > 0", (user_id, token)
    )
    conn.execute(
        "DELETE FROM engram_retrieval_feedback WHERE user_id = %s AND memory_id = %s", (user_id, memory_id)
    )


def _logged(row: Any) -> LoggedRetrieval:
    return LoggedRetrieval(
        id=row[0], query=row[1], category=row[2], strategy=row[3], created_at=row[4].astimezone(UTC),
        items=decode_items(row[5]), settings=decode_settings(row[6]), used=tuple(row[7] or ()),
    )


class KnowledgeMixin:
    """Methods of :class:`~engram.stores.postgres.store.PostgresStore` beyond memories themselves."""

    log_retention: int | None = LOG_RETENTION
    _log_writes: dict[str, int]  # per user: log writes since the last prune (see prune_due)

    if TYPE_CHECKING:

        def _tx(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

        def _read(self, query: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]: ...

    # -- ontology and relations ---------------------------------------------------------------
    def count_entities(self, user_id: str, *, excluding: str | None = None) -> int:
        """The user's registered entities, other than ``excluding`` (as SQLite's)."""
        rows = self._read(
            "SELECT count(*) FROM engram_entities WHERE user_id = %s AND id IS DISTINCT FROM %s", (user_id, excluding)
        )
        return int(rows[0][0])

    def entity_names(self, user_id: str, *, max_aliases: int) -> builtins.list[Entity]:
        """As SQLite's: every entity, with aliases (in id order) until ``max_aliases`` are read."""
        rows = self._read("SELECT id, type, name FROM engram_entities WHERE user_id = %s ORDER BY id", (user_id,))
        sql = ("SELECT id, aliases FROM engram_entities WHERE user_id = %s AND id > %s AND aliases <> '{}' "
               "ORDER BY id LIMIT %s")
        return with_aliases(rows, lambda after, n: self._read(sql, (user_id, after, n)), max_aliases)

    def define_relation(self, user_id: str, relation: RelationType) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO engram_entity_ontology (user_id, from_type, relation, to_type, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (user_id, relation.from_type, relation.relation, relation.to_type, datetime.now(UTC)),
            )

    def ontology(self, user_id: str) -> builtins.list[RelationType]:
        rows = self._read(
            "SELECT from_type, relation, to_type FROM engram_entity_ontology WHERE user_id = %s "
            "ORDER BY from_type, relation, to_type",
            (user_id,),
        )
        return [RelationType(*r) for r in rows]

    def relate_entities(self, user_id: str, relation: EntityRelation) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO engram_entity_relations "
                "(user_id, from_id, relation, to_id, from_type, to_type, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (user_id, relation.from_id, relation.relation, relation.to_id, relation.from_type,
                 relation.to_type, datetime.now(UTC)),
            )

    def related_entities(
        self, user_id: str, entity_ids: Sequence[str], limit_per_entity: int
    ) -> builtins.list[EntityRelation]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or limit_per_entity <= 0:
            return []
        rows = self._read(
            "SELECT from_id, relation, to_id, from_type, to_type FROM ("
            " SELECT r.from_id, r.relation, r.to_id, r.from_type, r.to_type, ROW_NUMBER() OVER ("
            "  PARTITION BY r.from_id ORDER BY r.created_at DESC, r.relation, r.to_id) AS n"
            " FROM engram_entity_relations r JOIN engram_entity_ontology o ON o.user_id = r.user_id"
            "  AND o.from_type = r.from_type AND o.relation = r.relation AND o.to_type = r.to_type"
            " WHERE r.user_id = %s AND r.from_id = ANY(%s::text[])"
            ") x WHERE n <= %s ORDER BY from_id, n",
            (user_id, ids, limit_per_entity),
        )
        return [EntityRelation(*r) for r in rows]

    # -- retrieval log and feedback -------------------------------------------------------------
    def log_retrieval(self, user_id: str, entry: LoggedRetrieval) -> None:
        keep = prune_due(self._log_writes, self.log_retention, user_id)
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO engram_retrieval_log (user_id, id, query, category, strategy, items, settings, "
                "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (user_id, entry.id, entry.query, entry.category, entry.strategy, encode_items(entry.items),
                 json.dumps(dict(entry.settings), separators=(",", ":")), entry.created_at),
            )
            if keep is not None:
                prune_log(conn, user_id, keep)

    def get_retrieval(self, user_id: str, retrieval_id: str) -> LoggedRetrieval | None:
        rows = self._read(
            f"SELECT {_LOG_COLUMNS}, {_USED} FROM engram_retrieval_log l WHERE l.user_id = %s AND l.id = %s",
            (user_id, user_id, retrieval_id),
        )
        return _logged(rows[0]) if rows else None

    def record_feedback(self, user_id: str, retrieval_id: str, memory_ids: Sequence[str], at: datetime) -> int:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return 0
        with self._tx() as conn:
            new = [
                r[0]
                for r in conn.execute(
                    "INSERT INTO engram_retrieval_feedback (user_id, retrieval_id, memory_id, used_at) "
                    "SELECT %s, %s, m, %s FROM unnest(%s::text[]) m ON CONFLICT DO NOTHING RETURNING memory_id",
                    (user_id, retrieval_id, at, ids),
                ).fetchall()
            ]
            if new:
                conn.execute(
                    "UPDATE engram_memories SET access_count = access_count + 1, "
                    "last_accessed_at = GREATEST(COALESCE(last_accessed_at, %s), %s) "
                    "WHERE user_id = %s AND id = ANY(%s::text[])",
                    (at, at, user_id, new),
                )
            return len(new)

    def feedback_log(self, user_id: str, limit: int) -> builtins.list[LoggedRetrieval]:
        rows = self._read(
            f"SELECT {_LOG_COLUMNS}, {_USED} FROM engram_retrieval_log l WHERE l.user_id = %s AND EXISTS ("
            " SELECT 1 FROM engram_retrieval_feedback f WHERE f.user_id = l.user_id AND f.retrieval_id = l.id)"
            " ORDER BY l.created_at DESC, l.id DESC LIMIT %s",
            (user_id, user_id, limit),
        )
        return [_logged(r) for r in reversed(rows)]

    # -- tuned weights ----------------------------------------------------------------------------
    def save_weights(self, user_id: str, weights: Mapping[str, Mapping[str, float]]) -> None:
        at = datetime.now(UTC)
        with self._tx() as conn:
            conn.execute("DELETE FROM engram_tuned_weights WHERE user_id = %s", (user_id,))
            if not weights:
                return
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO engram_tuned_weights (user_id, strategy, weights, updated_at) VALUES (%s, %s, %s, %s)",
                    [(user_id, s, json.dumps(dict(w), sort_keys=True), at) for s, w in weights.items()],
                )

    def load_weights(self, user_id: str) -> dict[str, dict[str, float]]:
        rows = self._read(
            "SELECT strategy, weights FROM engram_tuned_weights WHERE user_id = %s ORDER BY strategy", (user_id,)
        )
        out: dict[str, dict[str, float]] = {}
        for strategy, raw in rows:
            data = json.loads(raw) if isinstance(raw, str | bytes) else raw
            out[strategy] = {k: float(v) for k, v in data.items()}
        return out

