"""The calendar under time expressions: spans of days, months, quarters and years in a question's
own timezone, numbers said in words, and a yearless date read against today (engram.timeparse)."""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

__all__ = [
    "MAX_UTC", "MIN_UTC", "MONTHS", "NUMBERS", "TICK", "WEEKDAYS", "Ctx", "Handler", "Span", "add_months", "day_span",
    "month_number", "month_span", "number", "on_date", "period", "quarter_span", "shift_month", "unit_name",
    "week_span", "year_said", "year_span",
]

#: Open ends of "before X" / "after X" ranges.
MIN_UTC = datetime.min.replace(tzinfo=UTC)
MAX_UTC = datetime.max.replace(tzinfo=UTC)

TICK = timedelta(microseconds=1)
Span = tuple[datetime, datetime]


@dataclass(frozen=True, slots=True)
class Ctx:
    now: datetime
    tz: tzinfo
    today: date
    #: The question looks ahead ("What do I have on Friday?"): a yearless date, month or weekday is the next one.
    ahead: bool = False


Handler = Callable[[re.Match[str], Ctx], Span | None]

MONTHS = {name: i for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
WEEKDAYS = {name: i for i, name in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3, "several": 3,
}

def day_span(ctx: Ctx, first: date, last: date) -> Span:
    return datetime.combine(first, time.min, tzinfo=ctx.tz), datetime.combine(last, time.max, tzinfo=ctx.tz)


def shift_month(year: int, month: int, k: int) -> tuple[int, int]:
    y, m0 = divmod(year * 12 + month - 1 + k, 12)
    return y, m0 + 1


def month_span(ctx: Ctx, year: int, month: int) -> Span:
    return day_span(ctx, date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def quarter_span(ctx: Ctx, year: int, q: int) -> Span:
    """``q`` counts from 0."""
    last = 3 * q + 3
    return day_span(ctx, date(year, 3 * q + 1, 1), date(year, last, calendar.monthrange(year, last)[1]))


def year_span(ctx: Ctx, year: int) -> Span:
    return day_span(ctx, date(year, 1, 1), date(year, 12, 31))


def year_said(ctx: Ctx, said: str | None) -> str | None:
    """The year a question names after a date, a month, a quarter or a holiday, as digits: "2022",
    or relative to today ("last year", "of next year")."""
    if not said or said[0].isdigit():
        return said
    return str(ctx.today.year + {"last": -1, "this": 0, "next": 1}[said.split()[-2].casefold()])


def week_span(ctx: Ctx, day: date) -> Span:
    monday = day - timedelta(days=day.weekday())
    return day_span(ctx, monday, monday + timedelta(days=6))


def add_months(dt: datetime, k: int) -> datetime:
    y, m = shift_month(dt.year, dt.month, k)
    return dt.replace(year=y, month=m, day=min(dt.day, calendar.monthrange(y, m)[1]))


def number(text: str) -> int:
    words = text.casefold().split()
    # "a couple of" / "a few": the article and "of" carry no quantity.
    words = [w for w in words if w not in ("a", "of")] or words
    return int(words[0]) if words[0].isdecimal() else NUMBERS[words[0]]


def unit_name(text: str) -> str:
    unit = text.casefold()
    return unit[:-1] if unit.endswith("s") else unit


def month_number(text: str) -> int:
    """The number of the month ``text`` names (its first three letters: "Sept" -> 9)."""
    return MONTHS[text.casefold()[:3]]


def on_date(ctx: Ctx, month: int, day: int, year: str | None) -> Span | None:
    if year:
        d = date(int(year), month, day)
        return day_span(ctx, d, d)
    # No year: the most recent such date not after today (Feb 29 may need several years back); the
    # next one not before today, looking ahead.
    for ahead in range(9) if ctx.ahead else ():
        try:
            d = date(ctx.today.year + ahead, month, day)
        except ValueError:
            continue
        if d >= ctx.today:
            return day_span(ctx, d, d)
    for back in range(9):
        try:
            d = date(ctx.today.year - back, month, day)
        except ValueError:
            continue
        if d <= ctx.today:
            return day_span(ctx, d, d)
    return None


def period(ctx: Ctx, unit: str, k: int) -> Span | None:
    """The calendar ``unit`` ``k`` units away from the one containing today."""
    today = ctx.today
    if unit == "day":
        d = today + timedelta(days=k)
        return day_span(ctx, d, d)
    if unit == "week":
        return week_span(ctx, today + timedelta(weeks=k))
    if unit == "month":
        return month_span(ctx, *shift_month(today.year, today.month, k))
    if unit == "quarter":
        y, q = divmod(today.year * 4 + (today.month - 1) // 3 + k, 4)
        return quarter_span(ctx, y, q)
    if unit == "year":
        return year_span(ctx, today.year + k)
    return None
