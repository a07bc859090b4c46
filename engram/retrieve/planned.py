"""The query's plan (engram.retrieve.understand) read with the user's entity table, within the deadline."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Protocol, TypeVar

from engram.ingest.entity_index import EntityIndex
from engram.model import QueryPlan
from engram.retrieve.budget import Budget
from engram.retrieve.understand import understand

__all__ = ["planned"]

T = TypeVar("T")


class Timed(Protocol):
    """Runs a stage's call and adds its time to the stage's."""

    def __call__(self, name: str, call: Callable[[], T]) -> T: ...


def planned(
    query: str, now: datetime, tuned: Mapping[str, Mapping[str, float]] | None,
    table: Callable[[float | None], EntityIndex], budget: Budget, timed: Timed,
) -> tuple[QueryPlan, EntityIndex]:
    """The plan of ``query`` and the entity table it was read with. ``table`` reads the user's table
    until a deadline. Without the table (still being read at the deadline) the query's names are
    read as mentions, against an empty one."""
    found: EntityIndex | None = budget.optional(
        "entities", lambda: timed("understand", lambda: table(budget.soft)), None)
    plan: QueryPlan | None = None
    if found is not None:
        ready = found
        plan = budget.optional("entities", lambda: timed("understand", lambda: understand(
            query, now=now, known_entities=ready, weights_by_strategy=tuned, deadline=budget.soft)), None)
    index = found if found is not None and plan is not None else EntityIndex()
    if plan is None:
        plan = timed("understand", lambda: understand(query, now=now, known_entities=index, weights_by_strategy=tuned))
    return plan, index
