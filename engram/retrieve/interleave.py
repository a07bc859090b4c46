"""Two orders of the same items merged as an interleave strategy says: result selection's
``interleave`` and the prompt's presentation order share it."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from engram.errors import ConfigError

__all__ = ["INTERLEAVE_STRATEGIES", "interleave_orders"]

T = TypeVar("T")

INTERLEAVE_STRATEGIES = ("alternate", "score_first", "recency_first")


def interleave_orders(
    by_score: Sequence[T], by_recency: Sequence[T], strategy: str, k: int, *, key: Callable[[T], Hashable] = id,
    ratio: float | None = None,
) -> list[T]:
    """Up to ``k`` items taken from two orders of the same items as ``strategy`` says, each ``key``
    once: the one interleaving behind :func:`engram.retrieve.select.interleave` and the prompt's presentation order.

    ``ratio`` is the retrieval policy's "ratio for weighted strategies": the share of ``alternate``'s
    picks taken from the score order (None: 0.5, strict alternation; 0.75: three best, one newest).
    Pick ``i`` comes from the score order while fewer than ``ceil((i + 1) * ratio)`` did, so the
    first pick is the best one whenever ``ratio > 0``.
    """
    if strategy not in INTERLEAVE_STRATEGIES:
        raise ConfigError(
            "interleave", f"must be one of {', '.join(INTERLEAVE_STRATEGIES)}; got {strategy!r}"
        )
    share = 0.5 if ratio is None else ratio
    out: list[T] = []
    used: set[Hashable] = set()
    from_score = 0
    for i in range(max(0, k)):
        if strategy == "alternate":
            # The small slack keeps float products such as 3 * 0.1 from rounding up a whole pick.
            take_score = from_score < math.ceil((i + 1) * share - 1e-9)
            source = by_score if take_score else by_recency
            from_score += take_score
        else:
            source = by_score if strategy == "score_first" else by_recency
        pick = next((item for item in source if key(item) not in used), None)
        if pick is None:
            break  # every item is used
        used.add(key(pick))
        out.append(pick)
    return out
