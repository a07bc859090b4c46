"""SQLite side of entity relations, ontology, retrieval log, feedback and tuned weights (migration 3)."""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from engram.errors import ConfigError
from engram.model import Entity, EntityRelation, LoggedRetrieval, RelationType
from engram.stores.entity_names import with_aliases
from engram.stores.log_codec import decode_items, decode_settings, encode_items, item_token
from engram.stores.sqlite.rows import from_us, to_us

__all__ = [
    "LOG_RETENTION", "PRUNE_EVERY", "KnowledgeMixin", "check_log_retention", "forget_knowledge", "forget_memory_in_log",
    "prune_due", "prune_log",
]

T = TypeVar("T")

_KNOWLEDGE_TABLES = ("entity_ontology", "entity_relations", "retrieval_log", "retrieval_feedback", "tuned_weights")

_LOG_COLUMNS = "l.id, l.query, l.category, l.strategy, l.created_at, l.items, l.settings"
# json_group_array keeps ids intact whatever characters they hold (group_concat would need a separator).
_USED = (
    "(SELECT json_group_array(f.memory_id) FROM retrieval_feedback f "
    "WHERE f.user_id = l.user_id AND f.retrieval_id = l.id)"
)


# The retrieval log keeps each user's newest LOG_RETENTION retrievals (and their feedback) by default.
# Pruning walks that many index entries, so it runs on a store's first logged retrieval of a user
# (short-lived processes such as the CLI prune too) and then every PRUNE_EVERY-th: a user's log
# holds at most retention + PRUNE_EVERY - 1 retrievals. The PostgreSQL store keeps the same bound.
LOG_RETENTION = 10_000
PRUNE_EVERY = 64
_MAX_RETENTION = 100_000_000


def check_log_retention(value: object) -> int | None:
    """``log_retention`` of a store constructor: a positive count, or ``None`` for an unbounded log."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_RETENTION:
        raise ConfigError("log_retention", f"must be an integer in [1, {_MAX_RETENTION}] or None, got {value!r}")
    return value


def prune_due(writes: dict[str, int], retention: int | None, user_id: str) -> int | None:
    """The retention one log write must enforce (on the first of a user, then every PRUNE_EVERY-th), else None.

    ``writes`` counts a user's log writes since the last prune; the store keeps it.
    """
    if retention is None:
        return None
    count = writes.get(user_id, 0)
    writes[user_id] = (count + 1) % PRUNE_EVERY
    return retention if count == 0 else None


def prune_log(c: sqlite3.Connection, user_id: str, keep: int) -> None:
    """Drop a user's logged retrievals beyond the newest ``keep``, with their feedback."""
    # Only the (user_id, created_at) index is walked: sorting by id as well would read every row.
    row = c.execute(
        "SELECT created_at FROM retrieval_log WHERE user_id = ? ORDER BY created_at DESC LIMIT 1 OFFSET ?",
        (user_id, keep),
    ).fetchone()
    if row is None:  # the common case: no more than keep
        return
    at = row[0]  # when the newest retrieval to drop was logged
    newer = c.execute(
        "SELECT count(*) FROM retrieval_log WHERE user_id = ? AND created_at > ?", (user_id, at)
    ).fetchone()[0]
    # Of the retrievals logged in that same microsecond, the highest ids stay, as many as still fit.
    # Two index ranges, not one OR, which SQLite would answer by reading every row of the user; and
    # +id so the few ties are sorted rather than the primary key walked over all of them.
    dropped = (
        "SELECT id FROM retrieval_log WHERE user_id = ? AND created_at < ? UNION ALL SELECT * FROM ("
        "SELECT id FROM retrieval_log WHERE user_id = ? AND created_at = ? ORDER BY +id DESC LIMIT -1 OFFSET ?)"
    )
    params = (user_id, user_id, at, user_id, at, keep - newer)
    c.execute(f"DELETE FROM retrieval_feedback WHERE user_id = ? AND retrieval_id IN ({dropped})", params)
    c.execute(f"DELETE FROM retrieval_log WHERE user_id = ? AND id IN ({dropped})", params)


def forget_knowledge(c: sqlite3.Connection, user_id: str) -> None:
    """Called inside forget_user's transaction."""
    for table in _KNOWLEDGE_TABLES:
        c.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))


