"""SQLite's own entity candidates, from the ``memory_entities`` side table (keywords: :mod:`.keyword`)."""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from engram.model import Filters, Hit
from engram.stores.sql import candidates
from engram.stores.sql.rows import filter_sql
from engram.stores.sqlite.dialect import SQLITE

__all__ = ["CandidateMixin"]

T = TypeVar("T")
#: Up to this many memories (of every user) matching a substring search, or twice the memories
#: asked for, are read one by one; more are walked newest first.
FEW_SUBSTRING_MATCHES = 2000
_WALKED_ENTITIES = 8  # up to this many entities, by_entities walks each one's index range
#: Memories of one of two entities walked, at least and per result asked, before the next way.
_WALK_LEAST, _WALK_PER_RESULT = 600, 20


class CandidateMixin(candidates.CandidateMixin):
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore`, beside the shared ones."""

    substring_indexed = True  # the trigram index of engram.stores.sqlite.substrings

    if TYPE_CHECKING:
        _conn: sqlite3.Connection

        def _retry(self, op: Callable[[], T]) -> T: ...

    def _few_substring_matches(self, params: Sequence[Any], n: int) -> bool:
        # Reading a match costs ~10x walking past a row: at 100k memories a rare substring's walk
        # read every row (17 ms) where reading its matches took 0.2; a common one's ("acm", 8,300
        # matches) walk took 7 ms to its first 500 and 88 to 8,000, reading every match 25.
        [match] = params
        few = max(FEW_SUBSTRING_MATCHES, 2 * n)
        found = self._query("SELECT rowid FROM substring_fts WHERE substring_fts MATCH ? LIMIT ?", (match, few + 1))
        return len(found) <= few

    def by_entities(self, user_id: str, entity_ids: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]:
        """Memories naming the most of these entities first, then by importance, recency and id.

        Walks each entity's index range in that order (``memory_entities_order``) and stops after
        ``n`` memories pass the filters, where sorting every memory naming an entity cost ~5 ms at
        1,500 of them. Memories naming two or more of the entities, which outrank the rest, are
        found first (:meth:`_naming_several`).
        """
        ids = list(dict.fromkeys(entity_ids))
        if not ids or n <= 0:
            return []
        where, params = filter_sql(SQLITE, filters)
        if len(ids) > _WALKED_ENTITIES:  # one walk per entity would cost more than one sort
            rows = self._read(
                "SELECT m.id, COUNT(*) AS matches FROM memory_entities e JOIN memories m ON m.rowid = e.memory_rowid "
                f"WHERE e.user_id = ? AND e.entity IN ({','.join('?' * len(ids))}) AND m.user_id = ? AND {where} "
                "GROUP BY m.rowid ORDER BY matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT ?",
                (user_id, *ids, user_id, *params, n),
            )
            return [(r[0], float(r[1])) for r in rows]
        hits = self._naming_several(user_id, ids, n, where, params) if len(ids) > 1 else []
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

    def _naming_several(
        self, user_id: str, ids: list[str], n: int, where: str, params: Sequence[Any]
    ) -> builtins.list[Hit]:
        """Memories naming two or more of ``ids``, most first, then by importance, recency and id.

        With two entities these are either one's memories that name the other too, in its index
        order: each is walked in turn, a bounded stretch, and a walk that finds ``n`` or reaches the
        end of its entity's memories is the answer. At 1M memories, an entity named 13k times beside
        one named 90k times took 60-110 ms to group and ~2 ms to walk. Two entities rarely named
        together are grouped after both walks, as are three or more.
        """
        if len(ids) == 2:
            # Walked this far at most: SQLite reads a limited subquery whole.
            budget = max(_WALK_LEAST, _WALK_PER_RESULT * n)
            for walked, other in (ids, ids[::-1]):
                rows = self._read(
                    "SELECT * FROM (SELECT e.memory_id, 2 FROM (SELECT memory_rowid, importance, created_at, "
                    "memory_id FROM memory_entities WHERE user_id = ? AND entity = ? "
                    "ORDER BY importance DESC, created_at DESC, memory_id LIMIT ?) AS e "
                    "JOIN memories m ON m.rowid = e.memory_rowid WHERE EXISTS (SELECT 1 FROM memory_entities o "
                    "WHERE o.memory_rowid = e.memory_rowid AND o.entity = ?) AND m.user_id = ? AND "
                    f"{where} ORDER BY e.importance DESC, e.created_at DESC, e.memory_id LIMIT ?) "
                    # Last, how many memories name the walked entity, up to one past the budget.
                    "UNION ALL SELECT NULL, (SELECT COUNT(*) FROM (SELECT 1 FROM memory_entities "
                    "WHERE user_id = ? AND entity = ? LIMIT ?))",
                    (user_id, walked, budget, other, user_id, *params, n, user_id, walked, budget + 1),
                )
                *rows, (_, walked_size) = rows
                if len(rows) == n or walked_size <= budget:  # the first n found, or all there are
                    return [(r[0], float(r[1])) for r in rows]
        rows = self._read(
            "SELECT m.id, g.matches FROM (SELECT memory_rowid, COUNT(*) AS matches FROM memory_entities "
            f"WHERE user_id = ? AND entity IN ({','.join('?' * len(ids))}) GROUP BY memory_rowid "
            "HAVING COUNT(*) > 1) AS g "
            f"JOIN memories m ON m.rowid = g.memory_rowid WHERE m.user_id = ? AND {where} "
            "ORDER BY g.matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT ?",
            (user_id, *ids, user_id, *params, n),
        )
        return [(r[0], float(r[1])) for r in rows]

    def _entity_share_rows(self, user_id: str, ids: Sequence[str], newest: int) -> builtins.list[Any]:
        return self._read(  # the window from the (user, created_at) index, each member's entities by key
            "WITH w AS (SELECT rowid FROM memories WHERE user_id = ? AND created_at > coalesce("
            "(SELECT created_at FROM memories WHERE user_id = ? ORDER BY created_at DESC LIMIT 1 OFFSET ?), -9e18)) "
            "SELECT NULL, count(*) FROM w UNION ALL "
            "SELECT e.entity, count(*) FROM w JOIN memory_entities e ON e.memory_rowid = w.rowid "
            f"WHERE e.entity IN ({','.join('?' * len(ids))}) GROUP BY e.entity",
            (user_id, user_id, newest, *ids),
        )

    def entity_counts(self, user_id: str, entity_ids: Sequence[str], cap: int) -> dict[str, int]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or cap <= 0:
            return {e: 0 for e in ids}
        # One bounded walk of the (user, entity, ...) index per entity, in one statement.
        each = ("SELECT ?, (SELECT COUNT(*) FROM "
                "(SELECT 1 FROM memory_entities WHERE user_id = ? AND entity = ? LIMIT ?))")
        rows = self._read(" UNION ALL ".join([each] * len(ids)), [x for e in ids for x in (e, user_id, e, cap)])
        return {str(r[0]): int(r[1]) for r in rows}
