"""SQLite candidate primitives answered by SQL: keywords, time, entities, links and the ordered lists."""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from engram.model import Filters, Hit
from engram.stores.sqlite.keyword import KeywordCache, keyword_hits
from engram.stores.sqlite.rows import filter_sql, to_us

__all__ = ["CandidateMixin"]

T = TypeVar("T")
_WALKED_ENTITIES = 8  # up to this many entities, by_entities walks each one's index range


class CandidateMixin:
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore`; each is one read."""

    postings_budget: int
    _keywords: KeywordCache

    if TYPE_CHECKING:
        _conn: sqlite3.Connection

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

        def _retry(self, op: Callable[[], T]) -> T: ...

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
        """Memories naming the most of these entities first, then by importance, recency and id.

        Walks each entity's index range in that order (``memory_entities_order``) and stops after
        ``n`` memories pass the filters, where sorting every memory naming an entity cost ~5 ms at
        1,500 of them. Memories naming two or more of the entities, which outrank the rest, are
        counted first from the index alone.
        """
        ids = list(dict.fromkeys(entity_ids))
        if not ids or n <= 0:
            return []
        where, params = filter_sql(filters)
        if len(ids) > _WALKED_ENTITIES:  # one walk per entity would cost more than one sort
            rows = self._read(
                "SELECT m.id, COUNT(*) AS matches FROM memory_entities e JOIN memories m ON m.rowid = e.memory_rowid "
                f"WHERE e.user_id = ? AND e.entity IN ({','.join('?' * len(ids))}) AND m.user_id = ? AND {where} "
                "GROUP BY m.rowid ORDER BY matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT ?",
                (user_id, *ids, user_id, *params, n),
            )
            return [(r[0], float(r[1])) for r in rows]
        hits: builtins.list[Hit] = []
        if len(ids) > 1:
            marks = ",".join("?" * len(ids))
            rows = self._read(
                "SELECT m.id, g.matches FROM (SELECT memory_rowid, COUNT(*) AS matches FROM memory_entities "
                f"WHERE user_id = ? AND entity IN ({marks}) GROUP BY memory_rowid HAVING COUNT(*) > 1) AS g "
                f"JOIN memories m ON m.rowid = g.memory_rowid WHERE m.user_id = ? AND {where} "
                "ORDER BY g.matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT ?",
                (user_id, *ids, user_id, *params, n),
            )
            hits = [(r[0], float(r[1])) for r in rows]
        single: builtins.list[tuple[float, int, str]] = []
        for entity in ids if len(hits) < n else ():
            others = [e for e in ids if e != entity]
            # A memory naming one of the other entities too was counted above.
            alone = (
                "AND NOT EXISTS (SELECT 1 FROM memory_entities o WHERE o.memory_rowid = e.memory_rowid "
                f"AND o.entity IN ({','.join('?' * len(others))})) " if others else ""
            )
            rows = self._read(
                "SELECT e.importance, e.created_at, e.memory_id FROM memory_entities e "
                "JOIN memories m ON m.rowid = e.memory_rowid "
                f"WHERE e.user_id = ? AND e.entity = ? {alone}AND m.user_id = ? AND {where} "
                "ORDER BY e.importance DESC, e.created_at DESC, e.memory_id LIMIT ?",
                (user_id, entity, *others, user_id, *params, n - len(hits)),
            )
            single.extend((float(r[0]), int(r[1]), str(r[2])) for r in rows)
        single.sort(key=lambda r: (-r[0], -r[1], r[2]))
        return hits + [(memory_id, 1.0) for _, _, memory_id in single[: n - len(hits)]]

    def session_neighbors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        ids = list(dict.fromkeys(memory_ids))[:1000]
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        # Row values make each neighbour one step in memories_user_session_time; "+user_id" keeps
        # the candidates on the id index instead of walking the user's sessions.
        rows = self._read(
            "SELECT c.id, "
            "(SELECT m.id FROM memories m WHERE m.user_id = c.user_id AND m.session_id = c.session_id "
            " AND (m.created_at, m.id) < (c.created_at, c.id) ORDER BY m.created_at DESC, m.id DESC LIMIT 1), "
            "(SELECT m.id FROM memories m WHERE m.user_id = c.user_id AND m.session_id = c.session_id "
            " AND (m.created_at, m.id) > (c.created_at, c.id) ORDER BY m.created_at, m.id LIMIT 1) "
            f"FROM memories c WHERE +c.user_id = ? AND c.session_id IS NOT NULL AND c.id IN ({marks})",
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

    def keyword_search(self, user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._retry(
            lambda: keyword_hits(self._conn, user_id, text, n, filters, self.postings_budget, self._keywords)
        )
