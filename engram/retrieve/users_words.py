"""Who says the user's own messages, for one query.

A memory with role ``user`` names no speaker, yet the user says it. When the query names that user,
by a user id that is a name ("What does Alice like?" of user ``alice``) or by the name the user
gave themselves in a message among the candidates ("Hi! I'm Maya"), the user's messages are that
speaker's (:func:`engram.ingest.entities.users_voice`). Kept per user: a shared scope's "I'm Maya"
is not this user's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.ingest.entities import said_by_the_user, self_declared, users_voice
from engram.ingest.entity_index import EntityIndex
from engram.model import MemoryRecord

__all__ = ["UsersWords"]


class UsersWords:
    """One query's reading of who says the user's own messages, grown as candidates load."""

    def __init__(self, index: EntityIndex, asked: Sequence[str]) -> None:
        self.index, self.asked = index, tuple(asked)
        self._asked = set(asked)
        self._declared: dict[str, dict[str, None]] = {}  # user -> names they gave themselves, that the query names
        self._voice: dict[str, str | None] = {}  # user -> who their own messages are said by

    def speakers(self, fresh: Sequence[MemoryRecord], records: Sequence[MemoryRecord]) -> dict[str, str]:
        """Memory id -> speaker for the user's own messages among ``records`` (all loaded so far),
        after reading the ``fresh`` ones for self-introductions: one found later counts for those
        loaded earlier too."""
        for r in fresh:
            # A self-introduction names the user, and writing tagged the message with that name:
            # only messages naming a query entity are read for one (~4 us a 1,000-character message).
            name = self_declared(r, self.index) if not self._asked.isdisjoint(r.entities) else None
            if name in self._asked and name not in self._declared.setdefault(r.user_id, {}):
                self._declared[r.user_id][name] = None
                self._voice.pop(r.user_id, None)
        out: dict[str, str] = {}
        for r in records:
            if said_by_the_user(r):
                if r.user_id not in self._voice:
                    self._voice[r.user_id] = users_voice(r.user_id, self.index, self.asked,
                                                         list(self._declared.get(r.user_id, ())))
                if (who := self._voice[r.user_id]) is not None:
                    out[r.id] = who
        return out
