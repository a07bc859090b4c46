"""The days a memory speaks of, besides the day it was said: "Dana's appointment with Dr. Patel is
on Dec 1", said on Nov 13, is about Dec 1, and answers "What do I have next week?" asked on Nov 23,
which no memory said in that week can. A time scope points at a memory whose mentioned days fall in
it (:mod:`engram.retrieve.in_range`), and a scope that reaches past now reads the newest memories
for such mentions (the ``mentioned`` source), since nothing said in the future is stored.

Read: a month and a day ("Dec 1", "December 12th", "1 December", with a year or not), a range of
days ("Dec 22-26", "Oct 7-10") or of dates ("Dec 24 to Jan 2"), an ISO date. A date without a year
is the one nearest the day it was said.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime

from engram.model import MemoryRecord, TimeRange

__all__ = ["MENTIONED_LIMIT", "READ_CHARS", "inside_ids", "mentioned_days", "mentions_inside"]

#: The newest memories a scope reaching past now reads for mentioned days.
MENTIONED_LIMIT = 200
#: How much of a memory's text is read for dates.
READ_CHARS = 2_000

_MONTHS = {name: i for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_MONTH = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
# "Dec 1", "December 12th, 2026", "Dec 22-26", "Dec 24 to Jan 2", "1 December"
_MONTH_DAY = re.compile(
    rf"\b{_MONTH}\s+{_DAY}(?:\s*(?:-|–|to|until|through)\s*(?:{_MONTH}\s+)?{_DAY})?{_YEAR}(?![\d:])"
    rf"|(?<![\d/]){_DAY}\s+(?:of\s+)?{_MONTH}\b{_YEAR}",
    re.IGNORECASE,
)
_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def mentioned_days(text: str, said: datetime) -> list[tuple[date, date]]:
    """The spans of days ``text`` (its first READ_CHARS characters) names, read against the day
    it was ``said``; a day without a year is the one nearest that day."""
    text = text[:READ_CHARS]
    out: list[tuple[date, date]] = []
    for m in _MONTH_DAY.finditer(text):
        if m.group(1):
            month, day = _month(m.group(1)), int(m.group(2))
            end_month = _month(m.group(3)) if m.group(3) else month
            end_day = int(m.group(4)) if m.group(4) else day
            year = m.group(5)
        else:
            month, day, year = _month(m.group(7)), int(m.group(6)), m.group(8)
            end_month, end_day = month, day
        start = _dated(month, day, year, said)
        if start is None:
            continue
        end = _dated(end_month, end_day, str(start.year + (end_month < month)), said)
        out.append((start, end if end is not None and end >= start else start))
    for m in _ISO.finditer(text):
        found = _dated(int(m.group(2)), int(m.group(3)), m.group(1), said)
        if found is not None:
            out.append((found, found))
    return out


def mentions_inside(record: MemoryRecord, time_range: TimeRange) -> bool:
    """Whether ``record`` names a day to come inside ``time_range``: a day on or after the one it
    was said ("the appointment is on Dec 1", said on Nov 13). A day named after it passed ("I
    watched the Masters on April 20th", said in May) is told, and its telling is what is dated:
    such memories had outranked the answer to "How many hours did I watch last month?"."""
    first, last = time_range.start.date(), time_range.end.date()
    said = record.created_at.date()
    if last < said:  # a day to come inside the scope would be after it ends
        return False
    days = mentioned_days(record.content, record.created_at)
    return any(start <= last and end >= first and end >= said for start, end in days)


def inside_ids(records: Sequence[MemoryRecord], time_range: TimeRange) -> set[str]:
    """The ids of ``records`` that name a day inside ``time_range``."""
    return {r.id for r in records if mentions_inside(r, time_range)}


def _month(text: str) -> int:
    return _MONTHS[text.casefold()[:3]]


def _dated(month: int, day: int, year: str | None, said: datetime) -> date | None:
    if year:
        try:
            return date(int(year), month, day)
        except ValueError:
            return None
    anchor = said.date()
    best: date | None = None
    for y in (anchor.year - 1, anchor.year, anchor.year + 1):
        try:
            candidate = date(y, month, day)
        except ValueError:
            continue
        if best is None or abs(candidate - anchor) < abs(best - anchor):
            best = candidate
    return best
