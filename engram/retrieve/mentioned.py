"""The days a memory speaks of, besides the day it was said: "Dana's appointment with Dr. Patel is
on Dec 1", said on Nov 13, is about Dec 1, and answers "What do I have next week?" asked on Nov 23,
which no memory said in that week can. A time scope points at a memory whose mentioned days fall in
it (:mod:`engram.retrieve.in_range`), and a scope that reaches past now reads the newest memories
for such mentions (the ``mentioned`` source), since nothing said in the future is stored.

Read: a month and a day ("Dec 1", "December 12th", "1 December", with a year or not), a range of
days ("Dec 22-26", "Oct 7-10") or of dates ("Dec 24 to Jan 2"), an ISO date. A date without a year
is the next such day from two months before the day it was said.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta

from engram.model import MemoryRecord, TimeRange
from engram.retrieve.timeparse import MAX_UTC, MIN_UTC, MONTHS, month_number, parse_time_scope
from engram.text import index_terms, query_terms

__all__ = [
    "MENTIONED_LIMIT", "READ_CHARS", "TOLD_WITHIN", "asks_only_about_days", "inside_ids", "mentioned_days",
    "mentions_inside", "named_inside", "reaches_ahead", "told_days",
]

#: The newest memories a scope reaching past now reads for mentioned days.
MENTIONED_LIMIT = 100
#: How long after a past scope ends a memory is read for telling of it: "yesterday", "on Saturday",
#: "last weekend" and "last week" are said within a week.
TOLD_WITHIN = timedelta(days=7)
#: How much of a memory's text is read for dates.
READ_CHARS = 1_000
#: How far before the day it was said a day without a year may be: further back, it is next year's.
_BACK_DAYS = 60

# A month's name; "May" and "March" only capitalised ("we may 5 times", "march 3 miles").
_MONTH_WORD = re.compile(  # the lookahead first lets most positions fail at once (half the time)
    r"(?=[JjFfMmAaSsOoNnDd])\b(?:[Jj]an(?:uary)?|[Ff]eb(?:ruary)?|[Aa]pr(?:il)?|[Jj]une?|[Jj]uly?|[Aa]ug(?:ust)?|[Ss]ep(?:t(?:ember)?)?"
    r"|[Oo]ct(?:ober)?|[Nn]ov(?:ember)?|[Dd]ec(?:ember)?|[Mm]ar|March|May|JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP"
    r"|OCT|NOV|DEC)\b\.?")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+((?:19|20)\d\d)\b)?"
# What follows a month: "Dec 1", "Dec 22-26", "Dec 24 to Jan 2", "December 12th, 2026"
_AFTER = re.compile(
    rf"\s+{_DAY}(?![\d:])(?:\s*(?:-|–|—|to|until|through)\s*(?:([A-Za-z]{{3,9}})\.?\s+)?{_DAY}(?![\d:]))?{_YEAR}")
# What precedes a month: "1 December", "the 4th of December"
_BEFORE = re.compile(rf"(?<![\d/]){_DAY}\s+(?:of\s+)?$")
_ISO = re.compile(r"(?<![\w/.-])((?:19|20)\d\d)-(\d{2})-(\d{2})(?![\w-])")


def mentioned_days(text: str, said: datetime) -> list[tuple[date, date]]:
    """The spans of days ``text`` (its first READ_CHARS characters) names, read against the day it
    was ``said``; a day without a year is the next such day from two months before it was said."""
    text = text[:READ_CHARS]
    if _DIGIT.search(text) is None:  # a generator over the characters cost more than the rest
        return []
    out: list[tuple[date, date]] = []
    read_to = 0  # "Dec 24 to Jan 2": the second month is part of the first one's span
    for m in _MONTH_WORD.finditer(text):
        if m.start() < read_to:
            continue
        month = month_number(m.group().rstrip("."))
        after = _AFTER.match(text, m.end())
        if after is not None:
            day, year = int(after.group(1)), after.group(4)
            end_month = month_number(after.group(2)) if after.group(2) and after.group(2)[:3].casefold() in MONTHS \
                else month
            end_day = int(after.group(3)) if after.group(3) else day
            span = _span(month, day, end_month, end_day, year, said)
            read_to = after.end()
        else:
            before = _BEFORE.search(text, max(0, m.start() - 12), m.start())
            year_after = re.match(_YEAR, text[m.end():])
            span = _span(month, int(before.group(1)), month, int(before.group(1)),
                         year_after.group(1) if year_after else None, said) if before else None
        if span is not None:
            out.append(span)
    for m in _ISO.finditer(text):
        found = _dated(int(m.group(2)), int(m.group(3)), m.group(1), said)
        if found is not None:
            out.append((found, found))
    return out


def _span(month: int, day: int, end_month: int, end_day: int, year: str | None,
          said: datetime) -> tuple[date, date] | None:
    """A span of days; a year given at its end is the end's ("Dec 24 to Jan 2, 2027")."""
    rolls = (end_month, end_day) < (month, day)
    if year:
        end = _dated(end_month, end_day, year, said)
        start = _dated(month, day, str(int(year) - rolls), said)
    else:
        start = _dated(month, day, None, said)
        end = None if start is None else _dated(end_month, end_day, str(start.year + rolls), said)
    if start is None:
        return None
    return (start, end if end is not None and end >= start else start)


def reaches_ahead(time_range: TimeRange | None, now: datetime | None) -> bool:
    """Whether a precise time scope reaches past ``now`` (what days to come are named for)."""
    return time_range is not None and not time_range.vague and now is not None and time_range.end > now


