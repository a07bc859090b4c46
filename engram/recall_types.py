"""The results of a recall (:class:`Recall`, :class:`RecalledMemory`) and the options each recall mode takes,
typed for ``Memory``'s keyword forwarding (:mod:`engram.recall` holds the modes themselves)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict

from engram.model import MemoryRecord
from engram.salience import RecallOptions

__all__ = [
    "ByKindKwargs", "ContradictionKwargs", "LinkedKwargs", "Recall", "RecallKwargs", "RecalledMemory",
    "TemporalKwargs",
]


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """One recalled memory (``ScoredMemory``): the record as stored before this recall, a score and why."""

    record: MemoryRecord
    score: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.record.to_dict(), "score": round(self.score, 6), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Recall:
    """A recall's result (``MemoryRecallResult``): memories best first, their count, time taken, and the mode."""

    memories: tuple[RecalledMemory, ...]
    count: int
    duration_ms: float
    mode: str

    def to_dict(self) -> dict[str, Any]:
        memories = [m.to_dict() for m in self.memories]
        return {"mode": self.mode, "count": self.count, "duration_ms": round(self.duration_ms, 3), "memories": memories}


class RecallKwargs(TypedDict, total=False):
    """The options of :func:`recall`, typed for ``Memory.recall(**options)``."""

    max_results: int
    kind: str | None
    min_salience: float
    project_id: str | None
    include_archived: bool
    now: datetime | str | None
    options: RecallOptions | None


class TemporalKwargs(TypedDict, total=False):
    """The options of :func:`recall_temporal`."""

    kind: str | None
    project_id: str | None
    include_archived: bool
    limit: int
    now: datetime | str | None
    options: RecallOptions | None


class ByKindKwargs(TypedDict, total=False):
    """The options of :func:`recall_by_kind`."""

    project_id: str | None
    include_archived: bool
    now: datetime | str | None
    options: RecallOptions | None


class LinkedKwargs(TypedDict, total=False):
    """The options of :func:`recall_linked`."""

    direction: Literal["out", "both"]
    include_archived: bool


class ContradictionKwargs(TypedDict, total=False):
    """The options of :func:`find_contradictions`."""

    max_results: int
    min_salience: float
    now: datetime | str | None
    options: RecallOptions | None
