"""The arithmetic of the default fusion: relevance read in a query's own similarity range, evidence
riding on it (:func:`fuse`), and reported scores without a ceiling (:func:`displayed`).

:mod:`engram.retrieve.rank` computes the signals; this module turns them into one strength per
memory. :mod:`engram.tune` re-scores with :func:`fuse` under other weights.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from engram.errors import ConfigError
from engram.retrieve.signals import reciprocal_rank

__all__ = ["MEANING_LOW_SLACK", "MEANING_REACH", "SCORE_KNEE", "displayed", "fuse", "meaning_share", "reach",
           "rrf_score"]

#: When no candidate comes near the similarity range's bottom, meaning is read from ``MEANING_REACH``
#: of the range's width below the best candidate's cosine instead, though never from more than
#: ``MEANING_LOW_SLACK`` of the width below the range (MiniLM: from best - 0.2, not under 0.05). A
#: request whose closest memory is far in meaning ("How do I parse command-line arguments?" against
#: "use Rust's standard library only") would otherwise have every memory at zero meaning, and
#: chance keyword matches of its common words would decide; a query that matches nothing still
#: scores near nothing. Instructions set R@10 / R@50 9 / 12 -> 10 / 14 of 30; no other set moved
#: (a reach of 0.15 and 0.2 alike; 0.25 and 0.3 cost LongMemEval two questions at 5).
MEANING_REACH = 0.4
MEANING_LOW_SLACK = 0.2
#: Where reported scores start to bend: below it a score is the fused strength itself.
SCORE_KNEE = 0.8


def meaning_share(search_type: str, keyword_weight: float) -> float:
    """How much of relevance is meaning (the rest is keywords) for a search type."""
    if search_type == "hybrid":
        return 1.0 - keyword_weight
    if search_type == "semantic":
        return 1.0
    if search_type == "keyword":
        return 0.0
    raise ConfigError("search_type", f"must be one of hybrid, semantic, keyword; got {search_type!r}")


def fuse(
    relevance: npt.NDArray[np.float64],
    context: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    applicable: npt.NDArray[np.bool_],
    boost: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Strengths of items, ordered as their scores and without a ceiling (:func:`displayed` maps
    them to scores): ``relevance`` (n), ``context`` (n x 4, CONTEXT_SIGNALS), ``weights`` (SIGNALS
    order), ``applicable`` (n x 4 or 4: which evidence applies), ``boost`` (n). Shared with tuning."""
    if applicable.ndim == 1:
        # The same evidence for every item (a retrieval): a column at a time, the arithmetic of the
        # general case below in the same order, without its per-item weight matrix.
        evidence = np.where(applicable, weights[1:], 0.0).tolist()
        total = sum(evidence)
        if total <= 0:
            return np.asarray(np.maximum(relevance * 1.0 * boost, 0.0), dtype=np.float64)
        ctx = context[:, 0] * evidence[0]
        for column, weight in enumerate(evidence[1:], start=1):
            ctx = ctx + context[:, column] * weight
        share = total / max(total + float(weights[0]), 1e-12)
        return np.asarray(np.maximum(relevance * (1.0 + share * (ctx / total - 0.5)) * boost, 0.0), dtype=np.float64)
    w_ctx = np.where(applicable, weights[1:], 0.0)
    total = w_ctx.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    ctx = (context * w_ctx).sum(axis=1) / safe
    share = np.where(total > 0, total / np.maximum(total + weights[0], 1e-12), 0.0)
    return np.asarray(np.maximum(relevance * (1.0 + share * (ctx - 0.5)) * boost, 0.0), dtype=np.float64)


def displayed(strength: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Scores as reported, from the fused strength (which has no ceiling): the strength itself up
    to :data:`SCORE_KNEE`, then rising ever more slowly towards 1 without reaching it, so a score
    keeps the order of the evidence behind it (two memories never tie at a ceiling) and still reads
    as a share of a full match. Below the knee nothing changes, so ``min_score`` keeps its meaning."""
    over = np.maximum(strength - SCORE_KNEE, 0.0)
    head = 1.0 - SCORE_KNEE
    return np.asarray(np.where(strength <= SCORE_KNEE, strength, SCORE_KNEE + head * -np.expm1(-over / head)),
                      dtype=np.float64)


def rrf_score(memory_id: str, source_ranks: Mapping[str, Mapping[str, int]], rrf_k: int) -> float:
    used = [ranks for ranks in source_ranks.values() if ranks]
    if not used:
        return 0.0
    total = reciprocal_rank(memory_id, source_ranks, rrf_k)
    # Dividing by "rank 1 in every source" makes the score comparable with min_score in [0, 1].
    return total / (len(used) / (rrf_k + 1))


def reach(cosines: npt.NDArray[np.float64], similarity_range: tuple[float, float]) -> tuple[float, float]:
    """The similarity range this query's candidates are read in (see :data:`MEANING_REACH`)."""
    low, high = similarity_range
    best = float(cosines.max(initial=-np.inf))
    if np.isfinite(best) and high > low:
        width = high - low
        low = min(low, max(best - MEANING_REACH * width, low - MEANING_LOW_SLACK * width))
    return low, high
