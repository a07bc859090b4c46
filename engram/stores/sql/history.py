"""The audit log of changes to memories (``Store.history``), written in each change's own transaction.

Every insert, replace and delete of a memory adds one row to ``memory_history`` inside the
transaction that makes the change, so a crash never leaves a change without its row or a row
without its change. A replace is an ``update``, a ``supersede`` (status to ``superseded``) or a
``restore`` (``superseded`` back to ``active``); a delete's reinstatement of the versions it had
superseded is logged the same way.

Erasure. Deletion keeps its promise that a deleted memory leaves no text and no id behind (see
``tests/reliability/test_deletion.py``): rows are keyed by a hash of the user and memory id (the
id itself is never stored here), and a delete blanks the ``before``/``after`` text of every
earlier row of the memory before adding its ``delete`` row, which holds no text. What stays is that
a memory with that id changed and when, and which fields changed (names, never values).
An edit of a memory's text erases the replaced text at once, here as in the memory's own row and
index: the edit's row names the changed fields and holds the new text only, and the earlier rows'
text is blanked. History says what changed and when; it does not keep what an edit removed.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from engram.model import HistoryEvent, MemoryRecord, new_id
from engram.stores.sql.base import SQLBase
from engram.stores.sql.dialect import Dialect, Tx

__all__ = ["HistoryMixin", "added_fields", "blank_user", "changed_fields", "log_adds", "log_delete", "log_replace",
           "memory_key"]

_COLUMNS = "user_id, memory_key, id, event, at, content_before, content_after, fields"
#: Bookkeeping a read or feedback changes, not a change a caller made to the memory.
_UNTRACKED = frozenset({"access_count", "last_accessed_at"})
#: The fields an add's row names when set, in the order changed_fields gives them.
_LOGGED = tuple(sorted(set(MemoryRecord.__dataclass_fields__) - _UNTRACKED - {"id", "user_id"}))


def memory_key(user_id: str, memory_id: str) -> str:
    """What the log stores in place of a memory id: a deleted memory's id must not stay in the file."""
    raw = f"{user_id}\x00{memory_id}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def changed_fields(before: MemoryRecord | None, after: MemoryRecord | None) -> tuple[str, ...]:
    """The names of the fields that differ (every set field when one side is missing), sorted."""
    old = {} if before is None else before.to_dict()
    new = {} if after is None else after.to_dict()
    names = (set(old) | set(new)) - _UNTRACKED - {"id", "user_id"}
    return tuple(sorted(n for n in names if old.get(n) != new.get(n)))


def added_fields(record: MemoryRecord) -> tuple[str, ...]:
    """:func:`changed_fields` of a new record (every field it sets), without writing it out whole:
    an ``add_many`` logs one row a memory."""
    return tuple(name for name in _LOGGED if getattr(record, name) is not None)


def _row(d: Dialect, user_id: str, memory_id: str, event: str, at: datetime, before: MemoryRecord | None,
         after: MemoryRecord | None, text: bool = True, before_text: bool = True) -> tuple[Any, ...]:
    fields = added_fields(after) if before is None and after is not None else changed_fields(before, after)
    return (
        user_id, memory_key(user_id, memory_id), new_id(), event, d.time(at),
        before.content if before is not None and text and before_text else None,
        after.content if after is not None and text else None,
        json.dumps(list(fields)),
    )


def _insert(d: Dialect, c: Tx, rows: Iterable[Sequence[Any]]) -> None:
    d.run_many(c, f"INSERT INTO {d.history} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def log_adds(d: Dialect, c: Tx, records: Sequence[MemoryRecord]) -> None:
    """One ``add`` row per inserted record, inside the inserting transaction."""
    now = datetime.now(UTC)
    _insert(d, c, [_row(d, r.user_id, r.id, "add", now, None, r) for r in records])


def replace_event(before: MemoryRecord, after: MemoryRecord) -> str:
    if before.status != "superseded" and after.status == "superseded":
        return "supersede"
    if before.status == "superseded" and after.status == "active":
        return "restore"
    return "update"


def log_replace(d: Dialect, c: Tx, before: MemoryRecord, after: MemoryRecord) -> None:
    """The row of a replace (or a status change a delete made), inside its transaction.

    An edit of the text erases the replaced text everywhere, as it always has: the earlier rows'
    text is blanked and the new row holds only the text now stored."""
    edited = before.content != after.content
    if edited:
        _blank(d, c, after.user_id, after.id)
    _insert(d, c, [_row(d, after.user_id, after.id, replace_event(before, after), datetime.now(UTC), before, after,
                        before_text=not edited)])


def _blank(d: Dialect, c: Tx, user_id: str, memory_id: str) -> None:
    """Erase the text of every row logged for one memory (an edit or a delete erases it everywhere)."""
    d.run(c, f"UPDATE {d.history} SET content_before = NULL, content_after = NULL WHERE user_id = ? AND memory_key = ?",
          (user_id, memory_key(user_id, memory_id)))


def log_delete(d: Dialect, c: Tx, deleted: MemoryRecord) -> None:
    """Blank the text of the memory's earlier rows, then add its ``delete`` row (no text)."""
    _blank(d, c, deleted.user_id, deleted.id)
    _insert(d, c, [_row(d, deleted.user_id, deleted.id, "delete", datetime.now(UTC), deleted, None, text=False)])


def blank_user(d: Dialect, c: Tx, user_id: str) -> None:
    """Inside forget_user's transaction, before its rows are deleted: blank their text first.

    On SQLite, deleting many rows rebalances the table's pages, which moves rows not yet deleted
    and leaves a stale copy of each in the unallocated space of the page it left (secure_delete
    zeroes deleted cells, not those copies). Shrinking every row in place first (no rebalancing)
    means the rows moved about by the deletes carry no text.
    """
    d.run(c, f"UPDATE {d.history} SET content_before = NULL, content_after = NULL WHERE user_id = ?", (user_id,))


class HistoryMixin(SQLBase):
    """``Store.history``: one read of the user's rows for a memory, oldest first."""

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEvent]:
        d = self.dialect
        rows = self._query(
            f"SELECT event, at, content_before, content_after, fields FROM {d.history} "
            "WHERE user_id = ? AND memory_key = ? ORDER BY at, id",
            (user_id, memory_key(user_id, memory_id)),
        )
        out = []
        for event, at, before, after, fields in rows:
            when = d.read_time(at)
            assert when is not None
            names = json.loads(fields) if isinstance(fields, str | bytes) else fields
            out.append(HistoryEvent(memory_id, event, when, before, after, tuple(names)))
        return out
