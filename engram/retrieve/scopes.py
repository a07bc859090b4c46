"""Several scopes in one retrieval: a user's own memories and shared ones (a knowledge base, a team).

:class:`Scopes` is a read-only view over one store that answers the candidate and read calls of
the pipeline for several user ids at once, so the whole pipeline (understanding, every source,
ranking, selection) runs unchanged and ranks the scopes' memories together. Each source asks every
scope and keeps the best ``n`` of the union by its own raw score, which is comparable across scopes
by construction (cosines, keyword scores as a share of the query's words, times, match counts).

Whatever user id the pipeline passes is ignored: the view always answers for exactly its scopes,
which the caller has already checked access to.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from typing import Any

from engram.ext import Store, Vector
from engram.model import Filters, Hit, MemoryRecord
from engram.ontology import EntityRelation

__all__ = ["Scopes"]


def _best(lists: Iterable[builtins.list[Hit]], n: int) -> builtins.list[Hit]:
    merged = sorted((hit for hits in lists for hit in hits), key=lambda h: (-h[1], h[0]))
    seen: set[str] = set()
    out: builtins.list[Hit] = []
    for memory_id, score in merged:
        if memory_id not in seen:
            seen.add(memory_id)
            out.append((memory_id, score))
    return out[:n]


class Scopes:
    """The pipeline's reads over ``scopes`` (user ids, the asking user first) of ``store``."""

    def __init__(self, store: Store, scopes: Sequence[str]) -> None:
        self.store = store
        self.scopes = tuple(dict.fromkeys(scopes))

    # -- what the pipeline asks before it runs
    def change_token(self, _user_id: str) -> str:
        return "|".join(self.store.change_token(s) for s in self.scopes)

    def user_exists(self, _user_id: str) -> bool:
        return any(self.store.user_exists(s) for s in self.scopes)

    # -- candidate sources: the best n of the union
    def keyword_search(self, _user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return _best((self.store.keyword_search(s, text, n, filters) for s in self.scopes), n)

    def vector_search(self, _user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]:
        return _best((self.store.vector_search(s, query, n, filters) for s in self.scopes), n)

    def start_vector_search(
        self, _user_id: str, query: Vector, n: int, filters: Filters
    ) -> Callable[[], builtins.list[Hit]]:
        start = getattr(self.store, "start_vector_search", None)
        if start is None:
            hits = self.vector_search(_user_id, query, n, filters)
            return lambda: hits
        finishes = [start(s, query, n, filters) for s in self.scopes]
        return lambda: _best((finish() for finish in finishes), n)

    def by_entities(self, _user_id: str, entity_ids: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]:
        return _best((self.store.by_entities(s, entity_ids, n, filters) for s in self.scopes), n)

    def entity_counts(self, _user_id: str, entity_ids: Sequence[str], cap: int) -> dict[str, int]:
        totals = dict.fromkeys(entity_ids, 0)
        for scope in self.scopes:
            for entity, count in self.store.entity_counts(scope, entity_ids, cap).items():
                totals[entity] = min(cap, totals.get(entity, 0) + count)
        return totals

    def entity_shares(self, _user_id: str, entity_ids: Sequence[str], newest: int) -> tuple[dict[str, int], int]:
        # Each scope's own window, summed: every scope's names weigh by its recent memories.
        totals, size = dict.fromkeys(entity_ids, 0), 0
        if not hasattr(self.store, "entity_shares"):  # a store older than the method: names count fully
            return totals, size
        for scope in self.scopes:
            counts, seen = self.store.entity_shares(scope, entity_ids, newest)
            size += seen
            for entity, count in counts.items():
                totals[entity] = totals.get(entity, 0) + count
        return totals, size

    def related_entities(
        self, _user_id: str, entity_ids: Sequence[str], limit_per_entity: int
    ) -> builtins.list[EntityRelation]:
        # Each scope's own ontology, each bounded per entity as the store bounds it.
        out: builtins.list[EntityRelation] = []
        for scope in self.scopes:
            out.extend(self.store.related_entities(scope, entity_ids, limit_per_entity))
        return out

    def by_time_range(
        self, _user_id: str, start: datetime, end: datetime, n: int, filters: Filters
    ) -> builtins.list[Hit]:
        return _best((self.store.by_time_range(s, start, end, n, filters) for s in self.scopes), n)

    def by_named_days(self, _user_id: str, first: date, last: date, n: int, filters: Filters, *,
                      told: bool = False) -> builtins.list[Hit]:
        return _best((self.store.by_named_days(s, first, last, n, filters, told=told) for s in self.scopes), n)

    def by_standing(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        """The asker's own only: a shared scope's newer statements would take every place, and its
        instructions are not the asker's."""
        return self.store.by_standing(user_id, n, filters)

    def most_recent(self, _user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return _best((self.store.most_recent(s, n, filters) for s in self.scopes), n)

    def by_links(
        self, _user_id: str, memory_ids: Sequence[str], n: int, link_types: Iterable[str] | None
    ) -> builtins.list[Hit]:
        types = None if link_types is None else list(link_types)
        return _best((self.store.by_links(s, memory_ids, n, types) for s in self.scopes), n)

    # -- reads of what the sources found: each id is answered by the scope that owns it
    def fetch(self, _user_id: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        found = {r.id: r for s in self.scopes for r in self.store.fetch(s, memory_ids)}
        return [found[i] for i in dict.fromkeys(memory_ids) if i in found]

    def vectors(self, _user_id: str, memory_ids: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for scope in self.scopes:
            out.update(self.store.vectors(scope, memory_ids))
        return out

    def facets(self, _user_id: str, memory_ids: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for scope in self.scopes:
            out.update(self.store.facets(scope, memory_ids))
        return out

    def session_neighbors(self, _user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        for scope in self.scopes:
            out.update(self.store.session_neighbors(scope, memory_ids))
        return out

    def record_access(self, _user_id: str, memory_ids: Sequence[str], when: datetime) -> None:
        # The store updates only the rows the scope owns: every scope sees the whole list.
        for scope in self.scopes:
            self.store.record_access(scope, memory_ids, when)
