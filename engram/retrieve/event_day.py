"""Time placed by an event the question names rather than by a date: "What did Grandma ask for on
the Tuesday after moving day?", "What did everyone eat the night before the move?", "What did Aisha
find the day after v4.19.0 shipped?", "What did Marc climb two days before the competition?". The
parser reads no date in them (engram.timeparse sets no scope), yet the question asks about one day
or week, which the event's own day places.

The event's day is read from memory: the user's memory that matches the event's words best names
it, read against when it was said as a question's time is read against now ("Jess's wedding is next
Saturday", said on the 14th: the 21st), or else was said on it. The match is the keyword search's
(the same index as the keyword source) when its best hit stands out from the next ones: the event's
words pick one memory ("v4.19.0 shipped"). When they do not (no hit, or hits about as good as each
other: "Dad's surgery" matching only Dad's name, "moving day" matching every "day"), the memory
closest in meaning to the event's words gives it ("Hospital phoned. They've moved the op. Now Monday
9th"), at the cost of embedding them. The period is then placed against that day as against a date
("the Tuesday after": the first Tuesday after it; "the night before": the day before; "the week
after": the seven days after; "the weekend before": the last one wholly before it; "two days
before": that one day), and the query reads with that scope, so the scope's rules apply as to any
other (engram.retrieve.in_range: trusted only while its memories match the question as well as a
tenth of the best). The best match can be about something else that shares the event's word ("the
week after the launch" and "Watched the SpaceX launch livestream"); the scope's rules then limit
what it lifts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta

from engram.days import mentioned_days
from engram.ext import RetrievalReads, Vector
from engram.model import Filters, MemoryRecord, QueryPlan, TimeRange
from engram.retrieve.signals import calibrated_similarity
from engram.text import memory_terms, query_terms
from engram.timeparse import parse_time_scope
from engram.timeparts import WEEKDAY_NAMES, days_next_to
from engram.timespans import Ctx, day_span, number

__all__ = ["CLOSE", "EVENT_MATCHES", "STANDS_OUT", "asked_by_event", "event_scope", "placed_by_event"]

#: How many of the event's keyword matches are read: the best one gives its day when it scores at
#: least ``STANDS_OUT`` times the last of them, else the memory closest in meaning does.
EVENT_MATCHES = 3
STANDS_OUT = 1.25
#: How close in meaning (on the embedder's similarity scale: 0 unrelated, 1 a paraphrase) a memory
#: must be to the event's words to give its day: "the regatta" is not placed by "Pizza tonight?".
CLOSE = 0.3
_READ = 500  # how much of the matching memory is read for the day it names
_DAYLONG = ("day", "week", "weekend", *WEEKDAY_NAMES)  # the periods placed as they are (timeparts.days_next_to)
_UNITS = (*_DAYLONG, "night", "morning", "afternoon", "evening")
# "the Tuesday after moving day", "the night before the move", "the morning after Jess's wedding".
_COUNT = r"(?<![\d.,])(?P<n>\d{1,2}|(?a:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+couple\s+of|a))"
_WHEN = (r"\b(?:the\s+(?P<unit>" + "|".join(_UNITS) + r")|" + _COUNT + r"\s+(?P<units>day|week)s?)"
         r"\s+(?P<op>after|before)\s+(?P<event>[^\s?!.,;:](?:[^?!.,;:]|[.:](?=\w)){2,59}?)")
_BY_EVENT = re.compile(
    _WHEN + r"(?=\s*(?:[?!,;]|[.:](?!\w)|$|\b(?:when|did|was|were|is|are|and|or|what|who|how|that)\b))",
    re.IGNORECASE,
)
# "the day after she was cleared by her physio": an event whose subject alone would stand before its verb.
_BY_CLAUSE = re.compile(
    _WHEN + r"(?=\s*(?:[?!,;]|[.:](?!\w)|$|\b(?:when|and|or|what|who|how|that)\b))", re.IGNORECASE)
_SUBJECTS = frozenset(["i", "you", "he", "she", "it", "we", "they"])
# Not an event: "the night before last", "the Tuesday after next", "the morning after pill".
_NOT_EVENTS = re.compile(r"(?:last|next|this|that|pill|now|today|tonight|then)\b", re.IGNORECASE)


def asked_by_event(query: str) -> tuple[str, str, str, int] | None:
    """(unit, "after" or "before", the event's words, how many units) when ``query`` places its
    time by an event."""
    m = _BY_EVENT.search(query)
    if m is not None and m.group("event").strip().casefold() in _SUBJECTS:
        m = _BY_CLAUSE.search(query)
    if m is None or _NOT_EVENTS.match(m.group("event")):
        return None
    n = 1 if m.group("n") is None else number(m.group("n"))
    unit = (m.group("unit") or m.group("units")).casefold()
    return unit, m.group("op").casefold(), m.group("event").strip(), n


def event_scope(
    plan: QueryPlan, reads: RetrievalReads, user_id: str, filters: Filters, now: datetime,
    embed: Callable[[str], Vector] | None, scale: Callable[[], tuple[float, float]],
) -> QueryPlan:
    """:func:`placed_by_event` over ``user_id``'s memories in ``reads`` that ``filters`` lets through:
    ``embed`` gives the event's words their vector (None: a keyword-only search; the engine waits
    for it no longer than for the question's own, so the sources keep their share of the deadline),
    ``scale`` the embedder's similarity range, read only if they are embedded."""

    def near(text: str, n: int) -> list[tuple[str, float]]:
        assert embed is not None
        hits = reads.vector_search(user_id, embed(text), n, filters)
        if not hits:
            return []
        reach = scale()
        return [(i, calibrated_similarity(cosine, reach)) for i, cosine in hits]

    return placed_by_event(plan, lambda text, n: reads.keyword_search(user_id, text, n, filters),
                           lambda ids: reads.fetch(user_id, list(ids)), now, None if embed is None else near)


def placed_by_event(
    plan: QueryPlan, search: Callable[[str, int], Sequence[tuple[str, float]]],
    fetch: Callable[[Sequence[str]], Sequence[MemoryRecord]], now: datetime,
    near: Callable[[str, int], Sequence[tuple[str, float]]] | None = None,
) -> QueryPlan:
    """``plan`` with the time scope its event places, when it has none and names one whose day a
    memory gives (``search``: the user's keyword search; ``near``: their closest memories in meaning,
    scored on the embedder's similarity scale, None for a keyword-only search; ``fetch``: their
    records by id); else as given."""
    if plan.time_range is not None or now.tzinfo is None:
        return plan
    asked = asked_by_event(plan.text)
    if asked is None:
        return plan
    unit, op, event, n = asked
    best = _event_memory(event, search, fetch, near)
    if best is None:
        return plan
    ctx = Ctx(now=now, tz=now.tzinfo, today=now.astimezone(now.tzinfo).date())
    try:  # a memory may name a day at the calendar's edge ("31 December 9999")
        first, last = _placed(unit, op, _event_day(best, now), n)
        start, end = day_span(ctx, first, last)
    except (ValueError, OverflowError):
        return plan
    expression = f"the {unit} {op} {event}" if n == 1 else f"{n} {unit}s {op} {event}"
    return replace(plan, time_range=TimeRange(start=start, end=end, expression=expression), time_focused=True)


def _event_memory(
    event: str, search: Callable[[str, int], Sequence[tuple[str, float]]],
    fetch: Callable[[Sequence[str]], Sequence[MemoryRecord]],
    near: Callable[[str, int], Sequence[tuple[str, float]]] | None,
) -> MemoryRecord | None:
    """The memory that names the event: the keyword search's best when it stands out, else the
    closest in meaning when close enough, else the keyword search's best; None when nothing matches.
    A hit whose text holds none of the event's words matched by its speaker's name alone ("Dad's
    surgery" and Dad's "Only to the shop."): it says nothing of the event and is not counted."""
    hits = list(search(event, EVENT_MATCHES))
    found = {record.id: record for record in fetch([i for i, _ in hits])} if hits else {}
    asked = set(query_terms(event))
    own = [(i, score) for i, score in hits if i in found and asked & set(_terms(found[i]))]
    if near is not None and not _stands_out(own):
        close = [i for i, similarity in near(event, 1) if similarity >= CLOSE]
        if close:  # often one of the keyword hits, already read
            closest = [found[close[0]]] if close[0] in found else fetch(close[:1])
            if closest:
                return closest[0]
    return found[own[0][0]] if own else None


def _terms(record: MemoryRecord) -> list[str]:
    """The terms ``record`` is found by, its speaker's name left out: its text's and its fields'."""
    return memory_terms(record.content, None, record.subject, record.predicate, record.object, record.trigger,
                        record.action)


def _stands_out(hits: Sequence[tuple[str, float]]) -> bool:
    """Whether the best keyword hit is the event's own: alone, or well above the last one read that
    holds the event's words."""
    return bool(hits) and (len(hits) == 1 or hits[0][1] >= STANDS_OUT * hits[-1][1])


def _event_day(record: MemoryRecord, now: datetime) -> date:
    """The day ``record`` places its event on: a day it names, read against when it was said ("Jess's
    wedding is next Saturday", "Movers come on the 17th"), else the day it was said."""
    said = record.created_at.astimezone(now.tzinfo)
    told = parse_time_scope(record.content[:_READ], said)
    if told is not None and not told.vague and told.end - told.start < timedelta(days=2):
        return told.start.astimezone(now.tzinfo).date()
    named = [first for first, _ in mentioned_days(record.content, said) if first != said.date()]
    return named[0] if named else said.date()


def _placed(unit: str, op: str, day: date, n: int = 1) -> tuple[date, date]:
    """The days ``unit`` ``op`` the event's ``day`` covers; a night, morning, afternoon or evening is
    its day's."""
    days = days_next_to(unit if unit in _DAYLONG else "day", op == "before", day, n)
    assert days is not None  # every unit the pattern reads is a day's, a week's, a weekend's or a weekday's
    return days
