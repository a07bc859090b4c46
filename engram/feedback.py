"""Retrieval log and feedback (seed 003, Feedback and Learning, phases 2 and 3).

Every retrieval that ran (not a cache hit, not an empty fallback) is logged with one INSERT after
its result is computed: the query, its category and strategy, the search settings, and each
returned memory with its kind and signal values, which is all :mod:`engram.tune` needs to re-rank
the retrieval under other weights. ``Memory.feedback`` then records which returned memories were
used.

Reinforcement keeps the seed's formula, ``min(1, log(1 + use_count) / 5)``, and reads use_count
from the memory's ``access_count``: recording feedback increments it once per (retrieval, memory),
in the same transaction as the feedback rows, so ranking needs no extra query. ``access_count``
also counts recalls that ask for access tracking (``track_access``, off by default); that is an
explicit "treat every return as a use", so both count as uses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.errors import NotFound, ValidationError
from engram.ingest.normalize import validate_id
from engram.model import LoggedItem, LoggedRetrieval

if TYPE_CHECKING:
    from engram.config import RetrievalConfig
    from engram.ext import Store
    from engram.memory import Memory
    from engram.retrieve.types import Retrieval

__all__ = [
    "FeedbackResult",
    "LoggedItem",
    "LoggedRetrieval",
    "TunedWeights",
    "log_entry",
    "record_feedback",
]

MAX_USED = 1000


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """What ``Memory.feedback`` recorded; ``recorded`` excludes uses reported before."""

    retrieval_id: str
    used_ids: tuple[str, ...]
    recorded: int

    def to_dict(self) -> dict[str, Any]:
        return {"retrievalId": self.retrieval_id, "usedIds": list(self.used_ids), "recorded": self.recorded}


def log_entry(retrieval: Retrieval, config: RetrievalConfig, weights_source: str, at: datetime) -> LoggedRetrieval:
    meta = retrieval.metadata
    items = tuple(
        LoggedItem(m.id, m.record.kind if m.record is not None else m.type, dict(m.signals))
        for m in retrieval.memories
    )
    settings = {
        "searchType": config.search_type,
        "keywordWeight": config.keyword_weight,
        "fusion": config.fusion,
        "weightsSource": weights_source,
        # Which evidence applied to this query (the rest gave its weight back), for re-scoring.
        "applicable": sorted(_applicable(retrieval)),
    }
    return LoggedRetrieval(
        id=meta.retrieval_id or "",
        query=retrieval.query,
        category=meta.query_type or "",
        strategy=meta.strategy or "",
        created_at=at,
        items=items,
        settings=settings,
    )


def _applicable(retrieval: Retrieval) -> set[str]:
    weights = retrieval.memories[0].weights if retrieval.memories else {}
    return {name for name in ("entity_overlap", "temporal_relevance") if weights.get(name, 0.0) > 0} | {
        "importance", "reinforcement"}


def record_feedback(
    memory: Memory, retrieval_id: str, used_ids: Sequence[str], *, user_id: str, at: datetime | None = None
) -> FeedbackResult:
    """Validate ``used_ids`` against the logged retrieval, then record them and count each use once."""
    rid = validate_id(retrieval_id, "retrieval_id", memory.limits) or ""
    if isinstance(used_ids, str) or not isinstance(used_ids, Sequence):
        raise ValidationError("used_ids", "must be a list of memory ids")
    if len(used_ids) > MAX_USED:
        raise ValidationError("used_ids", f"at most {MAX_USED} ids, got {len(used_ids)}")
    used = tuple(dict.fromkeys(validate_id(u, "used_ids", memory.limits) or "" for u in used_ids))
    entry = memory.store.get_retrieval(user_id, rid)
    if entry is None:
        # Another user's retrieval looks exactly like an unknown one: ids must not leak across users.
        raise NotFound(f"no logged retrieval {rid!r} for this user")
    returned = set(entry.returned_ids())
    stray = [u for u in used if u not in returned]
    if stray:
        raise ValidationError("used_ids", f"{stray[0]!r} was not returned by retrieval {rid!r}")
    recorded = memory.store.record_feedback(user_id, rid, used, at or datetime.now(UTC)) if used else 0
    return FeedbackResult(rid, used, recorded)


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
