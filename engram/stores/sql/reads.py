"""Reads of one user's memories, links and entities, on either backend."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from engram.model import Entity, Filters, Link, MemoryRecord
from engram.stores.sql.base import SQLBase, chunks
from engram.stores.sql.rows import COLUMNS, filter_sql, row_to_record

__all__ = ["ReadMixin"]


class ReadMixin(SQLBase):
    """Store methods; each is one read (``fetch`` one per :attr:`Dialect.chunk` ids)."""

    def get(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        d = self.dialect
        rows = self._query(f"SELECT {COLUMNS} FROM {d.memories} WHERE user_id = ? AND id = ?", (user_id, memory_id))
        return row_to_record(d, rows[0]) if rows else None

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> list[MemoryRecord]:
        d = self.dialect
        found: dict[str, MemoryRecord] = {}
        ids = list(dict.fromkeys(memory_ids))
        for chunk in chunks(ids, d.chunk):
            named, params = d.in_("id", chunk)
            # An unindexed user_id keeps SQLite's planner on the id index instead of scanning the user's rows.
            rows = self._query(
                f"SELECT {COLUMNS} FROM {d.memories} WHERE {d.unindexed('user_id')} = ? AND {named}", (user_id, *params)
            )
            for row in rows:
                found[row[0]] = row_to_record(d, row)
        return [found[i] for i in ids if i in found]

    def list(self, user_id: str, filters: Filters, *, limit: int = 100, offset: int = 0) -> builtins.list[MemoryRecord]:
        d = self.dialect
        where, params = filter_sql(d, filters)
        rows = self._query(
            f"SELECT {COLUMNS} FROM {d.memories} m WHERE m.user_id = ? AND {where} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
            (user_id, *params, limit, offset),
        )
        return [row_to_record(d, r) for r in rows]

    def count(self, user_id: str | None = None) -> int:
        d = self.dialect
        if user_id is None:
            return int(self._query(f"SELECT count(*) FROM {d.memories}")[0][0])
        return int(self._query(f"SELECT count(*) FROM {d.memories} WHERE user_id = ?", (user_id,))[0][0])

    def user_exists(self, user_id: str) -> bool:
        return bool(self._query(f"SELECT 1 FROM {self.dialect.memories} WHERE user_id = ? LIMIT 1", (user_id,)))

    def users(self) -> builtins.list[str]:
        """Every user with memories, entities or links, sorted (for copy_store)."""
        d = self.dialect
        rows = self._query(
            f"SELECT user_id FROM {d.memories} UNION SELECT user_id FROM {d.entities} "
            f"UNION SELECT user_id FROM {d.links} ORDER BY 1"
        )
        return [r[0] for r in rows]

    def links(self, user_id: str, memory_id: str) -> builtins.list[Link]:
        rows = self._query(
            f"SELECT from_id, to_id, type, strength FROM {self.dialect.links} "
            "WHERE user_id = ? AND (from_id = ? OR to_id = ?) ORDER BY type, from_id, to_id",
            (user_id, memory_id, memory_id),
        )
        return [Link(r[0], r[1], r[2], float(r[3])) for r in rows]

    def entities(self, user_id: str) -> builtins.list[Entity]:
        d = self.dialect
        rows = self._query(
            f"SELECT id, type, name, aliases FROM {d.entities} WHERE user_id = ? ORDER BY id", (user_id,)
        )
        return [Entity(r[0], r[1], r[2], d.read_names(r[3])) for r in rows]
