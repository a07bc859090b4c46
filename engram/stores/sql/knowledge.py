"""Entity relations and their ontology, the retrieval log, feedback and tuned weights, on either backend.

The retrieval log keeps each user's newest :data:`LOG_RETENTION` retrievals (and their feedback) by
default. Pruning walks that many index entries, so it runs on a store's first logged retrieval of a
user (short-lived processes such as the CLI prune too) and then every :data:`PRUNE_EVERY`-th: a
user's log holds at most retention + PRUNE_EVERY - 1 retrievals.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from engram.errors import ConfigError
from engram.model import Entity, EntityRelation, LoggedRetrieval, RelationType
from engram.stores.entity_names import with_aliases
from engram.stores.log_codec import decode_items, decode_settings, encode_items, item_token
from engram.stores.sql.base import SQLBase
from engram.stores.sql.dialect import Dialect, Tx

__all__ = [
    "LOG_RETENTION", "PRUNE_EVERY", "KnowledgeMixin", "check_log_retention", "forget_knowledge", "forget_memory_in_log",
    "prune_due", "prune_log",
]

LOG_RETENTION = 10_000
PRUNE_EVERY = 64
_MAX_RETENTION = 100_000_000
_LOG_COLUMNS = "l.id, l.query, l.category, l.strategy, l.created_at, l.items, l.settings"


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


def prune_log(d: Dialect, c: Tx, user_id: str, keep: int) -> None:
    """Drop a user's logged retrievals beyond the newest ``keep``, with their feedback."""
    # Only the (user_id, created_at) index is walked: sorting by id as well would read every row.
    row = d.run(
        c, f"SELECT created_at FROM {d.log} WHERE user_id = ? ORDER BY created_at DESC LIMIT 1 OFFSET ?",
        (user_id, keep),
    ).fetchone()
    if row is None:  # the common case: no more than keep
        return
    at = row[0]  # when the newest retrieval to drop was logged
    newer = d.run(c, f"SELECT count(*) FROM {d.log} WHERE user_id = ? AND created_at > ?", (user_id, at)).fetchone()
    # Of the retrievals logged in that same microsecond, the highest ids stay, as many as still fit.
    # Two index ranges, not one OR, which SQLite would answer by reading every row of the user; and
    # an unindexed id so the few ties are sorted rather than the primary key walked over all of them.
    dropped = (
        f"SELECT id FROM {d.log} WHERE user_id = ? AND created_at < ? UNION ALL SELECT * FROM ("
        f"SELECT id FROM {d.log} WHERE user_id = ? AND created_at = ? ORDER BY {d.unindexed('id')} DESC "
        f"LIMIT {d.no_limit} OFFSET ?) AS ties"
    )
    params = (user_id, user_id, at, user_id, at, keep - int(newer[0]))
    d.run(c, f"DELETE FROM {d.feedback} WHERE user_id = ? AND retrieval_id IN ({dropped})", params)
    d.run(c, f"DELETE FROM {d.log} WHERE user_id = ? AND id IN ({dropped})", params)


def forget_knowledge(d: Dialect, c: Tx, user_id: str) -> None:
    """Called inside forget_user's transaction."""
    for table in d.knowledge:
        d.run(c, f"DELETE FROM {table} WHERE user_id = ?", (user_id,))


