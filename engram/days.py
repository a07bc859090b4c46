"""The days a text names, read against the day it was said: "the appointment is on Dec 1", said on
Nov 13, names Dec 1; "Leo lost his first tooth yesterday", said on Monday, tells of Sunday.

Read: a month and a day ("Dec 1", "December 12th", "1 December", with a year or not), a range of
days ("Dec 22-26", "Oct 7-10") or of dates ("Dec 24 to Jan 2"), an ISO date; in a sentence in the
past tense, a relative day ("yesterday", "last weekend", "three days ago", "Saturday's install").
A date without a year is the next such day from two months before the day it was said.

Stores index the days each memory names (:func:`indexed_days`) when it is written, so a question
about a day finds what told of it whenever it was said; retrieval decides what counts
(:mod:`engram.retrieve.mentioned`).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

from engram.timeparse import MAX_UTC, MIN_UTC, MONTHS, month_number, parse_time_scope
from engram.timeparts import SHORT_WEEKDAY
from engram.timespans import WEEKDAYS

__all__ = [
    "INDEXED_SPAN", "MAX_INDEXED_DAYS", "MAX_READ_SPAN", "READ_CHARS", "indexed_days", "mentioned_days",
    "names_a_month", "names_a_quarter", "told_days",
]

#: The longest span of days a store indexes: "last month" and "closed Nov 20 to Jan 5" are, "last
#: year" is not (only the other sources find it, for the scopes as long that it counts for).
INDEXED_SPAN = timedelta(days=92)
#: The longest span of days a store reads for the memories that name one (a year and a day).
MAX_READ_SPAN = timedelta(days=366)
#: At most this many days are indexed per memory (a year's calendar pasted in is not a day's news).
MAX_INDEXED_DAYS = 200

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
    for m in _ISO.finditer(text) if "-" in text else ():  # most texts hold no "-": no scan
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


def told_days(text: str, said: datetime) -> list[tuple[date, date]]:
    """The spans of days gone by that ``text`` tells of, read against the day it was ``said``: a
    date named after it passed, or a past sentence's relative time ("yesterday", "last weekend",
    "three days ago", "on Saturday" in "Saturday's install went fine"). A sentence not in the past
    names no day gone ("I'm hiking on Saturday")."""
    text = text[:READ_CHARS]
    return [(start, end) for start, end in mentioned_days(text, said) if end < said.date()] + _told_in_words(text, said)


def _told_in_words(text: str, said: datetime) -> list[tuple[date, date]]:
    """The spans of days gone by that the past sentences of ``text`` tell of without a date: in
    relative words, or by a month or quarter named whole."""
    return _relative(text, said) + _past_months(text, said) + _past_quarters(text, said)


def _relative(text: str, said: datetime) -> list[tuple[date, date]]:
    """The spans of days gone by that the past sentences of ``text`` tell of in words relative to
    the day it was ``said`` ("yesterday", "last weekend", "three days ago")."""
    out: list[tuple[date, date]] = []
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


def shortens_a_day(text: str) -> bool:
    """Whether ``text`` (its first READ_CHARS characters) holds a day as chats shorten it ("yday",
    "fri", "sat"): what the days' index reads since it reads them, read again for stored memories."""
    return _SHORTENED.search(text[:READ_CHARS]) is not None


def names_a_quarter(text: str) -> bool:
    """Whether ``text`` (its first READ_CHARS characters) names a quarter ("Q3", "Q3 2026")."""
    return _QUARTER.search(text[:READ_CHARS]) is not None


def names_a_month(text: str) -> bool:
    """Whether ``text`` (its first READ_CHARS characters) names a month by its whole name."""
    return _WHOLE_MONTH.search(text[:READ_CHARS]) is not None


def _past_months(text: str, said: datetime) -> list[tuple[date, date]]:
    """The months gone by that the past sentences of ``text`` name whole, without a day: "Finance
    flagged our spend: October was 4,120 credits", said on November 10, tells of October. A month
    without a year is the last one of its name that ended before the day it was said, if it began
    at most :data:`_MONTH_BACK` before it; "We're going back in October" names no month gone."""
    out: list[tuple[date, date]] = []
    for sentence, m in _in_past_sentences(text, _WHOLE_MONTH):
        if _AFTER.match(sentence, m.end()) or _BEFORE.search(sentence, max(0, m.start() - 12), m.start()):
            continue  # a day of the month: mentioned_days reads it
        led = _MONTH_LED.search(sentence, max(0, m.start() - 30), m.start())
        if not (led or _MONTH_TOLD.match(sentence, m.end())):
            continue  # a name ("April said she was tired", "my daughter June"), not a month
        month = month_number(m.group(1))
        year = int(m.group(2)) if m.group(2) else said.year - (month >= said.month)
        span = _months(year, month, month)
        if span is not None and span[1] < said.date() and (m.group(2) or said.date() - span[0] <= _MONTH_BACK):
            out.append(span)
    return out


def _past_quarters(text: str, said: datetime) -> list[tuple[date, date]]:
    """The quarters gone by that the past sentences of ``text`` name ("ran it: Q3 churn comes out at
    5.4%", said in November, tells of July to September; "Q1 2026 was flat"): a quarter without a
    year is the last one of its number that ended before the day it was said. Not in a sentence
    that tells of nothing past ("We're aiming to ship in Q4", "IQR = Q3 - Q1")."""
    out: list[tuple[date, date]] = []
    for _, m in _in_past_sentences(text, _QUARTER):
        last_month = 3 * int(m.group(1))
        year = int(m.group(2)) if m.group(2) else 2000 + int(m.group(3)) if m.group(3) else \
            said.year - (last_month >= said.month)
        span = _months(year, last_month - 2, last_month)
        if span is not None and span[1] < said.date():
            out.append(span)
    return out


