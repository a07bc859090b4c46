"""Stage 3 scoring: every candidate gets all signals, one fused score and human-readable reasons.

Two fusions are offered. ``signals`` is seed 003's weighted sum (with a keyword signal added for
hybrid search); ``rrf`` is reciprocal rank fusion over the candidate sources, for comparison in
evaluation. Both fill every signal so a result can always be explained.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from engram.config import SIGNALS, RetrievalConfig
from engram.errors import ConfigError
from engram.model import MemoryRecord, TimeRange
from engram.retrieve.signals import (
    entity_overlap,
    keyword_relevance,
    reinforcement,
    semantic_similarity,
    temporal_relevance,
    type_boost,
)
from engram.retrieve.types import Scored

__all__ = ["ALL_SIGNALS", "KEYWORD_SIGNAL", "apply_min_score", "effective_weights", "rank"]

KEYWORD_SIGNAL = "keyword_relevance"
#: The five seed 003 signals plus the keyword signal, in the order they are reported.
ALL_SIGNALS: tuple[str, ...] = (*SIGNALS, KEYWORD_SIGNAL)

# Sources listed in the order their reasons are reported, so reasons read the same every time.
_SOURCE_ORDER = ("semantic", "keyword", "entity", "temporal", "procedural", "summary", "links")


def effective_weights(
    strategy_weights: Mapping[str, float], search_type: str, keyword_weight: float
) -> dict[str, float]:
    """The six weights a ``signals`` fusion multiplies by.

    * ``hybrid``: every strategy weight times ``1 - keyword_weight``; keyword gets ``keyword_weight``.
    * ``semantic``: the strategy weights as given; keyword gets 0.
    * ``keyword``: semantic similarity's weight moves to the keyword signal; semantic gets 0.

    Signals missing from ``strategy_weights`` weigh 0. Since every seed 003 strategy sums to 1,
    so do the effective weights, which keeps scores in [0, 1] before the summary boost.
    """
    base = {name: float(strategy_weights.get(name, 0.0)) for name in SIGNALS}
    if search_type == "hybrid":
        out = {name: w * (1.0 - keyword_weight) for name, w in base.items()}
        out[KEYWORD_SIGNAL] = keyword_weight
    elif search_type == "semantic":
        out = dict(base)
        out[KEYWORD_SIGNAL] = 0.0
    elif search_type == "keyword":
        out = dict(base)
        out[KEYWORD_SIGNAL] = base["semantic_similarity"]
        out["semantic_similarity"] = 0.0
    else:
        raise ConfigError("search_type", f"must be one of hybrid, semantic, keyword; got {search_type!r}")
    return out


def _rrf_score(memory_id: str, source_ranks: Mapping[str, Mapping[str, int]], rrf_k: int) -> float:
    used = [ranks for ranks in source_ranks.values() if ranks]
    if not used:
        return 0.0
    total = sum(1.0 / (rrf_k + ranks[memory_id]) for ranks in used if memory_id in ranks)
    # Dividing by "rank 1 in every source" makes the score comparable with min_score in [0, 1].
    return total / (len(used) / (rrf_k + 1))


def _reasons(
    record: MemoryRecord,
    found_by: Sequence[str],
    signals: Mapping[str, float],
    query_entities: Sequence[str],
    candidate_entities: set[str],
    time_range: TimeRange | None,
) -> tuple[str, ...]:
    reasons: list[str] = []
    names = set(found_by)
    if "semantic" in names:
        reasons.append(f"semantic match {signals['semantic_similarity']:.2f}")
    if "keyword" in names:
        reasons.append("keyword match")
    # Entity and time facts are reported whenever they hold, whichever source found the memory.
    seen: set[str] = set()
    for entity in query_entities:
        if entity in candidate_entities and entity not in seen:
            seen.add(entity)
            reasons.append(f"mentions {entity}")
    if "entity" in names and not seen:
        reasons.append("entity match")
    if time_range is not None and time_range.start <= record.created_at <= time_range.end:
        label = time_range.expression or f"{time_range.start.date()}..{time_range.end.date()}"
        reasons.append(f"in time range '{label}'")
    if "procedural" in names or record.kind == "procedure":
        reasons.append("procedure")
    if "summary" in names or record.kind == "summary":
        reasons.append("summary")
    if "links" in names:
        reasons.append("linked from another result")
    # "links:<id>" names the memory it was reached from; unknown sources are still credited.
    for name in sorted(names - set(_SOURCE_ORDER)):
        if name.startswith("links:"):
            reasons.append(f"linked from {name[len('links:') :]}")
        else:
            reasons.append(f"found by {name}")
    return tuple(reasons)


def rank(
    records: Sequence[MemoryRecord],
    *,
    query_vec: npt.NDArray[np.float32] | None,
    vectors: Mapping[str, npt.NDArray[np.float32]],
    query_entities: Sequence[str],
    time_range: TimeRange | None,
    now: datetime,
    weights: Mapping[str, float],
    keyword_scores: Mapping[str, float],
    sources: Mapping[str, Sequence[str]],
    source_ranks: Mapping[str, Mapping[str, int]],
    config: RetrievalConfig,
) -> list[Scored]:
    """Score every record; best first, ties by id. ``min_score`` is left to the caller.

    ``weights`` are the query strategy's weights; ``config.weights``, when set, overrides them
    signal by signal (so passing already-resolved weights is harmless). A record's candidate
    entities are its ``entities`` plus its ``subject`` (seed 003 takes a fact's subject as its
    entity).
    """
    strategy = dict(weights)
    if config.weights is not None:
        strategy.update(config.weights)
    eff = effective_weights(strategy, config.search_type, config.keyword_weight)
    finite_kw = [v for v in keyword_scores.values() if math.isfinite(v)]
    best_kw = max(finite_kw, default=0.0)

    out: list[Scored] = []
    for record in records:
        vec = vectors.get(record.id)
        cand_entities = set(record.entities)
        if record.subject:
            cand_entities.add(record.subject)
        signals = {
            "semantic_similarity": semantic_similarity(query_vec, vec),
            "entity_overlap": entity_overlap(query_entities, cand_entities),
            "temporal_relevance": temporal_relevance(record.created_at, time_range, now),
            "importance": min(1.0, max(0.0, record.importance)) if math.isfinite(record.importance) else 0.0,
            "reinforcement": reinforcement(record.access_count),
            KEYWORD_SIGNAL: keyword_relevance(keyword_scores.get(record.id), best_kw),
        }
        if config.fusion == "rrf":
            score = _rrf_score(record.id, source_ranks, config.rrf_k)
            signals["rrf"] = score
            used_weights: dict[str, float] = {"rrf": 1.0}
        else:
            score = sum(eff[name] * signals[name] for name in ALL_SIGNALS) * type_boost(record.kind)
            used_weights = eff
        reasons = _reasons(
            record, sources.get(record.id, ()), signals, query_entities, cand_entities, time_range
        )
        out.append(
            Scored(
                record=record,
                score=score,
                signals=signals,
                weights=dict(used_weights),
                reasons=reasons,
                vector=vec,
            )
        )
    out.sort(key=lambda s: (-s.score, s.record.id))
    return out


def apply_min_score(scored: Sequence[Scored], min_score: float) -> tuple[list[Scored], int]:
    """Keep items scoring at least ``min_score`` (seed 001 ``score_threshold``); also the count dropped."""
    kept = [s for s in scored if s.score >= min_score]
    return kept, len(scored) - len(kept)
