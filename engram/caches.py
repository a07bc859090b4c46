"""The one cache layer: everything a write can make stale, held and invalidated in one place.

* ``retrievals``: computed retrievals (the pipeline's TTL + LRU cache);
* ``keywords``: keyword searches asked for with ``cached=True``;
* ``entity_indexes``: each user's entity index, versioned by the store's change token and the
  user's retrieval generation, so it follows every invalidation below without one of its own;
* ``weights``: tuned strategy weights, re-read at most once a minute (:class:`TunedWeights`).

Every write through ``Memory`` ends in :meth:`Caches.invalidate`; writes by other processes reach
the same caches through the store's change token, which every cache key and index version holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from engram.ingest.entity_index import EntityIndex, EntityIndexes
from engram.retrieve.cache import RetrievalCache, retrieval_bytes
from engram.retrieve.speaker_names import NameVectors

if TYPE_CHECKING:
    from engram.ext import Store
    from engram.retrieve.types import Retrieval

__all__ = ["KEYWORD_CACHE_ENTRIES", "KEYWORD_CACHE_TTL", "Caches", "TunedWeights"]

KEYWORD_CACHE_ENTRIES = 100
KEYWORD_CACHE_TTL = 300.0


class TunedWeights:
    """The ``Pipeline.weights_by_strategy`` hook: a user's tuned weights, re-read at most every ``ttl`` s.

    The TTL keeps retrieval free of a per-query read while still picking up weights that
    ``engram tune`` saved from another process; ``invalidate`` makes a save in this process
    visible at once.
    """

    def __init__(self, store: Store, *, ttl: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, dict[str, dict[str, float]]]] = {}

    def __call__(self, user_id: str) -> Mapping[str, Mapping[str, float]] | None:
        now = self._clock()
        with self._lock:
            hit = self._cache.get(user_id)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1] or None
        weights = self._store.load_weights(user_id)
        with self._lock:
            if len(self._cache) > 10_000:  # bounded: a server sees many users
                self._cache.clear()
            self._cache[user_id] = (now, weights)
        return weights or None

    def invalidate(self, user_id: str | None = None) -> None:
        with self._lock:
            if user_id is None:
                self._cache.clear()
            else:
                self._cache.pop(user_id, None)


class Caches:
    """Every cache of one ``Memory``; see the module doc for what each holds."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.retrievals: RetrievalCache[Retrieval] = RetrievalCache(ttl=60.0, sizeof=retrieval_bytes)
        # Keyword results are typed by their feature (engram.keyword_search), which sits above this layer.
        self.keywords: RetrievalCache[Any] = RetrievalCache(max_entries=KEYWORD_CACHE_ENTRIES, ttl=KEYWORD_CACHE_TTL)
        self.entity_indexes = EntityIndexes()
        self.weights = TunedWeights(store)
        self.speaker_names = NameVectors()  # the vectors of speakers' names, per scope (retrieve.speaker_names)

    def generation(self, user_id: str) -> int:
        """Bumped by every :meth:`invalidate` of the user: part of every derived cache key."""
        return self.retrievals.generation(user_id)

    def entity_index(self, user_id: str) -> EntityIndex:
        """The user's entity index, shared by the write and read paths; re-read only after a change."""
        version = (self._store.change_token(user_id), self.generation(user_id))
        return self.entity_indexes.get(self._store, user_id, version)

    def invalidate(self, user_id: str, *, weights: bool = False) -> None:
        """A write to ``user_id`` happened: nothing cached of theirs may be served again.

        ``weights`` also drops their tuned weights (after tuning or forgetting the user): other
        writes leave them, so retrieval need not re-read them after every write.
        """
        self.retrievals.invalidate_user(user_id)
        self.keywords.invalidate_user(user_id)
        self.speaker_names.forget(user_id)
        if weights:
            self.weights.invalidate(user_id)

    def clear(self) -> None:
        """Drop everything (a setting every answer depends on changed)."""
        self.retrievals.clear()
        self.keywords.clear()
        self.speaker_names.forget()
        self.weights.invalidate()