def forget_memory_in_log(c: sqlite3.Connection, user_id: str, memory_id: str) -> None:
    """Called inside delete's transaction: a deleted memory leaves no trace, so the logged retrievals
    that returned it (whose query may quote it) go, with their feedback."""
    token = item_token(memory_id)
    c.execute(
        "DELETE FROM retrieval_feedback WHERE user_id = ? AND retrieval_id IN ("
        " SELECT id FROM retrieval_log WHERE user_id = ? AND instr(items, ?) > 0)",
        (user_id, user_id, token),
    )
    c.execute("DELETE FROM retrieval_log WHERE user_id = ? AND instr(items, ?) > 0", (user_id, token))
    c.execute("DELETE FROM retrieval_feedback WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))


def _logged(row: Any) -> LoggedRetrieval:
    created = from_us(row[4])
    assert created is not None
    used = tuple(sorted(json.loads(row[7]))) if row[7] else ()
    return LoggedRetrieval(
        id=row[0], query=row[1], category=row[2], strategy=row[3], created_at=created,
        items=decode_items(row[5]), settings=decode_settings(row[6]), used=used,
    )


class KnowledgeMixin:
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore` beyond memories themselves."""

    log_retention: int | None = LOG_RETENTION
    _log_writes: dict[str, int]  # per user: log writes since the last prune (see prune_due)

    if TYPE_CHECKING:

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

        def _write(self, op: Callable[[sqlite3.Connection], T]) -> T: ...

    # -- ontology and relations ---------------------------------------------------------------
    def count_entities(self, user_id: str, *, excluding: str | None = None) -> int:
        """The user's registered entities, other than ``excluding`` (the one an update would replace).

        From the primary key alone: add_entity checks its bound with this, not by loading every alias.
        """
        rows = self._read("SELECT count(*) FROM entities WHERE user_id = ? AND id IS NOT ?", (user_id, excluding))
        return int(rows[0][0])

    def entity_names(self, user_id: str, *, max_aliases: int) -> builtins.list[Entity]:
        """Every entity of the user, with aliases (in id order) until ``max_aliases`` are read: what an
        entity index holds, without decoding every alias list (:mod:`engram.stores.entity_names`)."""
        rows = self._read("SELECT id, type, name FROM entities WHERE user_id = ? ORDER BY id", (user_id,))
        sql = "SELECT id, aliases FROM entities WHERE user_id = ? AND id > ? AND aliases <> '[]' ORDER BY id LIMIT ?"
        return with_aliases(
            rows, lambda after, n: [(r[0], json.loads(r[1])) for r in self._read(sql, (user_id, after, n))], max_aliases
        )

    def define_relation(self, user_id: str, relation: RelationType) -> None:
        self._write(
            lambda c: c.execute(
                "INSERT OR IGNORE INTO entity_ontology (user_id, from_type, relation, to_type, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (user_id, relation.from_type, relation.relation, relation.to_type, to_us(datetime.now(UTC))),
            )
        )

    def ontology(self, user_id: str) -> builtins.list[RelationType]:
        rows = self._read(
            "SELECT from_type, relation, to_type FROM entity_ontology WHERE user_id = ? "
            "ORDER BY from_type, relation, to_type",
            (user_id,),
        )
        return [RelationType(*r) for r in rows]

    def relate_entities(self, user_id: str, relation: EntityRelation) -> None:
        self._write(
            lambda c: c.execute(
                "INSERT OR IGNORE INTO entity_relations "
                "(user_id, from_id, relation, to_id, from_type, to_type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (user_id, relation.from_id, relation.relation, relation.to_id, relation.from_type,
                 relation.to_type, to_us(datetime.now(UTC))),
            )
        )

    def related_entities(
        self, user_id: str, entity_ids: Sequence[str], limit_per_entity: int
    ) -> builtins.list[EntityRelation]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or limit_per_entity <= 0:
            return []
        # The join with the ontology is what "relations whose types the ontology allows" means.
        rows = self._read(
            "SELECT from_id, relation, to_id, from_type, to_type FROM ("
            " SELECT r.from_id, r.relation, r.to_id, r.from_type, r.to_type, ROW_NUMBER() OVER ("
            "  PARTITION BY r.from_id ORDER BY r.created_at DESC, r.relation, r.to_id) AS n"
            " FROM entity_relations r JOIN entity_ontology o ON o.user_id = r.user_id"
            "  AND o.from_type = r.from_type AND o.relation = r.relation AND o.to_type = r.to_type"
            f" WHERE r.user_id = ? AND r.from_id IN ({','.join('?' * len(ids))})"
            ") WHERE n <= ? ORDER BY from_id, n",
            (user_id, *ids, limit_per_entity),
        )
        return [EntityRelation(*r) for r in rows]

    # -- retrieval log and feedback -------------------------------------------------------------
    def log_retrieval(self, user_id: str, entry: LoggedRetrieval) -> None:
        keep = prune_due(self._log_writes, self.log_retention, user_id)

        def op(c: sqlite3.Connection) -> None:
            c.execute(
                "INSERT OR IGNORE INTO retrieval_log "
                "(user_id, id, query, category, strategy, items, settings, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (user_id, entry.id, entry.query, entry.category, entry.strategy, encode_items(entry.items),
                 json.dumps(dict(entry.settings), separators=(",", ":")), to_us(entry.created_at)),
            )
            if keep is not None:
                prune_log(c, user_id, keep)

        self._write(op)

    def get_retrieval(self, user_id: str, retrieval_id: str) -> LoggedRetrieval | None:
        rows = self._read(
            f"SELECT {_LOG_COLUMNS}, {_USED} FROM retrieval_log l WHERE l.user_id = ? AND l.id = ?",
            (user_id, retrieval_id),
        )
        return _logged(rows[0]) if rows else None

    def record_feedback(self, user_id: str, retrieval_id: str, memory_ids: Sequence[str], at: datetime) -> int:
        ids = list(dict.fromkeys(memory_ids))

        def op(c: sqlite3.Connection) -> int:
            new = [
                memory_id
                for memory_id in ids
                if c.execute(
                    "INSERT OR IGNORE INTO retrieval_feedback (user_id, retrieval_id, memory_id, used_at) "
                    "VALUES (?, ?, ?, ?)",
                    (user_id, retrieval_id, memory_id, to_us(at)),
                ).rowcount
            ]
            if new:
                # The use count reinforcement reads (see engram.feedback): once per retrieval and memory.
                c.execute(
                    "UPDATE memories SET access_count = access_count + 1, "
                    "last_accessed_at = MAX(COALESCE(last_accessed_at, 0), ?) "
                    f"WHERE user_id = ? AND id IN ({','.join('?' * len(new))})",
                    (to_us(at), user_id, *new),
                )
            return len(new)

        return self._write(op)

    def feedback_log(self, user_id: str, limit: int) -> builtins.list[LoggedRetrieval]:
        rows = self._read(
            f"SELECT {_LOG_COLUMNS}, {_USED} FROM retrieval_log l WHERE l.user_id = ? AND EXISTS ("
            " SELECT 1 FROM retrieval_feedback f WHERE f.user_id = l.user_id AND f.retrieval_id = l.id)"
            " ORDER BY l.created_at DESC, l.id DESC LIMIT ?",
            (user_id, limit),
        )
        return [_logged(r) for r in reversed(rows)]

    # -- tuned weights ----------------------------------------------------------------------------
    def save_weights(self, user_id: str, weights: Mapping[str, Mapping[str, float]]) -> None:
        at = to_us(datetime.now(UTC))

        def op(c: sqlite3.Connection) -> None:
            c.execute("DELETE FROM tuned_weights WHERE user_id = ?", (user_id,))
            c.executemany(
                "INSERT INTO tuned_weights (user_id, strategy, weights, updated_at) VALUES (?, ?, ?, ?)",
                [(user_id, strategy, json.dumps(dict(w), sort_keys=True), at) for strategy, w in weights.items()],
            )

        self._write(op)

    def load_weights(self, user_id: str) -> dict[str, dict[str, float]]:
        rows = self._read("SELECT strategy, weights FROM tuned_weights WHERE user_id = ? ORDER BY strategy", (user_id,))
        return {strategy: {k: float(v) for k, v in json.loads(w).items()} for strategy, w in rows}
