"""Learned strategy weights: fit each query strategy's signal weights to feedback.

A logged retrieval with feedback is one training example: its returned memories with their signal
values, the used ones relevant. Re-scoring them under weights ``w`` (the same formula as ranking,
:func:`engram.retrieve.rank.fuse`) gives a ranking, and its NDCG says
how well ``w`` puts used memories first. Coordinate ascent over the simplex (non-negative weights
summing to 1, as every default strategy's weights do) maximises the mean NDCG, starting from the defaults.

The newest ``holdout`` share of each strategy's examples is held back: tuned weights are kept only
if they beat the defaults on it, so tuning never makes a strategy worse on feedback it did not see.
Holding back the newest (not a random share) asks the question that matters: does what was learned
from the past predict what is used next?
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from engram.config import SIGNALS, STRATEGY_WEIGHTS
from engram.errors import ValidationError
from engram.model import LoggedRetrieval
from engram.retrieve.rank import CONTEXT_SIGNALS, KEYWORD_SIGNAL, RELEVANCE_SIGNAL, fuse, meaning_share
from engram.retrieve.signals import type_boost
from engram.validate import integer, unit

if TYPE_CHECKING:
    from engram.ext import Store

__all__ = ["DEFAULT_HOLDOUT", "MIN_EXAMPLES", "Example", "StrategyFit", "TuneReport", "fit", "ndcg", "tune_user"]

DEFAULT_HOLDOUT = 0.3
MIN_EXAMPLES = 20  # per strategy: fewer and the held-back share is too small to trust
MAX_MIN_EXAMPLES = 1_000_000
LOG_LIMIT = 20_000  # newest logged retrievals with feedback read per tuning run
_STEPS = tuple(i / 40 for i in range(41))  # candidate values of one coordinate
_ROUNDS = 25
_MIN_GAIN = 1e-6

Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Example:
    """One retrieval as tuning sees it: per item, the parts ranking fuses, and relevance.

    Re-scoring with :func:`engram.retrieve.rank.fuse` under other weights reproduces what ranking
    would have scored (the meaning/keyword split of relevance is a setting, not tuned).
    """

    strategy: str
    relevance: Array  # items
    context: Array  # items x len(CONTEXT_SIGNALS)
    applicable: npt.NDArray[np.bool_]  # len(CONTEXT_SIGNALS)
    boost: Array  # items
    relevant: npt.NDArray[np.bool_]

    @classmethod
    def from_log(cls, entry: LoggedRetrieval) -> Example | None:
        """None when the entry cannot teach weights: rrf fusion, or no returned memory was used."""
        settings = entry.settings
        if settings.get("fusion", "signals") != "signals" or not entry.items:
            return None
        used = set(entry.used)
        relevant = np.array([item.id in used for item in entry.items], dtype=bool)
        if not relevant.any():
            return None
        share = meaning_share(str(settings.get("searchType", "hybrid")), float(settings.get("keywordWeight", 0.5)))
        relevance = np.array(
            [item.signals.get(RELEVANCE_SIGNAL, share * item.signals.get("semantic_similarity", 0.0)
                              + (1 - share) * item.signals.get(KEYWORD_SIGNAL, 0.0)) for item in entry.items],
            dtype=np.float64,
        )
        context = np.array([[item.signals.get(s, 0.0) for s in CONTEXT_SIGNALS] for item in entry.items],
                           dtype=np.float64)
        named = settings.get("applicable")
        applicable = np.array(
            [True] * len(CONTEXT_SIGNALS) if not isinstance(named, list) else [s in named for s in CONTEXT_SIGNALS]
        )
        boost = np.array([type_boost(item.kind) for item in entry.items], dtype=np.float64)
        return cls(entry.strategy, relevance, context, applicable, boost, relevant)


class _Batch:
    """Many examples flattened into arrays, so one NDCG evaluation is a few numpy calls."""

    def __init__(self, examples: Sequence[Example]) -> None:
        self.size = len(examples)
        width = len(CONTEXT_SIGNALS)
        self.relevance = np.concatenate([e.relevance for e in examples]) if examples else np.zeros(0)
        self.context = np.concatenate([e.context for e in examples]) if examples else np.zeros((0, width))
        self.applicable = (
            np.concatenate([np.broadcast_to(e.applicable, e.context.shape) for e in examples])
            if examples else np.zeros((0, width), dtype=bool)
        )
        self.boost = np.concatenate([e.boost for e in examples]) if examples else np.zeros(0)
        rel = np.concatenate([e.relevant for e in examples]) if examples else np.zeros(0, dtype=bool)
        self.rel = rel.astype(np.float64)
        lengths = np.array([len(e.relevant) for e in examples], dtype=np.int64)
        self.group = np.repeat(np.arange(self.size), lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if examples else np.zeros(0, dtype=np.int64)
        self.start = starts
        self.position = np.arange(len(self.rel)) - np.repeat(starts, lengths)  # the original rank, for ties
        ideal = np.zeros(self.size)
        for i, e in enumerate(examples):
            ideal[i] = sum(1.0 / math.log2(r + 2) for r in range(int(e.relevant.sum())))
        self.ideal = ideal

    def ndcg(self, weights: Array) -> float:
        if self.size == 0:
            return 0.0
        scores = fuse(self.relevance, self.context, weights, self.applicable, self.boost)
        order = np.lexsort((self.position, -scores, self.group))  # by example, best first, ties as returned
        rank = np.arange(len(order)) - self.start[self.group[order]]
        gains = self.rel[order] / np.log2(rank + 2.0)
        dcg = np.bincount(self.group[order], weights=gains, minlength=self.size)
        return float(np.mean(dcg / self.ideal))


def ndcg(examples: Sequence[Example], weights: Mapping[str, float]) -> float:
    """Mean NDCG of ``examples`` re-ranked under ``weights`` (missing signals weigh 0)."""
    return _Batch(examples).ndcg(_vector(weights))


def _vector(weights: Mapping[str, float]) -> Array:
    return np.array([float(weights.get(s, 0.0)) for s in SIGNALS], dtype=np.float64)


def _with_coordinate(w: Array, k: int, value: float) -> Array:
    """``w`` with coordinate ``k`` set to ``value`` and the rest rescaled to sum to ``1 - value``."""
    out = w.copy()
    rest = float(w.sum() - w[k])
    out[k] = 0.0
    out = out * ((1.0 - value) / rest) if rest > 0 else np.full_like(w, (1.0 - value) / (len(w) - 1))
    out[k] = value
    return out


def _ascend(batch: _Batch, start: Array) -> Array:
    """Coordinate ascent on the simplex: each step keeps every weight >= 0 and their sum at 1."""
    best = start / start.sum() if start.sum() > 0 else np.full(len(SIGNALS), 1.0 / len(SIGNALS))
    best_score = batch.ndcg(best)
    for _ in range(_ROUNDS):
        improved = False
        for k in range(len(SIGNALS)):
            for value in _STEPS:
                candidate = _with_coordinate(best, k, value)
                score = batch.ndcg(candidate)
                if score > best_score + _MIN_GAIN:
                    best, best_score, improved = candidate, score, True
        if not improved:
            break
    clipped: Array = np.clip(best, 0.0, None)  # guards float drift below 0
    return clipped / float(clipped.sum())


@dataclass(frozen=True, slots=True)
class StrategyFit:
    """One strategy's outcome; ``kept`` says whether the tuned weights replace the defaults."""

    strategy: str
    weights: Mapping[str, float]
    defaults: Mapping[str, float]
    train_examples: int
    holdout_examples: int
    train_ndcg: tuple[float, float] = (0.0, 0.0)  # (defaults, tuned)
    holdout_ndcg: tuple[float, float] = (0.0, 0.0)
    kept: bool = False
    reason: str = ""
    evaluated: bool = False  # False when there was too little feedback to fit

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "evaluated": self.evaluated,
            "kept": self.kept,
            "reason": self.reason,
            "weights": {k: round(v, 4) for k, v in self.weights.items()},
            "defaults": dict(self.defaults),
            "trainExamples": self.train_examples,
            "holdoutExamples": self.holdout_examples,
            "trainNdcg": {"default": round(self.train_ndcg[0], 4), "tuned": round(self.train_ndcg[1], 4)},
            "holdoutNdcg": {"default": round(self.holdout_ndcg[0], 4), "tuned": round(self.holdout_ndcg[1], 4)},
        }