def forget_memory_in_log(d: Dialect, c: Tx, user_id: str, memory_id: str) -> None:
    """Called inside delete's transaction: a deleted memory leaves no trace, so the logged retrievals
    that returned it (whose query may quote it) go, with their feedback."""
    token = item_token(memory_id)
    returned = f"SELECT id FROM {d.log} WHERE user_id = ? AND {d.position('items')} > 0"
    d.run(c, f"DELETE FROM {d.feedback} WHERE user_id = ? AND retrieval_id IN ({returned})", (user_id, user_id, token))
    d.run(c, f"DELETE FROM {d.log} WHERE user_id = ? AND {d.position('items')} > 0", (user_id, token))
    d.run(c, f"DELETE FROM {d.feedback} WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))


class KnowledgeMixin(SQLBase):
    """Store methods beyond memories themselves."""

    log_retention: int | None = LOG_RETENTION
    _log_writes: dict[str, int]  # per user: log writes since the last prune (see prune_due)

    # -- ontology and relations ---------------------------------------------------------------
    def count_entities(self, user_id: str, *, excluding: str | None = None) -> int:
        """The user's registered entities, other than ``excluding`` (the one an update would replace).

        From the primary key alone: add_entity checks its bound with this, not by loading every alias.
        """
        d = self.dialect
        rows = self._query(f"SELECT count(*) FROM {d.entities} WHERE user_id = ? AND id {d.distinct} ?",
                           (user_id, excluding))
        return int(rows[0][0])

    def entity_names(self, user_id: str, *, max_aliases: int) -> builtins.list[Entity]:
        """Every entity of the user, with aliases (in id order) until ``max_aliases`` are read: what an
        entity index holds, without decoding every alias list (:mod:`engram.stores.entity_names`)."""
        d = self.dialect
        rows = self._query(f"SELECT id, type, name FROM {d.entities} WHERE user_id = ? ORDER BY id", (user_id,))
        sql = (f"SELECT id, aliases FROM {d.entities} WHERE user_id = ? AND id > ? AND aliases <> {d.empty_names} "
               "ORDER BY id LIMIT ?")
        return with_aliases(
            rows, lambda after, n: [(r[0], d.read_names(r[1])) for r in self._query(sql, (user_id, after, n))],
            max_aliases,
        )

    def define_relation(self, user_id: str, relation: RelationType) -> None:
        d = self.dialect
        self._write(lambda c: d.run(
            c, d.insert_ignore(d.ontology, "user_id, from_type, relation, to_type, created_at"),
            (user_id, relation.from_type, relation.relation, relation.to_type, d.time(datetime.now(UTC))),
        ))

    def ontology(self, user_id: str) -> builtins.list[RelationType]:
        rows = self._query(
            f"SELECT from_type, relation, to_type FROM {self.dialect.ontology} WHERE user_id = ? "
            "ORDER BY from_type, relation, to_type",
            (user_id,),
        )
        return [RelationType(*r) for r in rows]

    def relate_entities(self, user_id: str, relation: EntityRelation) -> None:
        d = self.dialect
        self._write(lambda c: d.run(
            c, d.insert_ignore(d.relations, "user_id, from_id, relation, to_id, from_type, to_type, created_at"),
            (user_id, relation.from_id, relation.relation, relation.to_id, relation.from_type, relation.to_type,
             d.time(datetime.now(UTC))),
        ))

    def related_entities(
        self, user_id: str, entity_ids: Sequence[str], limit_per_entity: int
    ) -> builtins.list[EntityRelation]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or limit_per_entity <= 0:
            return []
        d = self.dialect
        named, params = d.in_("r.from_id", ids)
        # The join with the ontology is what "relations whose types the ontology allows" means.
        rows = self._query(
            "SELECT from_id, relation, to_id, from_type, to_type FROM ("
            " SELECT r.from_id, r.relation, r.to_id, r.from_type, r.to_type, ROW_NUMBER() OVER ("
            "  PARTITION BY r.from_id ORDER BY r.created_at DESC, r.relation, r.to_id) AS n"
            f" FROM {d.relations} r JOIN {d.ontology} o ON o.user_id = r.user_id"
            "  AND o.from_type = r.from_type AND o.relation = r.relation AND o.to_type = r.to_type"
            f" WHERE r.user_id = ? AND {named}"
            ") x WHERE n <= ? ORDER BY from_id, n",
            (user_id, *params, limit_per_entity),
        )
        return [EntityRelation(*r) for r in rows]

    # -- retrieval log and feedback -------------------------------------------------------------
    def log_retrieval(self, user_id: str, entry: LoggedRetrieval) -> None:
        keep = prune_due(self._log_writes, self.log_retention, user_id)
        d = self.dialect

        def op(c: Tx) -> None:
            d.run(
                c, d.insert_ignore(d.log, "user_id, id, query, category, strategy, items, settings, created_at"),
                (user_id, entry.id, entry.query, entry.category, entry.strategy, encode_items(entry.items),
                 json.dumps(dict(entry.settings), separators=(",", ":")), d.time(entry.created_at)),
            )
            if keep is not None:
                prune_log(d, c, user_id, keep)

        self._write(op)

    def _logged(self, row: Any) -> LoggedRetrieval:
        created = self.dialect.read_time(row[4])
        assert created is not None
        return LoggedRetrieval(
            id=row[0], query=row[1], category=row[2], strategy=row[3], created_at=created,
            items=decode_items(row[5]), settings=decode_settings(row[6]),
            used=tuple(sorted(self.dialect.read_names(row[7]))),
        )

    def _log_select(self) -> str:
        """The log's columns and the ids used, for one user; the first parameter is the user."""
        d = self.dialect
        # The user is a parameter, not l.user_id: Citus routes a correlated subquery in the SELECT
        # list to one shard only when it names the user itself (else it reads every shard).
        used = d.id_list("f.memory_id", f"FROM {d.feedback} f WHERE f.user_id = ? AND f.retrieval_id = l.id")
        return f"SELECT {_LOG_COLUMNS}, {used} FROM {d.log} l"

    def get_retrieval(self, user_id: str, retrieval_id: str) -> LoggedRetrieval | None:
        rows = self._query(
            f"{self._log_select()} WHERE l.user_id = ? AND l.id = ?", (user_id, user_id, retrieval_id)
        )
        return self._logged(rows[0]) if rows else None

    def record_feedback(self, user_id: str, retrieval_id: str, memory_ids: Sequence[str], at: datetime) -> int:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return 0
        d = self.dialect
        insert = d.insert_ignore(d.feedback, "user_id, retrieval_id, memory_id, used_at")

        def op(c: Tx) -> int:
            new = [m for m in ids if d.run(c, insert, (user_id, retrieval_id, m, d.time(at))).rowcount]
            if new:
                # The use count reinforcement reads (see engram.feedback): once per retrieval and memory.
                named, params = d.in_("id", new)
                d.run(
                    c, f"UPDATE {d.memories} SET access_count = access_count + 1, "
                    f"last_accessed_at = {d.greatest('COALESCE(last_accessed_at, ?)', '?')} "
                    f"WHERE user_id = ? AND {named}",
                    (d.time(at), d.time(at), user_id, *params),
                )
            return len(new)

        return self._write(op)

    def feedback_log(self, user_id: str, limit: int) -> builtins.list[LoggedRetrieval]:
        rows = self._query(
            f"{self._log_select()} WHERE l.user_id = ? AND EXISTS ("
            f" SELECT 1 FROM {self.dialect.feedback} f WHERE f.user_id = l.user_id AND f.retrieval_id = l.id)"
            " ORDER BY l.created_at DESC, l.id DESC LIMIT ?",
            (user_id, user_id, limit),
        )
        return [self._logged(r) for r in reversed(rows)]

    # -- tuned weights ----------------------------------------------------------------------------
    def save_weights(self, user_id: str, weights: Mapping[str, Mapping[str, float]]) -> None:
        d = self.dialect
        at = d.time(datetime.now(UTC))

        def op(c: Tx) -> None:
            d.run(c, f"DELETE FROM {d.weights} WHERE user_id = ?", (user_id,))
            d.run_many(
                c, f"INSERT INTO {d.weights} (user_id, strategy, weights, updated_at) VALUES (?, ?, ?, ?)",
                [(user_id, strategy, json.dumps(dict(w), sort_keys=True), at) for strategy, w in weights.items()],
            )

        self._write(op)

    def load_weights(self, user_id: str) -> dict[str, dict[str, float]]:
        rows = self._query(
            f"SELECT strategy, weights FROM {self.dialect.weights} WHERE user_id = ? ORDER BY strategy", (user_id,)
        )
        return {strategy: {k: float(v) for k, v in self.dialect.read_json(w).items()} for strategy, w in rows}
