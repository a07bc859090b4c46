"""Ranking metrics with binary relevance, as LongMemEval scores retrieval.

Each takes a ranking (ids, best first; duplicates are the caller's business — see :func:`dedupe`),
the gold ids and a cutoff ``k``, and returns a value in [0, 1]:

- ``recall_all_at_k``: 1.0 if every gold id is in the top k, else 0.0;
- ``recall_any_at_k``: 1.0 if at least one gold id is in the top k, else 0.0;
- ``recall_at_k``: the share of gold ids in the top k (LoCoMo's evidence recall);
- ``ndcg_any_at_k``: DCG / IDCG with DCG = sum over gold ids at 1-based rank r <= k of
  1 / log2(r + 1), and IDCG the same sum for min(|gold|, k) gold ids placed at ranks 1, 2, ...

The DCG here is the textbook one. LongMemEval's reference code discounts rank 2 by log2(2) = 1
(not log2(3)), so its nDCG is slightly higher whenever a hit sits at rank 2 or below; recall is
identical. Empty gold has no meaningful score, so it raises rather than yielding a misleading 0 or 1.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Sequence
from typing import TypeVar

__all__ = ["dedupe", "ndcg_any_at_k", "recall_all_at_k", "recall_any_at_k", "recall_at_k"]

T = TypeVar("T", bound=Hashable)


def _check(gold: Collection[object], k: int) -> None:
    if not gold:
        raise ValueError("gold is empty: the metric is undefined")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def recall_all_at_k(ranked: Sequence[T], gold: Collection[T], k: int) -> float:
    _check(gold, k)
    top = set(ranked[:k])
    return 1.0 if all(g in top for g in gold) else 0.0


def recall_any_at_k(ranked: Sequence[T], gold: Collection[T], k: int) -> float:
    _check(gold, k)
    top = set(ranked[:k])
    return 1.0 if any(g in top for g in gold) else 0.0


def recall_at_k(ranked: Sequence[T], gold: Collection[T], k: int) -> float:
    _check(gold, k)
    top = set(ranked[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def ndcg_any_at_k(ranked: Sequence[T], gold: Collection[T], k: int) -> float:
    _check(gold, k)
    wanted = set(gold)
    dcg = sum(1.0 / math.log2(rank + 2) for rank, item in enumerate(ranked[:k]) if item in wanted)
    idcg = sum(1.0 / math.log2(rank + 2) for rank in range(min(len(wanted), k)))
    return dcg / idcg


def dedupe(items: Iterable[T]) -> list[T]:
    """First occurrences in order: turn hits mapped to sessions keep the rank of their best turn."""
    return list(dict.fromkeys(items))