def _in_past_sentences(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
    """Each match of ``pattern`` with its sentence, in the sentences of ``text`` in the past tense."""
    if pattern.search(text) is None:
        return
    for sentence in _SENTENCE.split(text):
        if _PAST.search(sentence):
            for m in pattern.finditer(sentence):
                yield sentence, m


def _months(year: int, first: int, last: int) -> tuple[date, date] | None:
    """The days from the first of month ``first`` to the end of month ``last`` of ``year``; None
    for a year the calendar has not."""
    try:
        return date(year, first, 1), date(year, last, calendar.monthrange(year, last)[1])
    except ValueError:
        return None


# "Q3", "q3", "Q3 2026", "Q3 '26"; not "Q3-style", "Q35", a fiscal quarter ("Q3 FY26": the
# calendar's quarter only by chance) nor a car ("our Audi Q3").
_QUARTER = re.compile(r"(?<!audi\s)\bQ([1-4])(?:\s+((?:19|20)\d\d)\b|\s*['’](\d\d)\b)?(?![\w-])(?!\s*FY)",
                      re.IGNORECASE)


#: How long before it was said a month named without a year may have begun ("in July", said in
#: November, may be next July as well as the last).
_MONTH_BACK = timedelta(days=100)
# What stands before a month as a time ("in October", "for the month of March", "since July") or
# after it ("October was 4,120 credits", "October's bill"): else a month's name is a person's.
_MONTH_LED = re.compile(
    r"\b(?i:in|during|for|of|since|through|throughout|over|last|this|early|mid|late|from|until|till|by|before"
    r"|after|all|whole|entire|around|across)\s+(?:the\s+(?:month\s+of\s+)?)?$")
_MONTH_TOLD = re.compile(r"(?:['’]s\b|\s+(?:was|were|has|had|is)\b)")
# A month named whole, with its year or not; "May" and "March" only capitalised. The lookahead (the
# names' first letters, case as the names') lets most positions fail at once: every memory stored is read.
_WHOLE_MONTH = re.compile(
    r"(?=(?i:[adfjnos])|M)\b((?i:january|february|april|june|july|august|september|october|november|december)"
    r"|March|May)\b(?:,?\s+((?:19|20)\d\d)\b)?")
_DIGIT = re.compile(r"\d")
# A sentence that may tell of a day gone by, and one in the past tense; the words are a cheaper test first.
_SHORTENED = re.compile(r"\b(?:yday|" + SHORT_WEEKDAY + r")\b", re.IGNORECASE)
_TOLD_WORDS = ("yesterday", "yday", "ago", "last", "previous", "day", *WEEKDAYS)
_TOLD_CUE = re.compile(  # the lookahead holds the words' first letters, as _WHOLE_MONTH's
    r"(?=[aflmpstwy])\b(?:yesterday|yday|ago|last|previous|weekend"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day'?s?|" + SHORT_WEEKDAY + r"(?:'?s)?)\b", re.IGNORECASE)
_PAST = re.compile(
    r"\b(?:did|was|were|had|went|got|came|took|made|saw|met|ate|lost|won|gave|left|told|said|bought|spent|ran"
    r"|yesterday|yday|ago|last|(?!(?:excit|worri|schedul|plann|book|tir|bor|interest|scar)ed)[a-z]{3,}ed)\b",
    re.IGNORECASE)
# Days named but not gone by: "booked a table for Friday", "asked for a quote by Friday", "Black
# Friday", "on Saturday mornings", "the last week of the trip".
_NOT_TOLD = re.compile(
    r"\b(?:for|by|black|good|cyber)\s+(?:this\s+|next\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day(?:s|\s+(?:mornings|afternoons|evenings|nights))\b|\blast\s+(?:day|week|weekend|month|year)\s+of\b",
    re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def _dated(month: int, day: int, year: str | None, said: datetime) -> date | None:
    if year:
        try:
            return date(int(year), month, day)
        except ValueError:
            return None
    # The next such day from two months before it was said: "on Dec 1" said on Nov 13 is this Dec 1,
    # "dinner on May 20" said in November next May, "the match on Oct 20" said on Nov 13 the one gone.
    since = max(said.date(), date.min + timedelta(days=_BACK_DAYS)) - timedelta(days=_BACK_DAYS)
    for y in (since.year, since.year + 1, since.year + 2, since.year + 3, since.year + 4):
        try:
            candidate = date(y, month, day)
        except ValueError:
            continue
        if candidate >= since:
            return candidate
    return None


def indexed_days(text: str, said: datetime) -> list[int]:
    """The days a store indexes for a memory, read in UTC (a question reads a day on either side:
    its asker's day is at most a day off UTC's, engram.retrieve.candidates): each day of a
    date ``text`` names as its ordinal (:meth:`date.toordinal`), each day a past sentence tells of
    in relative words ("yesterday") as its ordinal's negative (a question about days to come reads
    only the first). Spans longer than :data:`INDEXED_SPAN` are left out; at most
    :data:`MAX_INDEXED_DAYS`, the dates named first."""
    text = text[:READ_CHARS]
    try:
        said = said.astimezone(UTC)
        named, told = mentioned_days(text, said), _told_in_words(text, said)
    except OverflowError:  # said on the calendar's first or last day, in a zone that leaves it
        return []
    return (_each_day(named, 1) + _each_day(told, -1))[:MAX_INDEXED_DAYS]


def _each_day(spans: list[tuple[date, date]], sign: int) -> list[int]:
    days = {day for start, end in spans if end - start < INDEXED_SPAN
            for day in range(start.toordinal(), end.toordinal() + 1)}
    return [sign * day for day in sorted(days)]
