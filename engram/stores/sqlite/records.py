"""Whole records read by this process, kept per user while the user's counters say they are current.

A retrieval reads 50-150 records by id (its candidates); at 10k memories a user's were ~2.5 ms of
a ~12 ms retrieval: a page read per row and a record built per row. Successive retrievals of a user
read many of the same ones, so :meth:`RecordsMixin.fetch` keeps them.

Currency: each fetch first reads the user's ``version`` and ``accessed`` counters
(:mod:`.versions`: triggers move them in the writing transaction, in any process, for every change
to the user's memories and for their access counts) and drops the user's records when either
moved; a user without counters is not cached. The counters are read before the rows, so a row kept
under a pair of counters is at least as new as they are. Reads inside this store's own write
transaction bypass the cache: their rows may yet be rolled back. This store's own deletes,
replacements and forgetting drop the user's records at once, so erased text is not held until the
user's next fetch.

Least recently fetched users are dropped first while the records held exceed the budget.
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram.model import MemoryRecord
from engram.stores.sql.reads import ReadMixin
from engram.stores.sqlite.versions import record_version
from engram.stores.untracked import untrack

__all__ = ["RECORD_CACHE_SHARE", "RecordCache", "RecordsMixin"]

#: The records' byte budget as a fraction of the vector cache's.
RECORD_CACHE_SHARE = 0.25
#: A record's bytes beyond its texts: the object, its datetimes, tuples and dict (measured ~600).
_PER_RECORD = 640
_COUNTERS = "SELECT version, accessed FROM user_versions WHERE user_id = ?"
#: A user without counters (not written since they exist, or forgotten): nothing tells a change.
_UNCOUNTED = (0, 0)


def record_bytes(record: MemoryRecord) -> int:
    """An estimate of the memory a record holds."""
    texts = (record.content, record.subject, record.predicate, record.object, record.trigger, record.action)
    return _PER_RECORD + sum(len(t) for t in texts if t) + 64 * (len(record.tags) + len(record.entities))


class RecordCache:
    """Users' records by id, each user's kept with the counters they were read under."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._users: OrderedDict[str, tuple[tuple[int, int], dict[str, MemoryRecord]]] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self._total = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._total

    def lookup(
        self, user_id: str, counters: tuple[int, int], memory_ids: Sequence[str]
    ) -> tuple[dict[str, MemoryRecord], builtins.list[str]]:
        """The user's records among ``memory_ids`` read under ``counters``, and the ids not held;
        records read under other counters are dropped."""
        with self._lock:
            entry = self._users.get(user_id)
            if entry is not None and entry[0] != counters:
                self._drop(user_id)
                entry = None
            if entry is None:
                return {}, list(memory_ids)
            self._users.move_to_end(user_id)
            records = entry[1]
            found = {i: r for i in memory_ids if (r := records.get(i)) is not None}
            return found, [i for i in memory_ids if i not in found]

    def keep(self, user_id: str, counters: tuple[int, int], records: Sequence[MemoryRecord]) -> None:
        """Keep records read after ``counters`` were."""
        if not records:
            return
        with self._lock:
            entry = self._users.get(user_id)
            if entry is None or entry[0] != counters:
                self._drop(user_id)
                entry = self._users[user_id] = (counters, {})
            added = sum(record_bytes(r) for r in records if r.id not in entry[1])
            # Held for long: out of the collector's full walks (engram.stores.untracked).
            untrack(records)
            entry[1].update((r.id, r) for r in records)
            self._users.move_to_end(user_id)
            self._bytes[user_id] = self._bytes.get(user_id, 0) + added
            self._total += added
            while self._total > self.budget and self._users:
                self._drop(next(iter(self._users)))

    def pop(self, user_id: str) -> None:
        with self._lock:
            self._drop(user_id)

    def clear(self) -> None:
        with self._lock:
            for user_id in list(self._users):
                self._drop(user_id)

    def _drop(self, user_id: str) -> None:
        if self._users.pop(user_id, None) is not None:
            self._total -= self._bytes.pop(user_id, 0)


class RecordsMixin(ReadMixin):
    """``fetch`` of :class:`~engram.stores.sqlite.store.SQLiteStore`, through its record cache."""

    _records: RecordCache

    if TYPE_CHECKING:
        _lock_owner: int | None

        def _read(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[Any]: ...

    def _init_records(self, vector_budget: int) -> None:
        self._records = RecordCache(int(vector_budget * RECORD_CACHE_SHARE))

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        if self._lock_owner == threading.get_ident():  # inside a write transaction (module doc)
            return super().fetch(user_id, memory_ids)
        ids = list(dict.fromkeys(memory_ids))
        counters = record_version(self._read(_COUNTERS, (user_id,)))
        if counters == _UNCOUNTED:
            return super().fetch(user_id, ids)
        held, missing = self._records.lookup(user_id, counters, ids)
        if missing:
            read = super().fetch(user_id, missing)
            self._records.keep(user_id, counters, read)
            held.update((r.id, r) for r in read)
        return [held[i] for i in ids if i in held]
