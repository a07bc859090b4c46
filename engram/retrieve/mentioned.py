"""Whether a memory tells of a day in a question's time scope, besides the day it was said:
"Dana's appointment with Dr. Patel is on Dec 1", said on Nov 13, answers "What do I have next
week?" asked on Nov 23, which no memory said in that week can; "Leo lost his first tooth
yesterday", said on Monday, answers "What happened with Leo on Sunday?". A time scope points at
such a memory (:mod:`engram.retrieve.in_range`), and the ``mentioned`` source finds them through
the days each store indexes when a memory is written (:mod:`engram.days`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta, tzinfo

from engram.days import mentioned_days, told_days
from engram.model import MemoryRecord, TimeRange
from engram.text import index_terms, query_terms
from engram.timeparse import MIN_UTC

__all__ = [
    "MENTIONED_LIMIT", "asks_only_about_days", "inside_ids", "mentions_inside", "named_inside", "reaches_ahead",
]

#: The memories the ``mentioned`` source reads, newest first, among those that name a day in the scope.
MENTIONED_LIMIT = 100


def reaches_ahead(time_range: TimeRange | None, now: datetime | None) -> bool:
    """Whether a precise time scope reaches past ``now`` (what days to come are named for)."""
    return time_range is not None and not time_range.vague and now is not None and time_range.end > now


def mentions_inside(record: MemoryRecord, time_range: TimeRange, now: datetime) -> bool:
    """Whether ``record`` names a day inside ``time_range`` that it was not said in.

    * When the scope reaches past ``now``: a day to come ("the appointment is on Dec 1", said on
      Nov 13, answers "What do I have next week?").
    * Said after a bounded scope ended: a day gone by that it tells of (:func:`engram.days.told_days`; "Leo lost
      his first tooth yesterday", said on Monday, answers "What happened with Leo on Sunday?"). A
      span longer than a week counts only for a scope as long.

    A memory said inside the scope is dated by its saying: "I watched the Masters on April 20th",
    said in May, had outranked the answer to "How many hours did I watch last month?" (May).
    """
    # Days are the asker's, in the zone of ``now``: the scope's, and those a memory names or tells of
    # ("yesterday" is the day before the one it was said on, there).
    zone = now.tzinfo
    first, last = _local_day(time_range.start, zone), _local_day(time_range.end, zone)
    try:
        said = record.created_at.astimezone(zone)
    except OverflowError:  # said on the calendar's first or last day, in a zone that leaves it
        return False
    if record.created_at > time_range.end:  # an open scope ("before today") holds every day gone by, none
        if time_range.start == MIN_UTC:
            return False
        longest = max(last - first, _WEEK)
        return any(start <= last and end >= first and end - start <= longest
                   for start, end in _read(record, told_days, said))
    if not reaches_ahead(time_range, now):
        return False
    return any(start <= last and end >= first and end >= said.date()
               for start, end in _read(record, mentioned_days, said))


def _local_day(at: datetime, zone: tzinfo | None) -> date:
    """The day ``at`` falls on in ``zone``; an open end ("before today") stays the calendar's end."""
    try:
        return at.astimezone(zone).date()
    except OverflowError:
        return date.min if at.year == 1 else date.max


Days = tuple[tuple[date, date], ...]
#: Days read per memory, by its content's hash, when it was said and how: a question reads the same
#: memories in its ``mentioned`` source and in its ranking, and the next question reads them again
#: (a past-scoped question over long memories had paid ~1 ms more). It holds no text.
_READ_DAYS: dict[tuple[str, datetime, timedelta | None, str], Days] = {}
_READ_DAYS_SIZE = 4_096
_READ_LOCK = threading.Lock()


def _read(record: MemoryRecord, how: Callable[[str, datetime], list[tuple[date, date]]], said: datetime) -> Days:
    # Equal instants in two zones are equal keys, but not the same days: the offset joins the key.
    key = (record.content_hash, said, said.utcoffset(), how.__name__)
    with _READ_LOCK:
        found = _READ_DAYS.get(key)
    if found is None:
        found = tuple(how(record.content, said))
        with _READ_LOCK:
            if len(_READ_DAYS) >= _READ_DAYS_SIZE:
                del _READ_DAYS[next(iter(_READ_DAYS))]  # the oldest read
            _READ_DAYS[key] = found
    return found


#: A span of days gone by that counts for a scope shorter than it: "last weekend" for "on October 31".
_WEEK = timedelta(days=6)
def inside_ids(records: Sequence[MemoryRecord], time_range: TimeRange, now: datetime) -> set[str]:
    """The ids of ``records`` that name a day inside ``time_range`` (:func:`named_inside`)."""
    return {r.id for r, inside in zip(records, named_inside(records, time_range, now), strict=True) if inside}


def named_inside(records: Sequence[MemoryRecord], time_range: TimeRange, now: datetime) -> list[bool]:
    """Per record said by ``now``, whether it names a day inside ``time_range`` (:func:`mentions_inside`);
    what was said inside a scope gone by is passed over unread (most of a time-scoped question's records)."""
    ahead = reaches_ahead(time_range, now)
    return [r.created_at <= now and (ahead or r.created_at > time_range.end) and mentions_inside(r, time_range, now)
            for r in records]


# Words that ask about days without saying what happens in them ("What do I have next week?",
# "What's coming up this month?", "Anything due tomorrow?").
_ONLY_DAYS = frozenset(index_terms(
    "have having happen happens happening coming come up due planned plan plans schedule scheduled calendar agenda "
    "going on anything something everything thing things need remember remind going"
))


def asks_only_about_days(query: str) -> bool:
    """Whether ``query`` says nothing of what it asks about but when (its terms are all time or
    asking words): then whatever names a day in its scope answers it, else only as far as it is
    relevant ("What's the Acme delivery next week?" is not answered by Leo's field trip)."""
    return not [t for t in query_terms(query) if t not in _ONLY_DAYS and t not in _TIME_TERMS]


_TIME_TERMS = frozenset(index_terms(
    "next last this week weekend month year day days tomorrow today tonight morning evening afternoon monday "
    "tuesday wednesday thursday friday saturday sunday coming upcoming soon january february march april may june "
    "july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec"
))
