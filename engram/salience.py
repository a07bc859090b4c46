"""Salience: how much a memory matters now, derived at read time from what is stored.

``salience = w_importance * importance + w_recency * 0.5 ** (age_days / half_life[kind])
+ w_access * min(1, log1p(access_count) / log1p(access_saturation))``

Nothing here is ever written back. A stored "current salience" that recall updated would feed on
itself (recalled -> more salient -> recalled again) and drift upwards with every read; computing it
from importance, creation time and access count alone keeps it a pure function of the row and
``now``, bounded in [0, 1] because it is a convex combination of three terms in [0, 1].

Age counts from ``created_at``, not from the last access: recency of *use* is already carried,
logarithmically and saturating, by the access term, and counting it twice would let recall
reinforce itself through both terms at once.

Per-kind half-lives (days), chosen for how long each kind stays true and useful:

* message 14: a conversational turn is mostly stale after a couple of weeks;
* episode 30: an event matters for about a month ("what happened last week/month" in the recall modes);
* summary 90: summaries stand in for many messages, so they outlive them by a quarter;
* fact 180: preferences and attributes hold for months but do change;
* procedure 365, document 365, chunk 365: how-tos and reference text stay valid until replaced.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING

from engram.context import context_of
from engram.errors import ConfigError, ValidationError
from engram.model import KINDS, MemoryRecord
from engram.validate import integer, number, to_utc, unit

if TYPE_CHECKING:
    from engram.context import ContextSource

__all__ = [
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_OPTIONS",
    "DEFAULT_SALIENCE",
    "RecallOptions",
    "SalienceConfig",
    "SalienceParts",
    "access_term",
    "check_unit",
    "combined_score",
    "memory_salience",
    "recency",
    "salience",
    "salience_parts",
]

DEFAULT_HALF_LIFE_DAYS: Mapping[str, float] = MappingProxyType(
    {
        "message": 14.0,
        "episode": 30.0,
        "summary": 90.0,
        "fact": 180.0,
        "procedure": 365.0,
        "document": 365.0,
        "chunk": 365.0,
    }
)
_MAX_HALF_LIFE = 36_500.0  # a century: anything longer is "never decays", which weight 0 expresses
_SECONDS_PER_DAY = 86_400.0


def check_unit(name: str, value: float, error: type[ValidationError] = ConfigError) -> float:
    """``value`` as a float if it is a real number in [0, 1]; otherwise ``error`` naming ``name``."""
    return unit(name, value, error)


def _half_life(name: str, value: float) -> float:
    days = number(name, value, 0.0, _MAX_HALF_LIFE, ConfigError)
    if days == 0:
        raise ConfigError(name, f"must be more than 0 days, got {value!r}")
    return days


@dataclass(frozen=True, slots=True)
class SalienceConfig:
    """Weights (each in [0, 1], summing to 1) and decay settings; validated on construction.

    Importance weighs most because it is the one explicit signal a caller gives; access weighs
    least because it is the one signal that retrieval itself produces.
    """

    importance_weight: float = 0.5
    recency_weight: float = 0.3
    access_weight: float = 0.2
    half_life_days: Mapping[str, float] = field(default_factory=lambda: DEFAULT_HALF_LIFE_DAYS, hash=False)
    default_half_life_days: float = 30.0
    access_saturation: int = 50

    def __post_init__(self) -> None:
        weights = [
            check_unit(name, getattr(self, name)) for name in ("importance_weight", "recency_weight", "access_weight")
        ]
        if not math.isclose(sum(weights), 1.0, abs_tol=1e-9):
            # Summing to 1 is what keeps salience inside [0, 1] without clamping.
            raise ConfigError("weights", f"importance, recency and access weights must sum to 1, got {sum(weights)!r}")
        if not isinstance(self.half_life_days, Mapping):
            raise ConfigError("half_life_days", "must be a mapping of kind -> days")
        # Overrides merge onto the defaults, so {"fact": 90} does not silently reset the other kinds.
        checked = dict(DEFAULT_HALF_LIFE_DAYS)
        for kind, days in self.half_life_days.items():
            if kind not in KINDS:
                raise ConfigError("half_life_days", f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
            checked[kind] = _half_life(f"half_life_days[{kind}]", days)
        # A private read-only copy: a caller mutating their dict later must not change a frozen config.
        object.__setattr__(self, "half_life_days", MappingProxyType(checked))
        _half_life("default_half_life_days", self.default_half_life_days)
        integer("access_saturation", self.access_saturation, 1, 1_000_000, ConfigError)

    def half_life(self, kind: str) -> float:
        return self.half_life_days.get(kind, self.default_half_life_days)

    def max_half_life(self, kinds: tuple[str, ...] | None = None) -> float:
        """The slowest decay among ``kinds`` (all kinds when None): a bound on anyone's recency."""
        pool = KINDS if kinds is None else kinds
        return max([self.half_life(k) for k in pool] or [self.default_half_life_days])


DEFAULT_SALIENCE = SalienceConfig()


