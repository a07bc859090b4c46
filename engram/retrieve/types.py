"""Values that flow through the retrieval stages after candidates are fetched."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord, TimeRange, six_places

__all__ = ["MemoryEntry", "Retrieval", "RetrievalMetadata", "Scored"]


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate after stage 3 scoring: its signals, their weights and why it was recalled."""

    record: MemoryRecord
    score: float
    signals: Mapping[str, float] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    vector: npt.NDArray[np.float32] | None = None
    #: Selection takes lower tiers first, by score within a tier: a time-scoped query puts the
    #: memories outside its range in tier 1, so they only fill what the range leaves.
    tier: int = 0


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """The retrieval policy's ``MemoryEntry`` plus the explanation Engram adds (signals and reasons)."""

    id: str
    content: str
    score: float
    timestamp: str
    session_id: str | None
    message_id: str | None
    type: str
    role: str | None
    collection: str
    search_type: str
    original_length: int
    was_redacted: bool
    signals: Mapping[str, float] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    record: MemoryRecord | None = None
    #: The memory's own metadata and agent, so a caller can act on a result without a second read.
    metadata: Mapping[str, Any] = field(default_factory=dict)
    agent_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "content": self.content,
            "score": six_places(self.score),
            "timestamp": self.timestamp,
            "sessionId": self.session_id,
            "type": self.type,
            "provenance": {
                "collection": self.collection,
                "searchType": self.search_type,
                "originalLength": self.original_length,
                "wasRedacted": self.was_redacted,
            },
            "signals": {
                name: {"value": six_places(value), "weight": self.weights.get(name, 0.0)}
                for name, value in self.signals.items()
            },
            "reasons": list(self.reasons),
            "metadata": dict(self.metadata),
        }
        if self.agent_id is not None:
            out["agentId"] = self.agent_id
        if self.message_id is not None:
            out["messageId"] = self.message_id
        if self.role is not None:
            out["role"] = self.role
        return out


@dataclass(frozen=True, slots=True)
class RetrievalMetadata:
    """The retrieval policy's ``RetrievalMetadata`` plus the error that a fallback answered, if any,
    and what happened on the way: the time range the query was read to mean (``None`` if it named
    none) and how many candidates each stage dropped.

    Every candidate is either returned or counted once, at the stage that dropped it:
    ``total_results == included_results + below_min_score + dedup_removed + mmr_removed +
    beyond_top_k + budget_removed``. ``mmr_removed`` counts the memories among the ``top_k`` best
    scored that diversity (MMR) replaced with lower-scored ones; ``beyond_top_k`` the rest that
    ranked below the ``top_k`` picks.
    """

    query_time_ms: float
    total_results: int
    included_results: int
    total_tokens: int
    applied_filters: tuple[str, ...]
    config: Mapping[str, Any]
    error: Mapping[str, str] | None = None
    retrieval_id: str | None = None
    query_type: str | None = None
    strategy: str | None = None
    stage_ms: Mapping[str, float] = field(default_factory=dict)
    cached: bool = False
    suppressed_superseded: int = 0
    dedup_removed: int = 0
    time_range: TimeRange | None = None
    below_min_score: int = 0
    mmr_removed: int = 0
    beyond_top_k: int = 0
    budget_removed: int = 0
    #: The stages a deadline cut, in order (``engram.retrieve.budget``): the answer was ranked
    #: without them, and ``error`` is TIMEOUT with the "partial" fallback.
    cut_stages: tuple[str, ...] = ()
    #: The names the query's meaning was read half without, as the query wrote them
    #: (``engram.retrieve.common_names``: names many of the user's memories carry).
    meaning_without: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "queryTime": round(self.query_time_ms, 3),
            "totalResults": self.total_results,
            "includedResults": self.included_results,
            "totalTokens": self.total_tokens,
            "appliedFilters": list(self.applied_filters),
            "config": dict(self.config),
            "retrievalId": self.retrieval_id,
            "queryType": self.query_type,
            "strategy": self.strategy,
            "stageMs": {k: round(v, 3) for k, v in self.stage_ms.items()},
            "cached": self.cached,
            "suppressedSuperseded": self.suppressed_superseded,
            "dedupRemoved": self.dedup_removed,
            "timeRange": _range_json(self.time_range),
            "belowMinScore": self.below_min_score,
            "mmrRemoved": self.mmr_removed,
            "beyondTopK": self.beyond_top_k,
            "budgetRemoved": self.budget_removed,
        }
        if self.error is not None:
            out["error"] = dict(self.error)
        if self.cut_stages:
            out["cutStages"] = list(self.cut_stages)
        if self.meaning_without:
            out["meaningWithout"] = list(self.meaning_without)
        return out


def _range_json(time_range: TimeRange | None) -> dict[str, Any] | None:
    if time_range is None:
        return None
    return {"start": time_range.start.isoformat(), "end": time_range.end.isoformat(),
            "expression": time_range.expression, "vague": time_range.vague, "about": time_range.about}


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What ``Memory.retrieve`` answers: the chosen memories and how they were found."""

    query: str
    memories: tuple[MemoryEntry, ...]
    metadata: RetrievalMetadata
    domain_rows: tuple[Mapping[str, Any], ...] = ()
    #: The reference time the retrieval ran at; prompts say "2 weeks ago" relative to it.
    now: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """The retrieval policy's payload: ``memories`` in rank order (best first), and
        ``presentationOrder``, their ids in the order ``interleave`` presents them, as prompts do."""
        return {
            "memories": [m.to_dict() for m in self.memories],
            "metadata": self.metadata.to_dict(),
            "presentationOrder": [m.id for m in self.presented()],
        }

    def ids(self) -> list[str]:
        return [m.id for m in self.memories]

    def used_in(self, response: str) -> list[str]:
        """The ids of these memories that a model's ``response`` used, read from its words
        (:mod:`engram.retrieve.used`): implicit feedback for ``Memory.feedback``."""
        from engram.retrieve.used import used_in

        return used_in(((m.id, m.content) for m in self.memories), response, self.query)

    def presented(self) -> list[MemoryEntry]:
        """The memories in the order the ``interleave`` setting presents them (``alternate``: best,
        newest, next best, ...): the order prompts list them in."""
        from engram.retrieve.render import presented

        return [m for m in presented(self) if isinstance(m, MemoryEntry)]

    def to_prompt(self, style: str = "policy", *, timing: bool = False) -> str:
        """The memories as a prompt block; byte-identical for the same memories unless ``timing``."""
        from engram.retrieve.render import to_prompt

        return to_prompt(self, style=style, now=self.now, timing=timing)
