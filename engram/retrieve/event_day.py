"""Time placed by an event the question names rather than by a date: "What did Grandma ask for on
the Tuesday after moving day?", "What did everyone eat the night before the move?", "What did Aisha
find the day after v4.19.0 shipped?". The parser reads no date in them (engram.timeparse sets no
scope), yet the question asks about one day or week, which the event's own day places.

The event's day is read from memory: the user's memory that matches the event's words best
(keyword search, the same index as the keyword source; no second embedding) names it, read against
when it was said as a question's time is read against now ("Jess's wedding is next Saturday", said
on the 14th: the 21st), or else was said on it. The period is then placed against that day as
against a date ("the Tuesday after": the first Tuesday after it; "the night before": the day
before; "the week after": the seven days after; "the weekend before": the last one wholly before
it), and the query reads with that scope, so the scope's rules apply as to any other
(engram.retrieve.in_range: trusted only while its memories match the question as well as a tenth
of the best). The best match can be about something else that shares the event's word ("the week
after the launch" and "Watched the SpaceX launch livestream"); the scope's rules then limit what it
lifts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta

from engram.days import mentioned_days
from engram.model import MemoryRecord, QueryPlan, TimeRange
from engram.timeparse import parse_time_scope
from engram.timeparts import WEEKDAY_NAMES, days_next_to
from engram.timespans import Ctx, day_span

__all__ = ["EVENT_MATCHES", "asked_by_event", "placed_by_event"]

#: How many of the event's keyword matches are read for its day: the best one gives it.
EVENT_MATCHES = 1
_READ = 500  # how much of the matching memory is read for the day it names
_DAYLONG = ("day", "week", "weekend", *WEEKDAY_NAMES)  # the periods placed as they are (timeparts.days_next_to)
_UNITS = (*_DAYLONG, "night", "morning", "afternoon", "evening")
# "the Tuesday after moving day", "the night before the move", "the morning after Jess's wedding".
_BY_EVENT = re.compile(
    r"\bthe\s+(?P<unit>" + "|".join(_UNITS) + r")\s+(?P<op>after|before)\s+(?P<event>(?:[^?!.,;:]|[.:](?=\w)){3,60}?)"
    r"(?=\s*(?:[?!,;]|[.:](?!\w)|$|\b(?:when|did|was|were|is|are|and|or|what|who|how|that)\b))",
    re.IGNORECASE,
)
# Not an event: "the night before last", "the Tuesday after next", "the morning after pill".
_NOT_EVENTS = re.compile(r"(?:last|next|this|that|pill)\b", re.IGNORECASE)


def asked_by_event(query: str) -> tuple[str, str, str] | None:
    """(unit, "after" or "before", the event's words) when ``query`` places its time by an event."""
    m = _BY_EVENT.search(query)
    if m is None or _NOT_EVENTS.match(m.group("event")):
        return None
    return m.group("unit").casefold(), m.group("op").casefold(), m.group("event").strip()


def placed_by_event(
    plan: QueryPlan, search: Callable[[str, int], Sequence[tuple[str, float]]],
    fetch: Callable[[Sequence[str]], Sequence[MemoryRecord]], now: datetime,
) -> QueryPlan:
    """``plan`` with the time scope its event places, when it has none and names one whose day a
    memory gives (``search``: the user's keyword search; ``fetch``: their records by id); else as given."""
    if plan.time_range is not None or now.tzinfo is None:
        return plan
    asked = asked_by_event(plan.text)
    if asked is None:
        return plan
    unit, op, event = asked
    hits = search(event, EVENT_MATCHES)
    found = fetch([hits[0][0]]) if hits else ()
    if not found:
        return plan
    best = found[0]
    ctx = Ctx(now=now, tz=now.tzinfo, today=now.astimezone(now.tzinfo).date())
    try:  # a memory may name a day at the calendar's edge ("31 December 9999")
        first, last = _placed(unit, op, _event_day(best, now))
        start, end = day_span(ctx, first, last)
    except (ValueError, OverflowError):
        return plan
    expression = f"the {unit} {op} {event}"
    return replace(plan, time_range=TimeRange(start=start, end=end, expression=expression), time_focused=True)


def _event_day(record: MemoryRecord, now: datetime) -> date:
    """The day ``record`` places its event on: a day it names, read against when it was said ("Jess's
    wedding is next Saturday", "Movers come on the 17th"), else the day it was said."""
    said = record.created_at.astimezone(now.tzinfo)
    told = parse_time_scope(record.content[:_READ], said)
    if told is not None and not told.vague and told.end - told.start < timedelta(days=2):
        return told.start.astimezone(now.tzinfo).date()
    named = [first for first, _ in mentioned_days(record.content, said) if first != said.date()]
    return named[0] if named else said.date()


def _placed(unit: str, op: str, day: date) -> tuple[date, date]:
    """The days ``unit`` ``op`` the event's ``day`` covers; a night, morning, afternoon or evening is
    its day's."""
    days = days_next_to(unit if unit in _DAYLONG else "day", op == "before", day)
    assert days is not None  # every unit the pattern reads is a day's, a week's, a weekend's or a weekday's
    return days
