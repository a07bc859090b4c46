"""The relevance signals, one pure function each, every value in [0, 1].

The functions never raise on missing data: a memory without a vector, entities or keyword score
simply carries no evidence for that signal (0.0), so one absent input cannot sink a whole ranking.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Set
from datetime import datetime

import numpy as np
import numpy.typing as npt

from engram.embedders.scale import DEFAULT_SIMILARITY_RANGE, similarity_range
from engram.model import TimeRange

__all__ = [
    "DEFAULT_SIMILARITY_RANGE",
    "SPEAKER_MENTION",
    "SUMMARY_BOOST",
    "calibrated_similarity",
    "entity_overlap",
    "keyword_relevance",
    "reciprocal_rank",
    "reinforcement",
    "semantic_similarity",
    "similarity_range",
    "temporal_relevance",
    "type_boost",
]

#: Summaries are dense: prefer them a little.
SUMMARY_BOOST = 1.15


Vector = npt.NDArray[np.floating]


def _unit(value: float) -> float:
    if not math.isfinite(value):
        return 0.0
    return min(1.0, max(0.0, value))


def semantic_similarity(query_vec: Vector | None, vec: Vector | None) -> float:
    """Cosine similarity of two L2-normalised vectors, clamped to [0, 1].

    The vectors are normalised at embedding time, so the dot product is the cosine. A zero vector
    (an embedder's answer to empty text) has no direction and gives 0.0 rather than NaN. Negative
    similarity is clamped to 0: "opposite" is no evidence of relevance, and a negative signal would
    let an unrelated memory pull a weighted sum below memories that simply lack a vector.
    """
    if query_vec is None or vec is None:
        return 0.0
    q = np.asarray(query_vec, dtype=np.float32).ravel()
    v = np.asarray(vec, dtype=np.float32).ravel()
    if q.shape != v.shape or not q.any() or not v.any():
        return 0.0
    return _unit(float(np.dot(q, v)))


#: What a query entity counts for in a memory that mentions it while someone else speaks, when
#: that entity is itself a speaker among the candidates: "What did Caroline research?" is about
#: Caroline's own turns more than Melanie's turns that name her. LoCoMo dev evidence recall@10
#: 0.748 -> 0.769 (0.774 at 0, but then "What did Melanie say about Caroline?" could not prefer
#: Melanie's turns naming Caroline); LongMemEval (one speaker) unchanged.
SPEAKER_MENTION = 0.5


def entity_overlap(
    query_entities: Iterable[str], candidate_entities: Iterable[str], *,
    speaker: str | None = None, speakers: Set[str] = frozenset(), weights: Mapping[str, float] | None = None,
) -> float:
    """Entity overlap ``|Q ∩ C| / |Q|``; 0.0 when either side has no entities.

    A query entity among ``speakers`` (who speak in the candidates) counts fully in the memories
    it said (``speaker``) and :data:`SPEAKER_MENTION` in the others that mention it; any other
    counts its weight in ``weights`` (how telling a name is: engram.retrieve.specific), else fully.
    """
    query = set(query_entities)
    candidate = set(candidate_entities)
    if not query or not candidate:
        return 0.0
    found = query & candidate
    weight = weights or {}
    return sum((1.0 if e == speaker else SPEAKER_MENTION) if e in speakers else weight.get(e, 1.0)
               for e in found) / len(query)


def temporal_relevance(created_at: datetime, time_range: TimeRange | None, now: datetime) -> float:
    """Temporal relevance.

    Inside ``[start, end]`` it is 1.0; outside it decays as ``exp(-0.1 * distance_days)`` from the
    nearer edge. Without a range there is a mild recency bias ``exp(-0.01 * age_days)``. Days are
    whole days of the absolute difference (``timedelta.days``), as specified, so a memory a few
    hours outside the range still counts fully; a memory dated after ``now`` (clock skew) counts
    as brand new instead of getting a score above 1.
    """
    if time_range is not None:
        if time_range.start <= created_at <= time_range.end:
            return 1.0
        distance_days = min(abs(created_at - time_range.start).days, abs(created_at - time_range.end).days)
        return math.exp(-0.1 * distance_days)
    age_days = max(0, (now - created_at).days)
    return math.exp(-0.01 * age_days)


def reinforcement(use_count: int) -> float:
    """Reinforcement ``min(1, log(1 + use_count) / 5)``; saturates at ``use_count = e^5 - 1 ≈ 147``."""
    return min(1.0, math.log1p(max(0, use_count)) / 5.0)


def calibrated_similarity(cosine: float, similarity_range: tuple[float, float] = DEFAULT_SIMILARITY_RANGE) -> float:
    """Cosine similarity as evidence of relevance in [0, 1]: 0 at what the embedder gives unrelated
    texts, 1 at a clear match. Raw cosines are not comparable across models (E5 rarely goes below
    0.7, MiniLM rarely above 0.7), so a score floor on them would mean something else per model."""
    low, high = similarity_range
    if not math.isfinite(cosine) or high <= low:
        return 0.0
    return _unit((cosine - low) / (high - low))


def keyword_relevance(raw: float | None) -> float:
    """A keyword source's score in [0, 1]: stores score BM25 as a share of the query's words (1.0 is
    "every query word, once, in a memory of average length"), so more is capped at 1."""
    if raw is None:
        return 0.0
    return _unit(raw)


def type_boost(kind: str) -> float:
    """Memory-type preference: summaries get :data:`SUMMARY_BOOST`, the rest 1.0."""
    return SUMMARY_BOOST if kind == "summary" else 1.0


def reciprocal_rank(memory_id: str, source_ranks: Mapping[str, Mapping[str, int]], rrf_k: int) -> float:
    """Reciprocal rank fusion: ``sum(1 / (rrf_k + rank))`` over the sources that ranked the memory."""
    return sum(1.0 / (rrf_k + ranks[memory_id]) for ranks in source_ranks.values() if memory_id in ranks)