@dataclass(frozen=True, slots=True)
class SalienceParts:
    """The three terms (each in [0, 1]) and their weighted sum."""

    importance: float
    recency: float
    access: float
    value: float


def _now(now: datetime | str | None) -> datetime:
    return datetime.now(UTC) if now is None else to_utc(now, "now")


def recency(age_days: float, half_life_days: float) -> float:
    """Exponential decay in [0, 1]; a future creation time (clock skew) counts as age 0."""
    return float(0.5 ** (max(0.0, age_days) / half_life_days))


def access_term(access_count: int, saturation: int) -> float:
    """Logarithmic and capped: the 50th access adds far less than the 2nd, and none add past 1."""
    return min(1.0, math.log1p(max(0, access_count)) / math.log1p(saturation))


def salience_parts(
    record: MemoryRecord, *, now: datetime | str | None = None, config: SalienceConfig = DEFAULT_SALIENCE
) -> SalienceParts:
    when = _now(now)
    age_days = (when - record.created_at).total_seconds() / _SECONDS_PER_DAY
    importance = min(1.0, max(0.0, record.importance))  # stored values are validated; this is belt and braces
    fresh = recency(age_days, config.half_life(record.kind))
    used = access_term(record.access_count, config.access_saturation)
    value = config.importance_weight * importance + config.recency_weight * fresh + config.access_weight * used
    # Rounding in the weighted sum can land a hair outside [0, 1]; the bound is part of the contract.
    return SalienceParts(importance, fresh, used, min(1.0, max(0.0, value)))


def salience(
    record: MemoryRecord, *, now: datetime | str | None = None, config: SalienceConfig = DEFAULT_SALIENCE
) -> float:
    """Salience in [0, 1] of ``record`` at ``now`` (default: the current time)."""
    return salience_parts(record, now=now, config=config).value


def memory_salience(
    source: ContextSource,
    memory_id: str,
    *,
    user_id: str,
    now: datetime | str | None = None,
    config: SalienceConfig | None = None,
) -> float:
    """Salience of one stored memory of ``user_id``; raises MemoryNotFound if it is not theirs."""
    context = context_of(source)
    record = context.get(context.user(user_id), memory_id)
    return salience(record, now=now, config=config or DEFAULT_SALIENCE)


# -- salience against relevance (the recall options) ------------------------------------
@dataclass(frozen=True, slots=True)
class RecallOptions:
    """The recall options (the recall-modes spec's ``MemoryRetrieverOptions``) plus salience settings; validated.

    Kept beside salience because the weights say how salience may trade against relevance; see
    :func:`combined_score` for why that trade is bounded.

    ``min_similarity`` is a cosine floor. Its default, None, is the level at which the store's
    embedder calls texts unrelated (the bottom of its ``similarity_range``; MiniLM 0.15), not the
    spec's 0.3: that is its own embedder's scale, and with MiniLM "what do I know about databases?"
    is 0.23 from "Our MySQL server was slow when running reports", which 0.3 dropped.
    """

    similarity_weight: float = 0.6
    salience_weight: float = 0.4
    min_similarity: float | None = None
    candidate_multiplier: int = 3
    track_access: bool = True
    salience: SalienceConfig = DEFAULT_SALIENCE

    def __post_init__(self) -> None:
        for name in ("similarity_weight", "salience_weight"):
            check_unit(name, getattr(self, name))
        if self.min_similarity is not None:
            check_unit("min_similarity", self.min_similarity)
        if self.similarity_weight == 0:
            # With no weight on similarity every score is 0 and relevance stops meaning anything.
            raise ConfigError("similarity_weight", "must be > 0")
        integer("candidate_multiplier", self.candidate_multiplier, 1, 100, ConfigError)
        if not isinstance(self.track_access, bool):
            raise ConfigError("track_access", f"must be a bool, got {self.track_access!r}")
        if not isinstance(self.salience, SalienceConfig):
            raise ConfigError("salience", "must be a SalienceConfig")

    @property
    def max_lift(self) -> float:
        """The most salience can multiply a relevance score by: ``(sw + salw) / sw``."""
        return (self.similarity_weight + self.salience_weight) / self.similarity_weight


DEFAULT_OPTIONS = RecallOptions()


def combined_score(similarity: float, salience_value: float, options: RecallOptions = DEFAULT_OPTIONS) -> float:
    """The relevant-mode score with salience scaling similarity instead of adding to it.

    The spec's ``0.6 * similarity + 0.4 * salience`` lets a salience of 1 add 0.4, more than the 0.33
    separating similarity 0.9 from 0.35: an important but barely related memory would beat the one
    that answers the query. Here ``similarity * (0.6 + 0.4 * salience)``: with salience in [0, 1] a
    score lies in ``[sw * sim, (sw + salw) * sim]``, so a memory more than :attr:`max_lift` (5/3 by
    default) times as similar as another always outranks it, while between similar matches salience
    still breaks the tie. The spec's weights stay the defaults.
    """
    return similarity * (options.similarity_weight + options.salience_weight * salience_value)
