"""Reads of one user's memories, links and entities, and the file's statistics."""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.model import Entity, Filters, Link, MemoryRecord
from engram.stores.sqlite.rows import COLUMNS, filter_sql, row_to_record

__all__ = ["ReadMixin"]


class ReadMixin:
    """Methods of :class:`~engram.stores.sqlite.store.SQLiteStore`; each is one read."""

    path: str

    if TYPE_CHECKING:

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def get(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        rows = self._read(f"SELECT {COLUMNS} FROM memories WHERE id = ? AND user_id = ?", (memory_id, user_id))
        return row_to_record(rows[0]) if rows else None

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> list[MemoryRecord]:
        found: dict[str, MemoryRecord] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self._read(
                # "+user_id" keeps the planner on the id index instead of scanning the user's rows.
                f"SELECT {COLUMNS} FROM memories WHERE +user_id = ? AND id IN ({','.join('?' * len(chunk))})",
                (user_id, *chunk),
            )
            for row in rows:
                found[row[0]] = row_to_record(row)
        return [found[i] for i in ids if i in found]

    def list(self, user_id: str, filters: Filters, *, limit: int = 100, offset: int = 0) -> builtins.list[MemoryRecord]:
        where, params = filter_sql(filters)
        rows = self._read(
            f"SELECT {COLUMNS} FROM memories m WHERE m.user_id = ? AND {where} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
            (user_id, *params, limit, offset),
        )
        return [row_to_record(r) for r in rows]

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self._read("SELECT COUNT(*) FROM memories")[0][0])
        return int(self._read("SELECT COUNT(*) FROM memories WHERE user_id = ?", (user_id,))[0][0])

    def user_exists(self, user_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM memories WHERE user_id = ? LIMIT 1", (user_id,)))

    def users(self) -> builtins.list[str]:
        rows = self._read(
            "SELECT user_id FROM memories UNION SELECT user_id FROM entities UNION SELECT user_id FROM links ORDER BY 1"
        )
        return [r[0] for r in rows]

    def links(self, user_id: str, memory_id: str) -> builtins.list[Link]:
        rows = self._read(
            "SELECT from_id, to_id, type, strength FROM links WHERE user_id = ? AND (from_id = ? OR to_id = ?) "
            "ORDER BY type, from_id, to_id",
            (user_id, memory_id, memory_id),
        )
        return [Link(r[0], r[1], r[2], float(r[3])) for r in rows]

    def entities(self, user_id: str) -> builtins.list[Entity]:
        rows = self._read("SELECT id, type, name, aliases FROM entities WHERE user_id = ? ORDER BY id", (user_id,))
        return [Entity(r[0], r[1], r[2], tuple(json.loads(r[3]))) for r in rows]

    def stats(self) -> Mapping[str, Any]:
        rows = self._read("SELECT kind, COUNT(*) FROM memories GROUP BY kind ORDER BY kind")
        users = self._read("SELECT COUNT(DISTINCT user_id) FROM memories")[0][0]
        meta = dict(self._read("SELECT key, value FROM meta"))
        size = Path(self.path).stat().st_size if self.path != ":memory:" else 0
        return {
            "backend": "sqlite",
            "path": self.path,
            "memories": sum(n for _, n in rows),
            "users": int(users),
            "by_kind": {k: n for k, n in rows},
            "model_id": meta.get("model_id"),
            "bytes": size,
        }
