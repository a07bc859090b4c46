"""SQLite candidate primitives answered by plain SQL: time, entities, links and the ordered lists."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engram.model import Filters, Hit
from engram.stores.sqlite.rows import filter_sql, to_us

__all__ = ["CandidateMixin"]


class CandidateMixin:
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore`; each is one read."""

    if TYPE_CHECKING:

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def _ordered(self, user_id: str, filters: Filters, extra: str, extra_params: Sequence[Any],
                 score: str, order: str, n: int) -> builtins.list[Hit]:
        where, params = filter_sql(filters)
        rows = self._read(
            f"SELECT m.id, {score} FROM memories m WHERE m.user_id = ? AND {where} {extra} "
            f"ORDER BY {order}, m.id LIMIT ?",
            (user_id, *params, *extra_params, n),
        )
        return [(r[0], float(r[1] or 0)) for r in rows]

    def by_time_range(
        self, user_id: str, start: datetime, end: datetime, n: int, filters: Filters
    ) -> builtins.list[Hit]:
        return self._ordered(
            user_id, filters, "AND m.created_at BETWEEN ? AND ?", (to_us(start), to_us(end)),
            "m.created_at / 1e6", "m.created_at DESC", n,
        )

    def by_entities(self, user_id: str, entity_ids: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return []
        where, params = filter_sql(filters)
        rows = self._read(
            "SELECT m.id, COUNT(DISTINCT e.entity) AS matches FROM memory_entities e "
            "JOIN memories m ON m.rowid = e.memory_rowid "
            f"WHERE e.user_id = ? AND e.entity IN ({','.join('?' * len(ids))}) AND m.user_id = ? AND {where} "
            "GROUP BY m.rowid ORDER BY matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT ?",
            (user_id, *ids, user_id, *params, n),
        )
        return [(r[0], float(r[1])) for r in rows]

    def session_neighbors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        ids = list(dict.fromkeys(memory_ids))[:1000]
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._read(
            "SELECT c.id, "
            "(SELECT m.id FROM memories m WHERE m.user_id = c.user_id AND m.session_id = c.session_id "
            " AND (m.created_at < c.created_at OR (m.created_at = c.created_at AND m.id < c.id)) "
            " ORDER BY m.created_at DESC, m.id DESC LIMIT 1), "
            "(SELECT m.id FROM memories m WHERE m.user_id = c.user_id AND m.session_id = c.session_id "
            " AND (m.created_at > c.created_at OR (m.created_at = c.created_at AND m.id > c.id)) "
            " ORDER BY m.created_at, m.id LIMIT 1) "
            f"FROM memories c WHERE c.user_id = ? AND c.session_id IS NOT NULL AND c.id IN ({marks})",
            (user_id, *ids),
        )
        return {r[0]: tuple(x for x in (r[1], r[2]) if x is not None) for r in rows}

    def by_links(self, user_id: str, memory_ids: Sequence[str], n: int,
                 link_types: Iterable[str] | None) -> builtins.list[Hit]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        types = list(link_types) if link_types is not None else None
        type_sql = f"AND l.type IN ({','.join('?' * len(types))})" if types else ""
        rows = self._read(
            "SELECT other, MAX(strength) AS s FROM ("
            " SELECT l.to_id AS other, l.strength FROM links l"
            f" WHERE l.user_id = ? AND l.from_id IN ({marks}) {type_sql}"
            " UNION ALL"
            " SELECT l.from_id AS other, l.strength FROM links l"
            f" WHERE l.user_id = ? AND l.to_id IN ({marks}) {type_sql}"
            ") JOIN memories m ON m.id = other AND m.user_id = ? "
            "GROUP BY other ORDER BY s DESC, other LIMIT ?",
            (user_id, *ids, *(types or []), user_id, *ids, *(types or []), user_id, n),
        )
        return [(r[0], float(r[1])) for r in rows if r[0] not in ids]

    def most_recent(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(user_id, filters, "", (), "m.created_at / 1e6", "m.created_at DESC", n)

    def most_recently_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(
            user_id, filters, "", (), "COALESCE(m.last_accessed_at, 0) / 1e6",
            "COALESCE(m.last_accessed_at, 0) DESC, m.created_at DESC", n,
        )

    def most_important(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(user_id, filters, "", (), "m.importance", "m.importance DESC, m.created_at DESC", n)

    def most_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(
            user_id, filters, "", (), "m.access_count", "m.access_count DESC, m.created_at DESC", n
        )
