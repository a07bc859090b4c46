"""What a retrieval reads of its candidates before it ranks them: the records, their vectors, who
said each, the turns next to each and a request's standing sentences, each read once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engram.ext import RetrievalReads
from engram.ingest.entities import speaker_entity
from engram.ingest.entity_index import EntityIndex
from engram.model import MemoryRecord
from engram.retrieve.columns import Known
from engram.retrieve.episodes import takes_context, turned_around
from engram.retrieve.users_words import UsersWords

__all__ = ["Loaded"]


@dataclass
class Loaded:
    """One retrieval's candidates as read (``records`` in the order loaded, and what ranking reads of
    them), from ``reads`` for ``user_id``. ``admits`` says which fetched records the retrieval may
    rank (its scopes, filters, time travel); ``timed`` times a read that must happen, ``optional``
    one the deadline may cut (it then gives its default)."""

    reads: RetrievalReads
    user_id: str
    admits: Callable[[MemoryRecord], bool]
    index: EntityIndex
    users_words: UsersWords
    requests: bool
    timed: Callable[[str, Callable[[], Any]], Any]
    optional: Callable[[str, Callable[[], Any], Any], Any]
    records: list[MemoryRecord] = field(default_factory=list)
    vectors: dict[str, Any] = field(default_factory=dict)
    facets: dict[str, Any] = field(default_factory=dict)  # a request's standing memories' sentence vectors
    neighbors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    speakers: dict[str, str] = field(default_factory=dict)
    first: Known = field(default_factory=Known)  # what the second hop's ranking shares with the first
    prefetched: dict[str, MemoryRecord] = field(default_factory=dict)

    def prefetch(self, ids: list[str]) -> None:
        """Read ``ids`` early (while the vector searches run): what it misses, :meth:`load` reads."""
        none: list[MemoryRecord] = []
        found = self.optional("prefetch", lambda: self.reads.fetch(self.user_id, ids), none)
        self.prefetched.update((r.id, r) for r in found)

    def fetched(self, ids: list[str]) -> list[MemoryRecord]:
        """The records of ``ids`` that exist, read once each."""
        if missing := [i for i in ids if i not in self.prefetched]:
            self.prefetched.update((r.id, r) for r in self.timed("fetch", lambda: self.reads.fetch(self.user_id,
                                                                                                   missing)))
        return [r for i in ids if (r := self.prefetched.get(i)) is not None]

    def load(self, ids: list[str], beside: bool = False) -> None:
        """Add the admitted records of ``ids`` and what ranking reads of them; ``beside``: they are
        turns read as the neighbours of loaded ones (their own neighbours are those)."""
        fresh = [r for r in self.fetched(ids) if self.admits(r)]
        self.records.extend(fresh)
        self.speakers.update((r.id, who) for r in fresh if r.role and (who := speaker_entity(r.role, self.index)))
        if self.users_words.asked:
            self.speakers.update(self.users_words.speakers(fresh, self.records))
        self.vectors.update(self.timed("fetch_vectors", lambda: self.reads.vectors(self.user_id,
                                                                                   [r.id for r in fresh])))
        standing = [r.id for r in fresh if self.first.standing_of(r)] if self.requests else []
        if standing:
            nothing: dict[str, Any] = {}
            self.facets.update(self.optional("facets", lambda: self.reads.facets(self.user_id, standing), nothing))
        alone: dict[str, tuple[str, ...]] = {}
        self.neighbors.update(turned_around(self.neighbors, fresh) if beside else self.optional(
            "neighbors", lambda: self.reads.session_neighbors(self.user_id, [r.id for r in fresh if takes_context(r)]),
            alone))
