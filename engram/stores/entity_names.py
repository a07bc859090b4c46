"""What an entity index reads from a store: every entity, but aliases only up to a budget.

A user may hold 10,000 entities of 100 aliases each; an index keeps at most 20,000 names
(:mod:`engram.ingest.entity_index`), so decoding the other ~990,000 aliases (~350 ms on SQLite) on
the first query after each write bought nothing. Both backends' ``entity_names`` read the names in
one query and the aliases page by page, stopping once the budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from engram.model import Entity

__all__ = ["with_aliases"]

FIRST_PAGE = 16  # entities per alias page; each page is twice the last


def with_aliases(
    rows: Iterable[Sequence[Any]], page: Callable[[str, int], Iterable[Sequence[Any]]], max_aliases: int
) -> list[Entity]:
    """``rows`` (id, type, name; in id order) as entities, with the aliases ``page(after, n)`` reads
    (id and alias list of the next ``n`` entities with aliases whose id sorts after ``after``),
    until ``max_aliases`` aliases are read."""
    aliases: dict[str, tuple[str, ...]] = {}
    left, after, size = max_aliases, "", FIRST_PAGE
    while left > 0:
        batch = list(page(after, size))
        for entity_id, names in batch:
            kept = tuple(names[:left])
            aliases[entity_id] = kept
            left -= len(kept)
            if left <= 0:
                break
        if len(batch) < size:
            break
        after, size = batch[-1][0], size * 2
    return [Entity(r[0], r[1], r[2], aliases.get(r[0], ())) for r in rows]
