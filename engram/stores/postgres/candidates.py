"""PostgreSQL candidate primitives answered by plain SQL: time, entities, links and the ordered lists."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engram.model import Filters, Hit
from engram.stores.postgres import schema

__all__ = ["CandidateMixin"]

_EPOCH = "EXTRACT(EPOCH FROM {})::float8"


class CandidateMixin:
    """Methods of :class:`~engram.stores.postgres.store.PostgresStore`; each is one read."""

    if TYPE_CHECKING:

        def _read(self, query: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]: ...

    def _ordered(self, user_id: str, filters: Filters, extra: str, extra_params: Sequence[Any],
                 score: str, order: str, n: int) -> builtins.list[Hit]:
        where, params = schema.filter_sql(filters)
        rows = self._read(
            f"SELECT m.id, {score} FROM engram_memories m WHERE m.user_id = %s AND {where} {extra} "
            f"ORDER BY {order}, m.id LIMIT %s",
            (user_id, *params, *extra_params, n),
        )
        return [(r[0], float(r[1] or 0)) for r in rows]

    def by_time_range(
        self, user_id: str, start: datetime, end: datetime, n: int, filters: Filters
    ) -> builtins.list[Hit]:
        return self._ordered(
            user_id, filters, "AND m.created_at BETWEEN %s AND %s", (start, end),
            _EPOCH.format("m.created_at"), "m.created_at DESC", n,
        )

    def by_entities(self, user_id: str, entity_ids: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return []
        where, params = schema.filter_sql(filters)
        rows = self._read(
            "SELECT m.id, (SELECT count(DISTINCT e) FROM unnest(m.entities) e WHERE e = ANY(%s::text[])) AS matches "
            f"FROM engram_memories m WHERE m.user_id = %s AND m.entities && %s::text[] AND {where} "
            "ORDER BY matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT %s",
            (ids, user_id, ids, *params, n),
        )
        return [(r[0], float(r[1])) for r in rows]

    def session_neighbors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        ids = list(dict.fromkeys(memory_ids))[:1000]
        if not ids:
            return {}
        # The subqueries name the user rather than c.user_id so that Citus routes them to one shard.
        rows = self._read(
            "SELECT c.id, "
            "(SELECT m.id FROM engram_memories m WHERE m.user_id = %s AND m.session_id = c.session_id "
            " AND (m.created_at, m.id) < (c.created_at, c.id) ORDER BY m.created_at DESC, m.id DESC LIMIT 1), "
            "(SELECT m.id FROM engram_memories m WHERE m.user_id = %s AND m.session_id = c.session_id "
            " AND (m.created_at, m.id) > (c.created_at, c.id) ORDER BY m.created_at, m.id LIMIT 1) "
            "FROM engram_memories c WHERE c.user_id = %s AND c.session_id IS NOT NULL AND c.id = ANY(%s::text[])",
            (user_id, user_id, user_id, ids),
        )
        return {r[0]: tuple(x for x in (r[1], r[2]) if x is not None) for r in rows}

    def by_links(self, user_id: str, memory_ids: Sequence[str], n: int,
                 link_types: Iterable[str] | None) -> builtins.list[Hit]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        types = list(link_types) if link_types is not None else None
        type_sql = "AND l.type = ANY(%s::text[])" if types else ""
        type_params = [types] if types else []
        rows = self._read(
            "SELECT x.other, MAX(x.strength) AS s FROM ("
            " SELECT l.to_id AS other, l.strength FROM engram_links l"
            f" WHERE l.user_id = %s AND l.from_id = ANY(%s::text[]) {type_sql}"
            " UNION ALL"
            " SELECT l.from_id AS other, l.strength FROM engram_links l"
            f" WHERE l.user_id = %s AND l.to_id = ANY(%s::text[]) {type_sql}"
            ") x JOIN engram_memories m ON m.user_id = %s AND m.id = x.other "
            "GROUP BY x.other ORDER BY s DESC, x.other LIMIT %s",
            (user_id, ids, *type_params, user_id, ids, *type_params, user_id, n),
        )
        return [(r[0], float(r[1])) for r in rows if r[0] not in ids]

    def most_recent(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(user_id, filters, "", (), _EPOCH.format("m.created_at"), "m.created_at DESC", n)

    def most_recently_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        accessed = f"COALESCE({_EPOCH.format('m.last_accessed_at')}, 0)"
        return self._ordered(user_id, filters, "", (), accessed, f"{accessed} DESC, m.created_at DESC", n)

    def most_important(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(user_id, filters, "", (), "m.importance", "m.importance DESC, m.created_at DESC", n)

    def most_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(
            user_id, filters, "", (), "m.access_count", "m.access_count DESC, m.created_at DESC", n
        )
