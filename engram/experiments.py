"""A/B tests of ranking strategies: variants assigned per user, compared on logged feedback.

An :class:`Experiment` names its variants, each a table of strategy weights (the shape of
``STRATEGY_WEIGHTS``; ``None`` keeps the user's own, tuned or default) and a share of the users. A
user's variant is fixed by a hash of the experiment's name and the user's id, so every retrieval of
one user ranks the same way, no assignment is stored, and a second experiment reshuffles users
independently of the first. Each logged retrieval records the experiment and variant it ran under;
:func:`report` compares the variants on the feedback those retrievals received, as served: the
NDCG and reciprocal rank of the used memories, and the share of returned memories used.

``Memory(..., experiment=Experiment(...))`` runs one; ``engram tune --experiment NAME`` reports it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engram.config import SIGNALS, STRATEGY_WEIGHTS
from engram.errors import ValidationError
from engram.model import LoggedRetrieval

if TYPE_CHECKING:
    from engram.ext import Store

#: The newest retrievals with feedback read per user for a report.
LOG_LIMIT = 20_000

__all__ = ["Experiment", "ExperimentReport", "Variant", "VariantResult", "logged_settings", "report", "report_store",
           "weights_source"]


@dataclass(frozen=True, slots=True)
class Variant:
    """One arm: ``weights`` by strategy (None: the user's own weights), given to ``share`` of users."""

    name: str
    weights: Mapping[str, Mapping[str, float]] | None = None
    share: float = 1.0

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str) or len(self.name) > 64:
            raise ValidationError("variant.name", "must be a non-empty string of at most 64 characters")
        if not isinstance(self.share, int | float) or not 0 < self.share <= 1_000_000:
            raise ValidationError(f"variants.{self.name}.share",
                                  f"must be a number in (0, 1000000], got {self.share!r}")
        for strategy, weights in (self.weights or {}).items():
            if strategy not in STRATEGY_WEIGHTS:
                raise ValidationError(f"variants.{self.name}.weights.{strategy}",
                                      f"unknown strategy; one of {', '.join(STRATEGY_WEIGHTS)}")
            for signal, value in weights.items():
                if signal not in SIGNALS:
                    raise ValidationError(f"variants.{self.name}.weights.{strategy}.{signal}",
                                          f"unknown signal; one of {', '.join(SIGNALS)}")
                if not isinstance(value, int | float) or not 0.0 <= value <= 1.0 or math.isnan(value):
                    raise ValidationError(f"variants.{self.name}.weights.{strategy}.{signal}",
                                          f"must be a number in [0, 1], got {value!r}")


@dataclass(frozen=True, slots=True)
class Experiment:
    """A named comparison of two or more :class:`Variant` (shares are relative to their sum)."""

    name: str
    variants: tuple[Variant, ...]

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str) or len(self.name) > 64:
            raise ValidationError("experiment.name", "must be a non-empty string of at most 64 characters")
        names = [v.name for v in self.variants]
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValidationError("experiment.variants", "must name at least two variants, each once")

    def assign(self, user_id: str) -> Variant:
        """The variant ``user_id`` is in: stable for the user, independent across experiments."""
        digest = hashlib.blake2b(f"{self.name}\x00{user_id}".encode("utf-8", "surrogatepass"), digest_size=8)
        point = int.from_bytes(digest.digest(), "big") / 2**64 * sum(v.share for v in self.variants)
        for variant in self.variants:
            point -= variant.share
            if point < 0:
                return variant
        return self.variants[-1]


@dataclass(frozen=True, slots=True)
class VariantResult:
    """How one variant's retrievals fared: means over its retrievals with feedback."""

    variant: str
    users: int
    retrievals: int
    ndcg: float
    reciprocal_rank: float
    used_share: float
    #: Standard error of the mean NDCG (0 with fewer than two retrievals).
    ndcg_error: float

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "users": self.users, "retrievals": self.retrievals, "ndcg": self.ndcg,
                "reciprocalRank": self.reciprocal_rank, "usedShare": self.used_share, "ndcgError": self.ndcg_error}


@dataclass(frozen=True, slots=True)
class ExperimentReport:
    experiment: str
    variants: tuple[VariantResult, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "variants": [v.to_dict() for v in self.variants]}


def logged_settings(experiment: Experiment | None, variant: Variant | None) -> dict[str, str]:
    """What a logged retrieval records of the experiment it ran under."""
    if experiment is None or variant is None:
        return {}
    return {"experiment": experiment.name, "variant": variant.name}


def weights_source(configured: bool, variant: Variant | None, strategy: str,
                   tuned: Mapping[str, object] | None) -> str:
    """Where a retrieval's weights came from, as its result and log report it: the caller's config,
    an experiment's variant, the user's tuned weights or the defaults."""
    if configured:
        return "config"
    if variant is not None and variant.weights is not None and strategy in variant.weights:
        return f"variant:{variant.name}"
    return "tuned" if tuned and strategy in tuned else "default"


def report(name: str, logs: Iterable[tuple[str, Sequence[LoggedRetrieval]]]) -> ExperimentReport:
    """Each variant of experiment ``name`` over ``logs`` (user id, that user's retrievals with
    feedback), in the order the variants first appear."""
    rows: dict[str, list[tuple[float, float, float]]] = {}
    users: dict[str, set[str]] = {}
    for user_id, retrievals in logs:
        for entry in retrievals:
            if entry.settings.get("experiment") != name or not entry.items:
                continue
            variant = str(entry.settings.get("variant", ""))
            rows.setdefault(variant, []).append(_served(entry))
            users.setdefault(variant, set()).add(user_id)
    results = []
    for variant, values in rows.items():
        ndcgs = [v[0] for v in values]
        mean = sum(ndcgs) / len(ndcgs)
        spread = (sum((x - mean) ** 2 for x in ndcgs) / (len(ndcgs) - 1)) ** 0.5 if len(ndcgs) > 1 else 0.0
        results.append(VariantResult(
            variant=variant, users=len(users[variant]), retrievals=len(values), ndcg=round(mean, 4),
            reciprocal_rank=round(sum(v[1] for v in values) / len(values), 4),
            used_share=round(sum(v[2] for v in values) / len(values), 4),
            ndcg_error=round(spread / len(ndcgs) ** 0.5, 4),
        ))
    return ExperimentReport(name, tuple(results))


def report_store(store: Store, name: str) -> ExperimentReport:
    """:func:`report` over every user of ``store``."""
    if not isinstance(name, str) or not name:
        raise ValidationError("experiment", "must be the experiment's name")
    return report(name, ((user, store.feedback_log(user, LOG_LIMIT)) for user in store.users()))


def _served(entry: LoggedRetrieval) -> tuple[float, float, float]:
    """NDCG, reciprocal rank of the first used memory, and the share used, in the order served."""
    used = set(entry.used)
    hits = [item.id in used for item in entry.items]
    dcg = sum(1.0 / math.log2(at + 2) for at, hit in enumerate(hits) if hit)
    ideal = sum(1.0 / math.log2(at + 2) for at in range(sum(hits)))
    first = next((at for at, hit in enumerate(hits) if hit), None)
    return (dcg / ideal if ideal else 0.0, 1.0 / (first + 1) if first is not None else 0.0, sum(hits) / len(hits))