def mentions_inside(record: MemoryRecord, time_range: TimeRange, now: datetime) -> bool:
    """Whether ``record`` names a day inside ``time_range`` that it was not said in.

    * When the scope reaches past ``now``: a day to come ("the appointment is on Dec 1", said on
      Nov 13, answers "What do I have next week?").
    * Said after a bounded scope ended: a day gone by that it tells of (:func:`told_days`; "Leo lost
      his first tooth yesterday", said on Monday, answers "What happened with Leo on Sunday?"). A
      span longer than a week counts only for a scope as long. (The ``mentioned`` source reads what
      was said in the :data:`TOLD_WITHIN` after the scope; other sources find what was said later.)

    A memory said inside the scope is dated by its saying: "I watched the Masters on April 20th",
    said in May, had outranked the answer to "How many hours did I watch last month?" (May).
    """
    if record.created_at > time_range.end:  # an open scope ("before today") holds every day gone by, none
        if time_range.start == MIN_UTC:
            return False
        # Days in the zone the memory was said in (UTC, as stored; a question's ``now`` is read in
        # UTC too): "yesterday" is the day before the one it was said.
        zone = record.created_at.tzinfo
        first, last = time_range.start.astimezone(zone).date(), time_range.end.astimezone(zone).date()
        longest = max(last - first, _WEEK)
        return any(start <= last and end >= first and end - start <= longest
                   for start, end in _read(record, told_days, record.created_at))
    if not reaches_ahead(time_range, now):
        return False
    first, last = time_range.start.date(), time_range.end.date()
    said = record.created_at.date()
    return any(start <= last and end >= first and end >= said
               for start, end in _read(record, mentioned_days, record.created_at))


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


def told_days(text: str, said: datetime) -> list[tuple[date, date]]:
    """The spans of days gone by that ``text`` tells of, read against the day it was ``said``: a
    date named after it passed, or a past sentence's relative time ("yesterday", "last weekend",
    "three days ago", "on Saturday" in "Saturday's install went fine"). A sentence not in the past
    names no day gone ("I'm hiking on Saturday")."""
    text = text[:READ_CHARS]
    out = [(start, end) for start, end in mentioned_days(text, said) if end < said.date()]
    folded = text.casefold()
    if not any(word in folded for word in _TOLD_WORDS) or not _TOLD_CUE.search(text):
        return out
    for sentence in _SENTENCE.split(text):
        if not _TOLD_CUE.search(sentence) or not _PAST.search(sentence) or _NOT_TOLD.search(sentence):
            continue
        scope = parse_time_scope(sentence, said)
        if scope is None or scope.vague or scope.start == MIN_UTC or scope.end == MAX_UTC:
            continue
        first, last = scope.start.astimezone(said.tzinfo).date(), scope.end.astimezone(said.tzinfo).date()
        if last < said.date():
            out.append((first, last))
    return out


#: A span of days gone by that counts for a scope shorter than it: "last weekend" for "on October 31".
_WEEK = timedelta(days=6)
_DIGIT = re.compile(r"\d")
# A sentence that may tell of a day gone by, and one in the past tense; the words are a cheaper test first.
_TOLD_WORDS = ("yesterday", "ago", "last", "previous", "day")
_TOLD_CUE = re.compile(
    r"\b(?:yesterday|ago|last|previous|weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day'?s?)\b", re.IGNORECASE)
_PAST = re.compile(
    r"\b(?:did|was|were|had|went|got|came|took|made|saw|met|ate|lost|won|gave|left|told|said|bought|spent|ran"
    r"|yesterday|ago|last|(?!(?:excit|worri|schedul|plann|book|tir|bor|interest|scar)ed)[a-z]{3,}ed)\b", re.IGNORECASE)
# Days named but not gone by: "booked a table for Friday", "Black Friday", "on Saturday mornings",
# "the last week of the trip".
_NOT_TOLD = re.compile(
    r"\b(?:for|black|good|cyber)\s+(?:this\s+|next\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day(?:s|\s+(?:mornings|afternoons|evenings|nights))\b|\blast\s+(?:day|week|weekend|month|year)\s+of\b",
    re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def inside_ids(records: Sequence[MemoryRecord], time_range: TimeRange, now: datetime) -> set[str]:
    """The ids of ``records`` that name a day inside ``time_range`` (:func:`named_inside`)."""
    return {r.id for r, inside in zip(records, named_inside(records, time_range, now), strict=True) if inside}


def named_inside(records: Sequence[MemoryRecord], time_range: TimeRange, now: datetime) -> list[bool]:
    """Per record said by ``now``, whether it names a day inside ``time_range`` (:func:`mentions_inside`);
    what was said inside a scope gone by is passed over unread (most of a time-scoped question's records)."""
    ahead = reaches_ahead(time_range, now)
    return [r.created_at <= now and (ahead or r.created_at > time_range.end) and mentions_inside(r, time_range, now)
            for r in records]


def _dated(month: int, day: int, year: str | None, said: datetime) -> date | None:
    if year:
        try:
            return date(int(year), month, day)
        except ValueError:
            return None
    # The next such day from two months before it was said: "on Dec 1" said on Nov 13 is this Dec 1,
    # "dinner on May 20" said in November next May, "the match on Oct 20" said on Nov 13 the one gone.
    since = said.date() - timedelta(days=_BACK_DAYS)
    for y in (since.year, since.year + 1, since.year + 2, since.year + 3, since.year + 4):
        try:
            candidate = date(y, month, day)
        except ValueError:
            continue
        if candidate >= since:
            return candidate
    return None


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
