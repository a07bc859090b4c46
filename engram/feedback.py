"""Retrieval log and feedback (learning from feedback).

Every retrieval that ran (not a cache hit, not an empty fallback) is logged with one INSERT after
its result is computed: the query, its category and strategy, the search settings, and each
returned memory with its kind and signal values, which is all :mod:`engram.tune` needs to re-rank
the retrieval under other weights. ``Memory.feedback`` then records which returned memories were
used.

Reinforcement keeps the spec's formula, ``min(1, log(1 + use_count) / 5)``, and reads use_count
from the memory's ``access_count``: recording feedback increments it once per (retrieval, memory),
in the same transaction as the feedback rows, so ranking needs no extra query. ``access_count``
also counts recalls that ask for access tracking (``track_access``, off by default); that is an
explicit "treat every return as a use", so both count as uses.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.context import context_of
from engram.errors import NotFound, StoreError, ValidationError
from engram.model import LoggedItem, LoggedRetrieval
from engram.validate import validate_id

if TYPE_CHECKING:
    from engram.config import RetrievalConfig
    from engram.context import ContextSource
    from engram.ext import Metrics, Store
    from engram.retrieve.types import Retrieval

__all__ = [
    "FeedbackResult",
    "LoggedItem",
    "LoggedRetrieval",
    "log_entry",
    "log_retrieval",
    "record_feedback",
]

log = logging.getLogger("engram.retrieve")

MAX_USED = 1000


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """What ``Memory.feedback`` recorded; ``recorded`` excludes uses reported before."""

    retrieval_id: str
    used_ids: tuple[str, ...]
    recorded: int

    def to_dict(self) -> dict[str, Any]:
        return {"retrievalId": self.retrieval_id, "usedIds": list(self.used_ids), "recorded": self.recorded}


def log_entry(retrieval: Retrieval, config: RetrievalConfig, weights_source: str, at: datetime,
              experiment: Mapping[str, str] | None = None, owner: str | None = None) -> LoggedRetrieval:
    """What the log keeps of ``retrieval``: with ``owner`` (the user it is logged for), only the
    memories that are theirs. A shared scope's memory (``also=["kb"]``) is another user's: its
    deletion clears the logs of its own user only, so an id kept in the asker's log would outlive
    it, and feedback given on it would count uses of another user's memory."""
    meta = retrieval.metadata
    items = tuple(
        LoggedItem(m.id, m.record.kind if m.record is not None else m.type, dict(m.signals))
        for m in retrieval.memories
        if owner is None or m.record is None or m.record.user_id == owner
    )
    settings = {
        "searchType": config.search_type,
        "keywordWeight": config.keyword_weight,
        "fusion": config.fusion,
        "weightsSource": weights_source,
        # Which evidence applied to this query (the rest gave its weight back), for re-scoring.
        "applicable": sorted(_applicable(retrieval)),
        # The A/B test and arm it ran under, if any (engram.experiments).
        **(experiment or {}),
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


def log_retrieval(store: Store, metrics: Metrics, user_id: str, result: Retrieval, entry: LoggedRetrieval) -> None:
    """Write ``entry`` (of ``result``) to the user's retrieval log: it serves learning, so a store
    that cannot take it is logged and counted, and the answer is still given."""
    try:
        store.log_retrieval(user_id, entry)
    except StoreError as exc:
        log.warning("[MEM:RETRIEVE] could not log retrieval %s: %s", result.metadata.retrieval_id, exc)
        metrics.increment("retrieval.log_errors")


def _applicable(retrieval: Retrieval) -> set[str]:
    weights = retrieval.memories[0].weights if retrieval.memories else {}
    return {name for name in ("entity_overlap", "temporal_relevance") if weights.get(name, 0.0) > 0} | {
        "importance", "reinforcement"}


def record_feedback(
    source: ContextSource, retrieval_id: str, used_ids: Sequence[str], *, user_id: str, at: datetime | None = None
) -> FeedbackResult:
    """Validate ``used_ids`` against the logged retrieval, then record them and count each use once."""
    memory = context_of(source)
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
