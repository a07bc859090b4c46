"""Writes both backends make alike: deletes (with the fact versions they reinstate), forgetting a
user, access counts, links and entities. Inserting and replacing memories stays with each backend,
which also keeps its own keyword index and vectors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engram.errors import ValidationError
from engram.ingest import truth
from engram.model import Entity, Link, MemoryRecord
from engram.stores.sql.base import SQLBase
from engram.stores.sql.dialect import Dialect, Tx
from engram.stores.sql.history import blank_user, log_delete, log_replace
from engram.stores.sql.knowledge import forget_knowledge, forget_memory_in_log
from engram.stores.sql.rows import COLUMNS, row_to_record

__all__ = ["WriteMixin", "delete_one", "insert_link"]

_LINK_COLUMNS = ("user_id", "from_id", "to_id", "type", "strength", "created_at")
_LINK_KEY = ("user_id", "from_id", "to_id", "type")


def insert_link(d: Dialect, c: Tx, user_id: str, link: Link) -> None:
    """As ``add_link``, inside the caller's transaction: a link of the same ends and type is replaced."""
    d.run(c, d.upsert(d.links, _LINK_COLUMNS, _LINK_KEY),
          (user_id, link.from_id, link.to_id, link.type, link.strength, d.time(datetime.now(UTC))))


def _supersedes(d: Dialect, c: Tx, user_id: str, memory_id: str, near: str, far: str) -> list[MemoryRecord]:
    """The memories at the ``far`` end of ``supersedes`` links whose ``near`` end is ``memory_id``."""
    rows = d.run(
        c, f"SELECT {COLUMNS} FROM {d.memories} WHERE user_id = ? AND id IN "
        f"(SELECT {far} FROM {d.links} WHERE user_id = ? AND {near} = ? AND type = 'supersedes')",
        (user_id, user_id, memory_id),
    ).fetchall()
    return [row_to_record(d, r) for r in rows]


def delete_one(d: Dialect, c: Tx, user_id: str, memory_id: str) -> list[tuple[Any, str]] | None:
    """Delete a memory with its links and logged retrievals inside the caller's transaction, and walk
    again the fact versions it superseded (:func:`engram.ingest.truth.reinstate`).

    None when there was no such memory, else (row key, new status) of each memory whose status changed.
    """
    found = d.run(
        c, f"SELECT {COLUMNS} FROM {d.memories} WHERE user_id = ? AND id = ?", (user_id, memory_id)
    ).fetchone()
    if found is None:
        return None
    deleted = row_to_record(d, found)
    superseded = [] if deleted.kind != "fact" else _supersedes(d, c, user_id, memory_id, "from_id", "to_id")
    changed, pairs = ([], []) if deleted.kind != "fact" else truth.reinstate(
        deleted, superseded, _supersedes(d, c, user_id, memory_id, "to_id", "from_id"),
    )
    log_delete(d, c, deleted)
    was = {r.id: r for r in superseded}
    d.run(c, f"DELETE FROM {d.memories} WHERE user_id = ? AND id = ?", (user_id, memory_id))
    d.run(c, f"DELETE FROM {d.links} WHERE user_id = ? AND (from_id = ? OR to_id = ?)", (user_id, memory_id, memory_id))
    forget_memory_in_log(d, c, user_id, memory_id)
    statuses = []
    for record in changed:
        # Only status and valid_to change: an UPDATE leaves the keyword index alone.
        updated = d.run(
            c, f"UPDATE {d.memories} SET status = ?, valid_to = ? WHERE user_id = ? AND id = ? RETURNING {d.row_key}",
            (record.status, d.time(record.valid_to), user_id, record.id),
        ).fetchone()
        statuses.append((updated[0], record.status))
        log_replace(d, c, was[record.id], record)
    for pair in pairs:
        for link_type in ("supersedes", "contradicts"):
            insert_link(d, c, user_id, Link(pair.newer.id, pair.older.id, link_type, 1.0))
    return statuses


