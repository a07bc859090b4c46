"""Parts of a period, and periods placed by a day, as questions say them (engram.timeparse reads
them): "early October", "mid-October", "the end of last month", "the first week of November",
"the last weekend of October", "the week of November 11", "the weekend of Nov 14", "a fortnight
ago", "the past fortnight", "two weekends ago", "the week before last", "on 11/13", "on the 14th",
"Monday the 9th", "Monday, November 9", "the Tuesday after Christmas".

A part is a third of its period: early (beginning, start) the first, mid (middle) the next, late
(end) the rest; October's are the 1st-10th, 11th-20th and 21st-31st, a year's January-April,
May-August and September-December. A bare "early" or "late"
parts only a month or longer ("late yesterday", "late last week" keep the whole period: "Was I
late last week?" asks about the week); "the beginning of" or "the end of" parts a week too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from engram.timespans import (
    WEEKDAYS,
    Ctx,
    Span,
    day_span,
    month_number,
    month_span,
    number,
    on_date,
    period,
    shift_month,
    week_span,
    year_said,
)

__all__ = ["HOLIDAY", "MONTH_WORDS", "SHORT_WEEKDAY", "WEEKDAY_DATE", "WEEKDAY_NAMES", "Anchor", "day_of_month",
           "days_next_to", "fortnight_ago", "holiday", "holiday_in", "month_day", "nth_of", "part_of", "past_fortnight",
           "two_away", "week_of", "weekday_date", "weekends_ago"]

WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: The months as a question spells them, a bare alternation for other patterns to wrap.
MONTH_WORDS = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
               r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
#: A weekday as chats shorten it ("fri", "thurs", "weds").
SHORT_WEEKDAY = r"(?:mon|tues?|weds?|thu(?:rs?)?|fri|sat|sun)"
_SHORT_FORMS = ("mon", "tue", "tues", "wed", "weds", "thu", "thur", "thurs", "fri", "sat", "sun")
# "Sunday 29th"; shortened, with its date, after a word that makes it a day, at the start, or with a
# capital ("on sun 29th", "Thurs the 3rd", "SAT 7TH"): not "I sat 3rd in the race", "they wed 12 June".
_WD = ("(?P<wd>" + "|".join(WEEKDAY_NAMES) + r"|(?:(?<=\bon\s)|(?<=\bthis\s)|(?<=\bnext\s)|(?<=\blast\s)|(?<=\bby\s)"
       r"|(?<=\bfor\s)|(?<=\bfrom\s)|(?<=\buntil\s)|(?<=\btil\s)|^)" + SHORT_WEEKDAY + r"\b\.?|(?-i:"
       + "|".join(form for short in _SHORT_FORMS for form in (short.capitalize(), short.upper())) + r")\b\.?)")
_MON = r"(?:" + MONTH_WORDS + r")\b\.?"
# Where a date without its month ends: "Monday the 9th?", "Monday the 9th at 3", not "Monday 1st day"
# or "Saturday the 2nd half": an ordinal before a noun is no date.
_DAY_END = (r"(?=\s*(?:[?.!,;:)]|$|\s(?:at|in|with|for|and|or|when|while|about|from|to|did|was|were|we|i|you|he|she"
            r"|they|morning|afternoon|evening|night)\b))")
#: A weekday with its date: "Monday the 9th", "Monday 9th", "Monday 9 November", "Monday, November 9"
#: (not "Monday 3 people came", "Monday 9am": a bare number needs "the", an ordinal or a month).
WEEKDAY_DATE = (
    r"\b(?:on\s+)?" + _WD + r"(?:\s*,)?\s+(?:(?:the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?|(?P<do>\d{1,2})(?:st|nd|rd|th))"
    r"(?:\s+(?:of\s+)?(?P<m>" + _MON + r")|" + _DAY_END + r")|(?P<dm>\d{1,2})\s+(?:of\s+)?(?P<m1>" + _MON
    + r")|(?P<m2>" + _MON + r")\s*(?P<d2>\d{1,2})(?:st|nd|rd|th)?)(?![\d:])(?!\s*(?:am|pm|a\.m|p\.m)\b)"
    r"(?:(?:\s*,)?\s*(?P<y>\d{4})(?!\d))?"
)
# A question about the past ("What did I do on Monday the 2nd?") does not mean the coming one.
_PAST_WORDS = re.compile(r"\b(?:did|was|were|had|happened|went|came|got|said|told|ago|last)\b", re.IGNORECASE)

#: What reads an anchor ("October", "last month", "Nov 14") into its span, or None.
Anchor = Callable[[str, Ctx], Span | None]

_A_MONTH = re.compile(r"[a-z]{3,9}\.?", re.IGNORECASE)  # a month named without its year ("November")
_FIRST = ("early", "beginning", "start")
_MIDDLE = ("mid", "middle")
_NTH = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3, "last": -1}


def _anchored(m: re.Match[str], ctx: Ctx, anchor: Anchor, back: int = 0) -> tuple[date, date] | None:
    """The days of the match's anchor: group ``a`` (a period), or ``unit`` ("the month": this one);
    ``back`` periods earlier where that can be said (the month, or a month named without its year)."""
    unit = m.groupdict().get("unit")
    if unit:
        span = period(ctx, unit.casefold(), -back)
    else:
        span = anchor(m.group("a"), ctx)
        if back and span is not None:
            if not _A_MONTH.fullmatch(m.group("a")):
                return None
            year, month = span[0].year - back, span[0].month
            span = month_span(ctx, year, month)
    return None if span is None else (span[0].date(), span[1].date())


def _gone_by(m: re.Match[str], ctx: Ctx, anchor: Anchor, part: Callable[[tuple[date, date]], Span | None],
             ) -> Span | None:
    """``part`` of the anchor's days; for a question about the past, of the period before when the
    part is still to come ("What did I do in late November?" asked on November 15: last year's)."""
    days = _anchored(m, ctx, anchor)
    found = None if days is None else part(days)
    if found is not None and not ctx.ahead and found[0].date() > ctx.today:
        earlier = _anchored(m, ctx, anchor, back=1)
        found = part(earlier) if earlier is not None else found
    return found


def part_of(m: re.Match[str], ctx: Ctx, anchor: Anchor) -> Span | None:
    """A third of the anchor's period (see the module's text)."""
    return _gone_by(m, ctx, anchor, lambda days: _part(m, ctx, days))


def _part(m: re.Match[str], ctx: Ctx, days: tuple[date, date]) -> Span | None:
    first, last = days
    n = (last - first).days + 1
    if n < (7 if m.groupdict().get("of") else 28):
        return day_span(ctx, first, last)
    part = m.group("part").casefold()
    months = (last.year - first.year) * 12 + last.month - first.month + 1
    if months >= 3:  # a quarter or a year: by whole months ("late 2023" is September to December)
        k = months // 3
        lo, hi = (0, k) if part in _FIRST else (k, 2 * k) if part in _MIDDLE else (2 * k, months)
        start = date(*shift_month(first.year, first.month, lo), 1)
        end = date(*shift_month(first.year, first.month, hi), 1) - timedelta(days=1)
        return day_span(ctx, start, min(end, last))
    k = 10 if first.day == 1 and n >= 28 else n // 3  # a month's parts end on its 10th and 20th
    if part in _FIRST:
        return day_span(ctx, first, first + timedelta(days=k - 1))
    if part in _MIDDLE:
        return day_span(ctx, first + timedelta(days=k), first + timedelta(days=2 * k - 1))
    return day_span(ctx, first + timedelta(days=2 * k), last)


def nth_of(m: re.Match[str], ctx: Ctx, anchor: Anchor) -> Span | None:
    """"the first week of November" (its 1st-7th), "the last week of October" (its last seven
    days), "the second weekend of March" (its second Saturday and the Sunday after)."""
    return _gone_by(m, ctx, anchor, lambda days: _nth(m, ctx, days))


def _nth(m: re.Match[str], ctx: Ctx, days: tuple[date, date]) -> Span | None:
    if (days[1] - days[0]).days < 27:
        return None
    first, last = days
    i = _NTH[m.group("nth").casefold()]
    if m.group("kind").casefold() == "week":
        start = last - timedelta(days=6) if i < 0 else first + timedelta(weeks=i)
        return day_span(ctx, start, start + timedelta(days=6))
    saturdays = [first + timedelta(days=d) for d in range((last - first).days + 1)
                 if (first + timedelta(days=d)).weekday() == 5]
    saturday = saturdays[i]
    return day_span(ctx, saturday, saturday + timedelta(days=1))


def week_of(m: re.Match[str], ctx: Ctx, anchor: Anchor) -> Span | None:
    """"the week of November 11": its Monday to Sunday; "the weekend of Nov 14": the Saturday and
    Sunday it falls on, the one before a Monday, else the coming one."""
    days = _anchored(m, ctx, anchor)
    if days is None:
        return None
    day = days[0]
    if m.group("kind").casefold() == "week":
        return week_span(ctx, day)
    if days[1] > day:  # "the weekend of last week": the one inside it
        day = next((d for d in (day + timedelta(days=k) for k in range((days[1] - day).days + 1)) if d.weekday() == 5),
                   day)
    back = {5: 0, 6: 1, 0: 2}.get(day.weekday())
    saturday = day - timedelta(days=back) if back is not None else day + timedelta(days=5 - day.weekday())
    return day_span(ctx, saturday, saturday + timedelta(days=1))


def fortnight_ago(m: re.Match[str], ctx: Ctx) -> Span | None:
    return period(ctx, "week", -2)  # as "two weeks ago"


def past_fortnight(m: re.Match[str], ctx: Ctx) -> Span | None:
    return ctx.now - timedelta(days=14), ctx.now


def weekends_ago(m: re.Match[str], ctx: Ctx) -> Span | None:
    """"two weekends ago": the weekend before last weekend."""
    saturday = ctx.today + timedelta(days=5 - ctx.today.weekday()) - timedelta(weeks=number(m.group(1)))
    return day_span(ctx, saturday, saturday + timedelta(days=1))


def two_away(m: re.Match[str], ctx: Ctx) -> Span | None:
    """"the week before last", "the month after next"."""
    return period(ctx, m.group(1).casefold(), -2 if m.group(2).casefold().startswith("before") else 2)


def month_day(m: re.Match[str], ctx: Ctx) -> Span | None:
    """"on 11/13": month and day, as written in the US; a first number over 12 is the day ("on 25/12")."""
    a, b = int(m.group(1)), int(m.group(2))
    month, day = (b, a) if a > 12 >= b else (a, b)
    return on_date(ctx, month, day, None)


def weekday_date(m: re.Match[str], ctx: Ctx) -> Span | None:
    """"Monday the 9th": that date, not the last Monday: of the 9ths that fell or fall on a Monday, the
    nearest ("moving day is Saturday the 17th", said on the 15th: two days on), the last when the
    text speaks of the past ("What did I do on Monday the 2nd?"), the coming one when it looks ahead.
    "Monday, November 9" likewise among November 9ths; with its year, that date."""
    day = int(m.group("d") or m.group("do") or m.group("dm") or m.group("d2"))
    word = m.group("m") or m.group("m1") or m.group("m2")
    month = month_number(word.rstrip(".")) if word else None
    if m.group("y"):
        return on_date(ctx, month, day, m.group("y")) if month else None
    wd = WEEKDAYS[m.group("wd").casefold()[:3]]
    found: list[date] = []
    # A date falls on each weekday within 28 months; a month and day on each within 11 years (leap days 28).
    for k in (range(-12 * 28, 12 * 4 + 1, 12) if month else range(-28, 29)):
        year, month_at = shift_month(ctx.today.year, month or ctx.today.month, k)
        try:
            d = date(year, month_at, day)
        except ValueError:
            continue
        if d.weekday() == wd:
            found.append(d)
    if not found and month:
        return on_date(ctx, month, day, None)
    past = max((d for d in found if d <= ctx.today), default=None)
    coming = min((d for d in found if d >= ctx.today), default=None)
    if ctx.ahead:
        chosen = coming
    elif _PAST_WORDS.search(m.string) or coming is None:
        chosen = past
    elif past is None:
        chosen = coming
    else:  # the nearer, the past one of two as near
        chosen = coming if (coming - ctx.today) < (ctx.today - past) else past
    return None if chosen is None else day_span(ctx, chosen, chosen)


def days_next_to(unit: str, before: bool, edge: date, n: int = 1) -> tuple[date, date] | None:
    """The first and last days of "the ``unit`` before/after" a day ``edge`` (``n`` of them: "three
    weeks before"): a day, a week, a weekend or a weekday ("the Tuesday after Christmas"); None for
    a longer unit. Read by the parser against a date and by a question's event against its day."""
    if unit in WEEKDAY_NAMES:
        wd = WEEKDAYS[unit[:3]]
        if before:
            d = edge - timedelta(days=(edge.weekday() - wd) % 7 or 7) - timedelta(weeks=n - 1)
        else:
            d = edge + timedelta(days=(wd - edge.weekday()) % 7 or 7) + timedelta(weeks=n - 1)
        return d, d
    if unit == "weekend":
        if before:  # the last Saturday and Sunday wholly before the day
            back = (edge.weekday() - 5) % 7
            saturday = edge - timedelta(days=back if back >= 2 else back + 7) - timedelta(weeks=n - 1)
        else:
            saturday = edge + timedelta(days=(5 - edge.weekday()) % 7 or 7) + timedelta(weeks=n - 1)
        return saturday, saturday + timedelta(days=1)
    step = {"day": timedelta(days=1), "week": timedelta(weeks=1)}.get(unit)
    if step is None:
        return None
    if n == 1:  # "the week before X": the whole stretch between X and a week earlier
        return (edge - step, edge - timedelta(days=1)) if before else (edge + timedelta(days=1), edge + step)
    point = edge - n * step if before else edge + n * step
    half = (step - timedelta(days=1)) // 2  # "three weeks before X": the week around that point
    return point - half, point + half


def day_of_month(m: re.Match[str], ctx: Ctx) -> Span | None:
    """"on the 14th": the last such day (the coming one for a question that looks ahead)."""
    day = int(m.group(1))
    if not 1 <= day <= 31:
        return None
    step = 1 if ctx.ahead else -1
    year, month = ctx.today.year, ctx.today.month
    for _ in range(13):
        try:
            d = date(year, month, day)
        except ValueError:
            d = None
        if d is not None and (d >= ctx.today if ctx.ahead else d <= ctx.today):
            return day_span(ctx, d, d)
        year, month = (year + (month + step - 1) // 12, (month + step - 1) % 12 + 1)
    return None


#: Holidays a question may place itself by ("over Christmas", "since Thanksgiving", "last Easter").
HOLIDAY = (r"christmas(?:\s+(?:eve|day))?|thanksgiving(?:\s+day)?|easter(?:\s+(?:sunday|monday))?|halloween"
           r"|new\s+year'?s(?:\s+(?:eve|day))?|valentine'?s(?:\s+day)?|mother'?s\s+day|father'?s\s+day"
           r"|memorial\s+day|labou?r\s+day|st\.?\s+patrick'?s(?:\s+day)?|independence\s+day")
_FIXED = {"christmas eve": (12, 24), "christmas": (12, 25), "christmas day": (12, 25), "new years eve": (12, 31),
          "new years": (1, 1), "new years day": (1, 1), "halloween": (10, 31), "valentines": (2, 14),
          "valentines day": (2, 14), "st patricks": (3, 17), "st patricks day": (3, 17), "independence day": (7, 4)}
# (month, weekday, nth: 0 the first, -1 the last): Thanksgiving is November's fourth Thursday (US).
_NTH_WEEKDAY = {"thanksgiving": (11, 3, 3), "thanksgiving day": (11, 3, 3), "mothers day": (5, 6, 1),
                "fathers day": (6, 6, 2), "memorial day": (5, 0, -1), "labor day": (9, 0, 0), "labour day": (9, 0, 0)}
#: Days before and after the day itself that "over" or "during" it holds.
_AROUND = {"thanksgiving": (0, 3), "thanksgiving day": (0, 3), "easter": (2, 1), "easter sunday": (2, 1)}


def _easter(year: int) -> date:
    """Western Easter Sunday (the anonymous Gregorian computus)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    weekday = (32 + 2 * e + 2 * i - h - k) % 7
    shift = (a + 11 * h + 22 * weekday) // 451
    month, day = divmod(h + weekday - 7 * shift + 114, 31)
    return date(year, month, day + 1)


def holiday_in(name: str, year: int) -> date:
    """The day of holiday ``name`` (folded: "christmas eve", "new years", "thanksgiving") in ``year``."""
    if name in _FIXED:
        return date(year, *_FIXED[name])
    if name.startswith("easter"):
        return _easter(year) + timedelta(days=1 if name.endswith("monday") else 0)
    month, weekday, nth = _NTH_WEEKDAY[name]
    days = [date(year, month, d) for d in range(1, 32) if _valid(year, month, d)]
    return [d for d in days if d.weekday() == weekday][nth]


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def holiday(m: re.Match[str], ctx: Ctx) -> Span | None:
    """"last Christmas", "over Thanksgiving", "since Easter": the last such day (the coming one for
    "next" or a question that looks ahead, else the nearest for "this"; that year's for "on
    Christmas last year" or "in 2022"); over or during it, the days around it as well (Thanksgiving
    to Sunday, Easter Friday to Monday, else a day each side)."""
    name = " ".join(m.group("h").casefold().replace("'", "").replace(".", "").split())
    which = (m.groupdict().get("which") or "").casefold()
    year = ctx.today.year
    said_year = year_said(ctx, m.groupdict().get("year"))
    if said_year:  # "on Christmas last year", "over Easter in 2022"
        day = holiday_in(name, int(said_year))
    elif which == "this" and not ctx.ahead:  # the nearest: "this Christmas" asked on January 3 is the one gone
        day = min((holiday_in(name, y) for y in (year - 1, year, year + 1)), key=lambda d: abs((d - ctx.today).days))
    elif which in ("next", "this") or ctx.ahead:
        day = holiday_in(name, year)
        day = day if day > ctx.today or (which != "next" and day == ctx.today) else holiday_in(name, year + 1)
    else:
        day = holiday_in(name, year)
        day = day if day < ctx.today or (not which and day == ctx.today) else holiday_in(name, year - 1)
    if (m.groupdict().get("lead") or "").casefold() in ("over", "during", "around", "throughout"):
        before, after = _AROUND.get(name, (1, 1))
        return day_span(ctx, day - timedelta(days=before), day + timedelta(days=after))
    return day_span(ctx, day, day)
