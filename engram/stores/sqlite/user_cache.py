"""Users' in-memory indexes (vectors, keyword postings), least recently searched dropped first while
they hold more than a budget of bytes, each kept with the user's version it was read at.

Shared by :mod:`.vector_search` and :mod:`.keyword`; see :class:`UserIndexCache` for how an index
stays current with this process's writes and other processes'.
"""

from __future__ import annotations

import builtins
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

__all__ = ["Turns", "UserIndexCache"]


class _Sized(Protocol):
    @property
    def nbytes(self) -> int: ...

    def __len__(self) -> int: ...


#: What a cache holds per user: vectors in :mod:`.vector_search`, keyword postings in :mod:`.keyword`.
Index = TypeVar("Index", bound=_Sized)


class _Load:
    """A load in progress: who waits for it, and whether a write made what it read out of date."""

    __slots__ = ("done", "stale")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.stale = False


class UserIndexCache(Generic[Index]):
    """Users' indexes, least recently searched dropped first while they hold more than ``budget`` bytes.

    The user searched last always stays, even alone above the budget: dropping it would reload it
    on every search. Growth from writes is counted at the user's next search.

    Currency: the store's writes call :meth:`written` after they commit and update the index it
    returns. A write that commits while the user's index is being loaded may be missing from the
    rows the load read, and finds no index to update; it marks the load stale instead, and a stale
    index answers the search that loaded it (the write was concurrent with that search) but is not
    kept.

    Another process's commit (:meth:`foreign_write`) does not drop the indexes: each is kept with
    the user's version read with its rows, and is checked against the version now at its next use.
    Every process of a multi-worker server commits on each retrieval (its log), which would
    otherwise make every worker reload every user's vectors on every request.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[str, Index] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self._versions: dict[str, int | None] = {}  # None: changed here since; cannot be checked
        self._unchecked: set[str] = set()
        self._foreign = 0  # foreign commits noticed so far
        self._total = 0
        self._loads: dict[str, _Load] = {}
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._total

    def __contains__(self, user_id: str) -> bool:
        return user_id in self._entries and user_id not in self._unchecked

    def holds(self, user_id: str) -> bool:
        """Whether an index of the user is in memory, current or yet to be checked against their version."""
        return user_id in self._entries

    def users(self) -> builtins.list[str]:
        """Cached users, least recently searched first."""
        with self._lock:
            return list(self._entries)

    def get(self, user_id: str) -> Index | None:
        """The user's index if it is in memory and known current; never loads, never counts as a use."""
        with self._lock:
            return None if user_id in self._unchecked else self._entries.get(user_id)

    def peek(self, user_id: str) -> Index | None:
        """The user's index if one is in memory, current or not; never loads, never counts as a use."""
        with self._lock:
            return self._entries.get(user_id)

    def written(self, user_id: str) -> Index | None:
        """A write to this user committed here: the index to apply it to, if one is held."""
        with self._lock:
            load = self._loads.get(user_id)
            if load is not None:
                load.stale = True
            if user_id in self._entries:
                self._versions[user_id] = None
            return self._entries.get(user_id)

    def is_current(self, user_id: str, index: Index, version: Callable[[], int | None]) -> bool:
        """Whether ``index`` is the user's entry and holds every change to the user committed so far
        (``version`` reads the user's version now). A load of the user under way is waited for: an
        index is offered here by the load that holds it, before that load returns."""
        with self._lock:
            pending = self._loads.get(user_id)
        if pending is not None:
            pending.done.wait()
        with self._lock:
            if self._entries.get(user_id) is not index:
                return False
            if user_id not in self._unchecked:
                return True
            held = self._versions.get(user_id)
        return held is not None and version() == held

    def foreign_write(self) -> None:
        """Another connection committed: check each index against its user's version before using it."""
        with self._lock:
            self._foreign += 1
            self._unchecked.update(self._entries)

    def get_or_load(
        self, user_id: str, load: Callable[[], tuple[Index, int | None]], version: Callable[[], int | None],
        refresh: Callable[[Index], tuple[Index, int | None] | None] | None = None, *, force: bool = False,
    ) -> Index:
        """The user's index, loaded by ``load`` (with the user's version) when not held or out of
        date, once whoever else asks meanwhile; ``version`` reads the user's version now.

        ``refresh`` may bring an out-of-date index up to date in place instead (returning it and
        the version it is now current at, or None to have ``load`` run). It runs as a load does:
        a write committing meanwhile makes what it returns answer this search only. ``force``
        runs it on a held index even when known current (searches go on using it meanwhile)."""
        while True:
            held: int | None = None
            previous: Index | None = None  # held, but out of date or not known to be current
            with self._lock:
                index = self._entries.get(user_id)
                if index is not None and user_id in self._unchecked:
                    held = self._versions.get(user_id)
                    previous, index = index, None
            if held is not None:
                current = version()  # outside the lock: it reads SQL
                with self._lock:
                    index = self._entries.get(user_id)
                    if index is not None and user_id in self._unchecked:
                        if current == held:
                            self._unchecked.discard(user_id)
                        else:
                            previous = index
                            self._drop(user_id)
                            index = None
            if force and index is not None:  # known current: refreshed all the same
                previous, index = index, None
            with self._lock:
                if index is not None:
                    self._entries.move_to_end(user_id)
                    self._account(user_id, index)
                    return index
                pending = self._loads.get(user_id)
                if pending is None:
                    mine = self._loads[user_id] = _Load()
                    foreign = self._foreign
            if pending is None:
                break
            pending.done.wait()  # then look again: it is held, or was stale and is loaded anew
        try:
            found = None if refresh is None or previous is None else refresh(previous)
            index, loaded_version = found if found is not None else load()
        except BaseException:
            with self._lock:
                del self._loads[user_id]
                mine.done.set()
            raise
        # In the same hold of the lock as the load ends: a write landing between the two would
        # find neither the load to mark stale nor the index to apply itself to.
        with self._lock:
            del self._loads[user_id]
            if not mine.stale:
                self._entries[user_id] = index
                self._versions[user_id] = loaded_version
                self._unchecked.discard(user_id)
                if self._foreign != foreign:  # read before or after that commit: check at next use
                    self._unchecked.add(user_id)
                self._account(user_id, index)
            mine.done.set()
        return index

    def _account(self, user_id: str, index: Index) -> None:
        size = index.nbytes
        self._total += size - self._bytes.get(user_id, 0)
        self._bytes[user_id] = size
        while self._total > self.budget and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            self._drop(oldest)

    def _drop(self, user_id: str) -> None:
        if self._entries.pop(user_id, None) is not None:
            self._total -= self._bytes.pop(user_id)
        self._versions.pop(user_id, None)
        self._unchecked.discard(user_id)
        load = self._loads.get(user_id)
        if load is not None:
            load.stale = True

    def pop(self, user_id: str, default: None = None) -> None:
        """Forget the user's index (and any load of it in progress)."""
        with self._lock:
            self._drop(user_id)

    def clear(self) -> None:
        """Forget every index."""
        with self._lock:
            for user_id in [*self._entries, *self._loads]:
                self._drop(user_id)


class Turns:
    """This process's writes to a user (commit, then their changes to the held indexes) and catch-ups
    of the user's held indexes (read what was committed, then apply it in place) take turns: a
    delete landing between a catch-up's read and its apply would see its row put back. Users share
    one of :data:`STRIPES` locks by a hash of their id, so other users rarely wait."""

    STRIPES = 64

    def __init__(self) -> None:
        self._locks = [threading.RLock() for _ in range(self.STRIPES)]

    @contextmanager
    def of(self, *user_ids: str) -> Iterator[None]:
        stripes = sorted({zlib.crc32(u.encode("utf-8", "surrogatepass")) % self.STRIPES for u in user_ids})
        for i in stripes:  # in one order: two writes of several users never wait on each other
            self._locks[i].acquire()
        try:
            yield
        finally:
            for i in reversed(stripes):
                self._locks[i].release()