class WriteMixin(SQLBase):
    """Store methods; each is one write transaction. A backend hooks in what it keeps beside the rows."""

    def _erase(self, c: Tx) -> None:
        """Inside a transaction that deleted text: what the backend does so that it is gone."""

    def _deleted(self, user_id: str, gone: Sequence[str], statuses: Sequence[tuple[Any, str]]) -> None:
        """After a delete committed: ``gone`` ids, and (row key, status) of memories reinstated or retired."""

    def _forgotten(self, c: Tx, user_id: str) -> None:
        """Inside forget_user's transaction, after the shared tables were emptied of the user."""

    def _entities_set(self, c: Tx, row: Sequence[Any], user_id: str, memory_id: str, ids: Sequence[str]) -> None:
        """Inside set_entities' transaction, after a memory's ids changed; ``row`` is its row key,
        importance and creation time as stored."""

    def delete(self, user_id: str, memory_id: str) -> bool:
        """Remove the row, its links and logged retrievals; the fact versions it superseded are walked
        again (:func:`engram.ingest.truth.reinstate`) in the same transaction."""
        return self.delete_many(user_id, [memory_id]) == 1

    def delete_many(self, user_id: str, memory_ids: Sequence[str]) -> int:
        """``delete`` for several memories in one transaction (a document's passages); returns how
        many there were."""
        d = self.dialect

        def op(c: Tx) -> tuple[list[str], list[tuple[Any, str]]]:
            gone: list[str] = []
            statuses: list[tuple[Any, str]] = []
            for memory_id in dict.fromkeys(memory_ids):
                changed = delete_one(d, c, user_id, memory_id)
                if changed is not None:
                    gone.append(memory_id)
                    statuses += changed
            if gone:
                self._erase(c)
            return gone, statuses

        gone, statuses = self._write(op)
        if gone:
            self._deleted(user_id, gone, statuses)
        return len(gone)

    def forget_user(self, user_id: str) -> int:
        d = self.dialect

        def op(c: Tx) -> int:
            count = d.run(c, f"DELETE FROM {d.memories} WHERE user_id = ?", (user_id,)).rowcount
            d.run(c, f"DELETE FROM {d.links} WHERE user_id = ?", (user_id,))
            d.run(c, f"DELETE FROM {d.entities} WHERE user_id = ?", (user_id,))
            blank_user(d, c, user_id)
            forget_knowledge(d, c, user_id)
            self._forgotten(c, user_id)
            return int(count)

        return self._write(op)

    def record_access(self, user_id: str, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        d = self.dialect
        named, params = d.in_("id", list(dict.fromkeys(memory_ids)))
        self._write(lambda c: d.run(
            c, f"UPDATE {d.memories} SET access_count = access_count + 1, last_accessed_at = ? "
            f"WHERE user_id = ? AND {named}", (d.time(at), user_id, *params),
        ))

    def add_link(self, user_id: str, link: Link) -> None:
        self._write(lambda c: insert_link(self.dialect, c, user_id, link))

    def set_entities(self, user_id: str, changes: Sequence[tuple[str, str, Sequence[str]]]) -> int:
        """Set the entity ids of the user's memories named in ``changes`` ((memory id, content hash,
        ids)), each only while its text is the one hashed, in one transaction; returns how many were
        set. Nothing else of a memory changes and no history row is written: the ids are derived
        from its text, which is unchanged."""
        d = self.dialect
        wanted: dict[str, tuple[str, tuple[str, ...]]] = {}
        for memory_id, text_hash, ids in changes:
            if isinstance(ids, str) or not all(isinstance(e, str) for e in ids):
                raise ValidationError("entities", "must be a list of entity ids")
            wanted[memory_id] = (text_hash, tuple(dict.fromkeys(ids)))

        def op(c: Tx) -> int:
            found = 0
            for memory_id, (text_hash, ids) in wanted.items():
                row = d.run(c, f"SELECT {d.row_key}, importance, created_at FROM {d.memories} "
                               "WHERE user_id = ? AND id = ? AND content_hash = ?",
                            (user_id, memory_id, text_hash)).fetchone()
                if row is None:
                    continue
                found += 1
                d.run(c, f"UPDATE {d.memories} SET entities = ? WHERE user_id = ? AND id = ?",
                      (d.names(list(ids)), user_id, memory_id))
                self._entities_set(c, row, user_id, memory_id, ids)
            return found

        return self._write(op) if wanted else 0

    def upsert_entity(self, user_id: str, entity: Entity) -> None:
        d = self.dialect
        self._write(lambda c: d.run(
            c, d.upsert(d.entities, ("user_id", "id", "type", "name", "aliases"), ("user_id", "id")),
            (user_id, entity.id, entity.type, entity.name, d.names(entity.aliases)),
        ))
