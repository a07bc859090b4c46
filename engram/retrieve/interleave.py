"""Two orders of the same items merged as an interleave strategy says: result selection's
``interleave`` and the prompt's presentation order share it."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from engram.errors import ConfigError

__all__ = ["INTERLEAVE_STRATEGIES", "interleave_orders"]

T = TypeVar("T")

INTERLEAVE_STRATEGIES = ("alternate", "score_first", "recency_first")


def interleave_orders(
    by_score: Sequence[T], by_recency: Sequence[T], strategy: str, k: int, *, key: Callable[[T], Hashable] = id
) -> list[T]:
    """Up to ``k`` items taken from two orders of the same items as ``strategy`` says, each ``key``
    once: the one interleaving behind :func:`engram.retrieve.select.interleave` and the prompt's presentation order."""
    if strategy not in INTERLEAVE_STRATEGIES:
        raise ConfigError(
            "interleave", f"must be one of {', '.join(INTERLEAVE_STRATEGIES)}; got {strategy!r}"
        )
    out: list[T] = []
    used: set[Hashable] = set()
    for i in range(max(0, k)):
        if strategy == "alternate":
            source = by_score if i % 2 == 0 else by_recency
        else:
            source = by_score if strategy == "score_first" else by_recency
        pick = next((item for item in source if key(item) not in used), None)
        if pick is None:
            break  # every item is used
        used.add(key(pick))
        out.append(pick)
    return out