@dataclass(frozen=True, slots=True)
class TuneReport:
    user_id: str
    logged: int
    fits: tuple[StrategyFit, ...] = ()
    saved: bool = False
    tuned: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "userId": self.user_id,
            "retrievalsWithFeedback": self.logged,
            "saved": self.saved,
            "strategies": [f.to_dict() for f in self.fits],
        }


def fit(
    examples: Sequence[Example], *, holdout: float = DEFAULT_HOLDOUT, min_examples: int = MIN_EXAMPLES,
    defaults: Mapping[str, Mapping[str, float]] = STRATEGY_WEIGHTS,
) -> list[StrategyFit]:
    """Fit every strategy with enough examples; ``examples`` must be oldest first."""
    if unit("holdout", holdout) in (0.0, 1.0):
        raise ValidationError("holdout", f"must be in (0, 1), got {holdout!r}")  # both ends leave one side empty
    integer("min_examples", min_examples, 2, MAX_MIN_EXAMPLES)
    by_strategy: dict[str, list[Example]] = {}
    for example in examples:
        if example.strategy in defaults:
            by_strategy.setdefault(example.strategy, []).append(example)
    out: list[StrategyFit] = []
    for strategy in sorted(by_strategy):
        group = by_strategy[strategy]
        base = dict(defaults[strategy])
        cut = len(group) - max(1, math.ceil(len(group) * holdout))
        train, held = group[:cut], group[cut:]
        if len(group) < min_examples:
            reason = f"fewer than {min_examples} retrievals with feedback"
            out.append(StrategyFit(strategy, base, base, len(train), len(held), reason=reason))
            continue
        train_batch, held_batch = _Batch(train), _Batch(held)
        start = _vector(base)
        tuned = _ascend(train_batch, start)
        train_scores = (train_batch.ndcg(start), train_batch.ndcg(tuned))
        held_scores = (held_batch.ndcg(start), held_batch.ndcg(tuned))
        kept = held_scores[1] > held_scores[0] + _MIN_GAIN
        weights = dict(zip(SIGNALS, (float(v) for v in tuned), strict=True)) if kept else base
        reason = "beats the defaults on held-back feedback" if kept else "not better than the defaults on held-back"
        out.append(
            StrategyFit(strategy, weights, base, len(train), len(held), train_scores, held_scores, kept, reason, True)
        )
    return out


def tune_user(
    store: Store, user_id: str, *, holdout: float = DEFAULT_HOLDOUT, min_examples: int = MIN_EXAMPLES,
    dry_run: bool = False,
) -> TuneReport:
    """Fit the user's strategies from their feedback log and (unless ``dry_run``) save the kept ones.

    A strategy with enough feedback gets its tuned weights, or goes back to the defaults when they
    do not beat them; one with too little keeps whatever it had.
    """
    log = store.feedback_log(user_id, LOG_LIMIT)
    examples = [e for e in (Example.from_log(entry) for entry in log) if e is not None]
    fits = fit(examples, holdout=holdout, min_examples=min_examples)
    tuned: dict[str, dict[str, float]] = {k: dict(v) for k, v in store.load_weights(user_id).items()}
    for f in fits:
        if f.kept:
            tuned[f.strategy] = dict(f.weights)
        elif f.evaluated:
            tuned.pop(f.strategy, None)
    if not dry_run:
        store.save_weights(user_id, tuned)
    return TuneReport(user_id, len(log), tuple(fits), saved=not dry_run, tuned=tuned)
