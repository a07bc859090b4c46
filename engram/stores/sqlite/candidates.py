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
#: Entities are counted up to this many memories to pick the one to walk: past it, which of two
#: is walked matters less than the count would cost (~0.1 us an index entry, ~4 us a lookup).
_COUNTED = 5000


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

        Every such memory names one of the entities other than the most named one, so only those
        entities' memories are read, each counted through the primary key. With two entities the
        answer is the less named one's memories that name the other too, in its index order, so
        the walk stops after ``n``: at 1M memories, an entity named 13k times beside one named
        90k times took 71 ms to group and 1.8 ms to walk.
        """
        counts = self.entity_counts(user_id, ids, _COUNTED)
        ordered = sorted(ids, key=lambda e: counts[e])  # stable: ties keep the query's order
        walked, others = ordered[:-1], ordered[-1:] if len(ids) == 2 else ids
        if len(ids) == 2:
            rows = self._read(
                "SELECT e.memory_id, 2 FROM memory_entities e JOIN memories m ON m.rowid = e.memory_rowid "
                "WHERE e.user_id = ? AND e.entity = ? AND EXISTS (SELECT 1 FROM memory_entities o "
                "WHERE o.memory_rowid = e.memory_rowid AND o.entity = ?) "
                f"AND m.user_id = ? AND {where} ORDER BY e.importance DESC, e.created_at DESC, e.memory_id LIMIT ?",
                (user_id, walked[0], others[0], user_id, *params, n),
            )
        else:
            rows = self._read(
                "SELECT m.id, g.matches FROM (SELECT s.memory_rowid, (SELECT COUNT(*) FROM memory_entities o "
                f"WHERE o.memory_rowid = s.memory_rowid AND o.entity IN ({','.join('?' * len(others))})) AS matches "
                "FROM (SELECT DISTINCT memory_rowid FROM memory_entities WHERE user_id = ? "
                f"AND entity IN ({','.join('?' * len(walked))})) AS s) AS g "
                f"JOIN memories m ON m.rowid = g.memory_rowid WHERE g.matches > 1 AND m.user_id = ? AND {where} "
                "ORDER BY g.matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT ?",
                (*others, user_id, *walked, user_id, *params, n),
            )
        return [(r[0], float(r[1])) for r in rows]

    def entity_counts(self, user_id: str, entity_ids: Sequence[str], cap: int) -> dict[str, int]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or cap <= 0:
            return {e: 0 for e in ids}
        # One bounded walk of the (user, entity, ...) index per entity, in one statement.
        each = ("SELECT ?, (SELECT COUNT(*) FROM "
                "(SELECT 1 FROM memory_entities WHERE user_id = ? AND entity = ? LIMIT ?))")
        rows = self._read(" UNION ALL ".join([each] * len(ids)), [x for e in ids for x in (e, user_id, e, cap)])
        return {str(r[0]): int(r[1]) for r in rows}
