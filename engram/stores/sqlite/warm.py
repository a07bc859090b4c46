"""Loading the largest users' indexes before the first question (``engram serve --warm-users N``).

A process meets every user cold. At a million memories of one user, a new process's first
retrieval took 0.9 s with the files in the operating system's cache, building the index over the
saved vectors, and 3.0 s without them (after a reboot; once past the 5 s deadline, which answers
with no memories). :meth:`WarmMixin.warm` builds the largest users' indexes and reads their saved
files through once, so the OS holds their pages: after a reboot the first retrieval then took
0.43 s and the next 0.08 s (0.13 s and 0.03 s with the whole database read too, which this does
not do: the database is every user's, and may not fit the machine's memory).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.config import MAX_WARM_USERS
from engram.errors import ConfigError
from engram.stores.sqlite.saved import user_files

__all__ = ["WarmMixin", "read_through"]

_CHUNK = 8 << 20


class WarmMixin:
    """``warm`` of :class:`~engram.stores.sqlite.store.SQLiteStore`."""

    if TYPE_CHECKING:
        path: str

        from engram.stores.postings import Postings
        from engram.stores.sqlite.user_cache import UserIndexCache
        from engram.stores.sqlite.vectors import ExactIndex

        _indexes: UserIndexCache[ExactIndex]
        _postings: UserIndexCache[Postings]

        def _read(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[Any]: ...
        def _index(self, user_id: str) -> ExactIndex: ...
        def _current_postings(self, user_id: str) -> Postings: ...

    def warm(self, users: int) -> builtins.list[str]:
        """Load the vector index and keyword postings of up to ``users`` users, those with the most
        memories first, while the caches' budgets hold them; the users loaded, in that order.

        Stops before a user whose vectors would not fit beside those already held: the caches
        drop the least recently used first, so loading past the budget would only push out the
        largest users loaded a moment before."""
        if isinstance(users, bool) or not isinstance(users, int) or not 0 <= users <= MAX_WARM_USERS:
            raise ConfigError("warm_users", f"must be an integer in [0, {MAX_WARM_USERS}], got {users!r}")
        if users == 0:
            return []
        # keyword_stats counts each user's indexed memories, kept by the writes' triggers.
        largest = self._read("SELECT user_id, docs FROM keyword_stats ORDER BY docs DESC, user_id LIMIT ?", (users,))
        warmed: builtins.list[str] = []
        held = 0  # memories of the users warmed
        for user_id, docs in largest:
            # The next user's bytes, estimated from those held so far (a cache keeps the user it
            # loaded last at any size, and would drop the others to make room).
            if held and (self._indexes.nbytes * (1 + int(docs) / held) > self._indexes.budget
                         or self._postings.nbytes * (1 + int(docs) / held) > self._postings.budget):
                break
            read_through(user_files(self.path, user_id))  # in sequence, before the loads map them
            self._index(user_id)
            self._current_postings(user_id)
            warmed.append(user_id)
            held += int(docs)
        return warmed


def read_through(paths: Sequence[Path]) -> None:
    """Read each file once, so the OS caches its pages: the indexes map their saved files, and
    a mapped page not in the cache is a disk read at the first search that touches it."""
    for path in paths:
        try:
            with path.open("rb", buffering=0) as file:
                while file.read(_CHUNK):
                    pass
        except OSError:  # gone since (a write replaced it): its successor is read when used
            continue
