"""Deterministic time expressions in free text -> closed UTC intervals (query understanding).

Calendar arithmetic happens in ``now``'s own timezone (a user's "yesterday" is their local day), and
the result is converted to UTC. Weeks start on Monday. Stdlib only.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from engram import timeparts
from engram.errors import ValidationError
from engram.model import TimeRange
from engram.timefor import for_a_period
from engram.timespans import (
    MAX_UTC,
    MIN_UTC,
    MONTHS,
    TICK,
    WEEKDAYS,
    Ctx,
    Handler,
    Span,
    add_months,
    day_span,
    month_number,
    month_span,
    number,
    on_date,
    period,
    quarter_span,
    unit_name,
    year_said,
    year_span,
)

__all__ = ["MAX_UTC", "MIN_UTC", "MONTHS", "month_number", "parse_time_scope"]

# Asking about what is to come ("What's coming up in December?", "Is there anything scheduled for March 3?"):
# a word of the past ("did", "was", "ago") keeps the past reading.
_AHEAD = re.compile(
    r"\b(?:will|shall|going\s+to|gonna|coming(?:\s+up)?|upcoming|planned|scheduled|happening"
    r"|do\s+(?:i|we|you)\s+have|have\s+(?:i|we)\s+got|is\s+there|are\s+there|due|expected|what'?s\s+on|what\s+is\s+on"
    r"|what(?:'?s|\s+is|\s+are)\s+(?:the|our|my|your)\s+plans?)\b",
    re.IGNORECASE)
_BEHIND = re.compile(
    r"\b(?:did|was|were|had|went|ago|last|yesterday|earlier|previous(?:ly)?|before|since)\b", re.IGNORECASE)

# Regex fragments. Only numbered groups inside them, so they can be combined into one alternation.
_MONTH = r"\b(" + timeparts.MONTH_WORDS + r")\b\.?"
# A year after a date, a month or a quarter: "2025", or one said relative to now ("in March last
# year", "Q1 next year", "July of this year"), read by year_said.
_YEAR_OPT = r"(?:\s*,?\s*(\d{4}(?!\d)|(?:of\s+)?(?:last|this|next)\s+year\b))?"
_NUM = (r"(\d{1,6}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
        r"|a\s+couple(?:\s+of)?|couple(?:\s+of)?|a\s+few|few|several|an?)")
_UNIT = r"(hour|day|week|month|quarter|year)s?\b"
# A weekday as chats shorten it ("on fri", "next thurs", "this sat?") only after the word that makes
# it one and where the phrase ends: not "put on sun cream", "I sat down", "this sat in the fridge".
_SHORT_WEEKDAY = (r"(?:(?<=\bon\s)|(?<=\bnext\s)|(?<=\bthis\s)|(?<=\blast\s))" + timeparts.SHORT_WEEKDAY
                  + r"\.?(?=\s*(?:[?.!,;:)]|$)|\s+(?:\d|at\s+\d|morning|afternoon|evening|night|then|instead|works?"
                  r"|ok|pls|please|lol|was|were|will|we|i|you|and|or)\b)")
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|" + _SHORT_WEEKDAY + r")\b"

_P_ISO = r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)"
_P_US = r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])"
_P_MDY = _MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?(?![\d:])" + _YEAR_OPT
_P_DMY = r"(?<![\d/])(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + _YEAR_OPT
_P_MY = _MONTH + r"(?:\s*,?\s*(?=\d)|\s+(?:of\s+)?)(\d{4}(?!\d)|(?:last|this|next)\s+year\b)"
_P_MONTH = _MONTH
_P_YEAR = r"(?<!\d)((?:19|20)\d{2})(?!\d)(?!'?s\b)"  # "the 1990s" is a decade
_P_QUARTER = r"\bq([1-4])\b" + _YEAR_OPT
_P_DBY = r"\b(?:the\s+)?day\s+before\s+yesterday\b"
_P_TODAY = r"\b(?:today|tonight|tonite|2nite|this\s+(?:morning|afternoon|evening))\b"
_P_YESTERDAY = r"\b(?:yesterday|yday|last\s+night)\b"
_P_TOMORROW = r"\b(?:tomorrow|tmrw|tmrow|(?-i:tmr)|tomoz|2moro|2morrow|2mrw)\b"  # as chats spell it too
_P_REL = r"\b(last|this|next|previous|current)\s+(week|month|quarter|year)\b"
_P_WEEKEND = r"\b(last|this|next|previous|past)\s+weekend\b"
_P_THE_WEEKEND = r"\b(?:over\s+|during\s+)?the\s+weekend\b(?!\s+(?:after|before)\b)"  # not one an event places
# "on a Sunday", "every Sunday" or "any Monday" is any such day, not the last one.
# "the Tuesday after moving day" is placed by what it follows (_next_to), not the last Tuesday.
_P_WEEKDAY_EXPR = (r"\b(?:(last|this|next|previous|past|on)\s+)?(?<!\ba\s)(?<!\bevery\s)(?<!\beach\s)(?<!\bany\s)"
                   r"(?!(?<=\bthe\s)\w+day\s+(?:after|before)\b)" + _WEEKDAY)
_P_AGO = r"\b" + _NUM + r"\s+" + _UNIT + r"\s+ago\b"


def _iso(m: re.Match[str], ctx: Ctx) -> Span | None:
    return on_date(ctx, int(m.group(2)), int(m.group(3)), m.group(1))


def _us(m: re.Match[str], ctx: Ctx) -> Span | None:
    return on_date(ctx, int(m.group(1)), int(m.group(2)), m.group(3))


def _mdy(m: re.Match[str], ctx: Ctx) -> Span | None:
    return on_date(ctx, month_number(m.group(1)), int(m.group(2)), year_said(ctx, m.group(3)))


def _dmy(m: re.Match[str], ctx: Ctx) -> Span | None:
    return on_date(ctx, month_number(m.group(2)), int(m.group(1)), year_said(ctx, m.group(3)))


def _month_year(ctx: Ctx, month: int, year: str | None) -> Span:
    if year:
        return month_span(ctx, int(year), month)
    # No year: the most recent such month not after the current one (the next one, looking ahead).
    if ctx.ahead:
        return month_span(ctx, ctx.today.year if month >= ctx.today.month else ctx.today.year + 1, month)
    y = ctx.today.year if month <= ctx.today.month else ctx.today.year - 1
    return month_span(ctx, y, month)


def _my(m: re.Match[str], ctx: Ctx) -> Span | None:
    if m.group(1) == "may" and not m.group(2)[0].isdigit():
        return None  # "How may this year's budget change?": the verb
    return _month_year(ctx, month_number(m.group(1)), year_said(ctx, m.group(2)))


def _month(m: re.Match[str], ctx: Ctx) -> Span | None:
    return _month_year(ctx, month_number(m.group(1)), None)


def _year(m: re.Match[str], ctx: Ctx) -> Span | None:
    return year_span(ctx, int(m.group(1)))


def _quarter(m: re.Match[str], ctx: Ctx) -> Span | None:
    q = int(m.group(1)) - 1
    year = year_said(ctx, m.group(2))
    if year:
        return quarter_span(ctx, int(year), q)
    current = (ctx.today.month - 1) // 3
    if ctx.ahead:  # "What's happening in Q4?" asked in February: this year's, not last year's
        return quarter_span(ctx, ctx.today.year if q >= current else ctx.today.year + 1, q)
    return quarter_span(ctx, ctx.today.year if q <= current else ctx.today.year - 1, q)


def _offset_day(k: int) -> Handler:
    def handler(m: re.Match[str], ctx: Ctx) -> Span | None:
        d = ctx.today + timedelta(days=k)
        return day_span(ctx, d, d)

    return handler


def _relative(m: re.Match[str], ctx: Ctx) -> Span | None:
    word, unit = m.group(1).casefold(), m.group(2).casefold()
    k = {"last": -1, "previous": -1, "next": 1}.get(word, 0)
    return period(ctx, unit, k)


def _weekend(m: re.Match[str], ctx: Ctx) -> Span | None:
    word = m.group(1).casefold()
    saturday = ctx.today + timedelta(days=5 - ctx.today.weekday())
    saturday += timedelta(weeks={"next": 1, "this": 0}.get(word, -1))
    return day_span(ctx, saturday, saturday + timedelta(days=1))


def _the_weekend(m: re.Match[str], ctx: Ctx) -> Span | None:
    # The most recent weekend that has started (today itself if it is Saturday or Sunday); the
    # coming one (or this one) for a question that looks ahead ("Anything planned for the weekend?").
    back = (ctx.today.weekday() - 5) % 7
    saturday = ctx.today + timedelta(days=(7 - back) % 7 if ctx.ahead and back > 1 else -back)
    return day_span(ctx, saturday, saturday + timedelta(days=1))


def _weekday(m: re.Match[str], ctx: Ctx) -> Span | None:
    word = (m.group(1) or "").casefold()
    wd = WEEKDAYS[m.group(2).casefold()[:3]]
    today = ctx.today
    if word == "next":
        d = today + timedelta(days=(wd - today.weekday()) % 7 or 7)
    elif word == "this":
        d = today + timedelta(days=wd - today.weekday())
    elif ctx.ahead and word in ("", "on"):  # "What do I have on Friday?": the coming one, today too
        d = today + timedelta(days=(wd - today.weekday()) % 7)
    else:
        back = (today.weekday() - wd) % 7
        if word in ("last", "previous", "past") and back == 0:
            back = 7  # "last Thursday" said on a Thursday means a week ago
        d = today - timedelta(days=back)
    return day_span(ctx, d, d)


def _ago(m: re.Match[str], ctx: Ctx) -> Span | None:
    n, unit = number(m.group(1)), unit_name(m.group(2))
    if unit == "hour":
        point = (ctx.now.astimezone(UTC) - timedelta(hours=n)).astimezone(ctx.tz)
        start = point.replace(minute=0, second=0, microsecond=0)
        return start, start + timedelta(hours=1) - TICK
    return period(ctx, unit, -n)


def _rolling_start(ctx: Ctx, n: int, unit: str) -> datetime:
    if unit == "hour":  # hours as they pass, in UTC: a clock set back does not add one
        return (ctx.now.astimezone(UTC) - timedelta(hours=n)).astimezone(ctx.tz)
    if unit in ("day", "week"):
        return ctx.now - timedelta(days=n * (7 if unit == "week" else 1))
    return add_months(ctx.now, -n * {"month": 1, "quarter": 3, "year": 12}[unit])


def _rolling(m: re.Match[str], ctx: Ctx) -> Span | None:
    return _rolling_start(ctx, number(m.group(1)), unit_name(m.group(2))), ctx.now


def _past_unit(m: re.Match[str], ctx: Ctx) -> Span | None:
    return _rolling_start(ctx, 1, unit_name(m.group(1))), ctx.now


def _recent(m: re.Match[str], ctx: Ctx) -> Span | None:
    return ctx.now - timedelta(days=7), ctx.now


# Single periods, most specific first: the alternation below takes the first that matches.
_PERIODS: tuple[tuple[str, Handler], ...] = (
    (_P_ISO, _iso), (_P_US, _us), (_P_MDY, _mdy), (_P_DMY, _dmy), (_P_MY, _my), (_P_QUARTER, _quarter),
    (_P_DBY, _offset_day(-2)), (_P_TODAY, _offset_day(0)), (_P_YESTERDAY, _offset_day(-1)),
    (_P_TOMORROW, _offset_day(1)), (_P_REL, _relative), (_P_WEEKEND, _weekend),
    (_P_THE_WEEKEND, _the_weekend), (_P_WEEKDAY_EXPR, _weekday), (_P_AGO, _ago),
    (_P_MONTH, _month), (_P_YEAR, _year),
)
_FLAGS = re.IGNORECASE
_ANCHOR_SPECS = tuple((re.compile(p, _FLAGS), h) for p, h in _PERIODS)
_ANCHOR = "(?:" + "|".join(p for p, _ in _PERIODS) + ")"


def _anchor(text: str, ctx: Ctx) -> Span | None:
    for pattern, handler in (*_ANCHOR_SPECS, *_PART_SPECS):
        m = pattern.fullmatch(text)
        if m is not None:
            span = handler(m, ctx)
            if span is not None:
                return span
    return None


def _since(m: re.Match[str], ctx: Ctx) -> Span | None:
    a = _anchor(m.group("a"), ctx)
    return (a[0], ctx.now) if a else None


def _before(m: re.Match[str], ctx: Ctx) -> Span | None:
    a = _anchor(m.group("a"), ctx)
    if a is None:
        return None
    inclusive = m.group("op").casefold().split()[0] in ("until", "till", "up")
    return MIN_UTC, a[1] if inclusive else a[0] - TICK


def _after(m: re.Match[str], ctx: Ctx) -> Span | None:
    a = _anchor(m.group("a"), ctx)
    return (a[1] + TICK, MAX_UTC) if a else None


def _between(m: re.Match[str], ctx: Ctx) -> Span | None:
    a, b = _anchor(m.group("a"), ctx), _anchor(m.group("b"), ctx)
    if a is not None and b is not None and b[1] < a[0] and not re.search(r"\d{4}", m.group("b")):
        # "between Christmas and New Year's": the end is the first such after the start
        b = _anchor(m.group("b"), replace(ctx, today=a[0].date(), ahead=True)) or b
    if a is None or b is None:
        return None
    return min(a[0], b[0]), max(a[1], b[1])  # tolerate "between May 2024 and March 2023"


def _next_to(m: re.Match[str], ctx: Ctx) -> Span | None:
    """"the weekend before 10 April 2023", "the week after May 3", "two days before Easter Monday":
    a period placed against an explicit anchor rather than against now."""
    a = _anchor(m.group("a"), ctx)
    if a is None:
        return None
    unit = m.group("unit").casefold().rstrip("s")
    n = number(m.group("n")) if m.group("n") else 1
    before = m.group("op").casefold().split()[0] in ("before", "prior")
    edge = a[0].date() if before else a[1].date()
    days = timeparts.days_next_to(unit, before, edge, n)
    if days is not None:
        return day_span(ctx, *days)
    months = {"month": 1, "year": 12}[unit] * n * (-1 if before else 1)
    if n == 1:
        start = add_months(a[0], months) if before else a[1] + TICK
        end = a[0] - TICK if before else add_months(a[1], months)
        return start, end
    point = add_months(a[0] if before else a[1], months).date()
    return day_span(ctx, point - timedelta(days=15), point + timedelta(days=15))


def _in_month(m: re.Match[str], ctx: Ctx) -> Span | None:
    return _month_year(ctx, month_number(m.group(1)), year_said(ctx, m.group(2)))


_THIS = r"(?:(?P<a>" + _ANCHOR + r")|the\s+(?P<unit>week|month|year)\b)"  # "the month": this one
_NTH = r"first|1st|second|2nd|third|3rd|fourth|4th|last"
# What may follow a time that ends its phrase: the text's end, punctuation, or a word that starts another.
_PHRASE_END = (r"(?=\s*(?:[?.!,;:)]|$|\s(?:at|in|with|for|and|or|when|while|about|from|to|did|was|were|we|i|you|he"
               r"|she|they|last|this|year|morning|afternoon|evening|night)\b))")
# Parts of a period and periods placed by a day (engram.timeparts), as they stand after "since",
# "between" or "before" too: "since early March" is from March 1 to now, not March 1-10.
# Each with a word it needs, tested first where it stands alone: most texts have none, and these
# patterns cost a third of the parse.
_HOLIDAY_WORDS = ("christmas", "thanksgiving", "easter", "halloween", "new year", "valentine", "mother", "father",
                  "memorial", "labor", "labour", "patrick", "independence")
_PART_FORMS: tuple[tuple[tuple[str, ...], str, Handler], ...] = (
    (("early", "mid", "late"), r"(?P<part>early|mid|late)(?:\s*-\s*|\s+)" + _THIS,
     lambda m, ctx: timeparts.part_of(m, ctx, _anchor)),
    (("beginning", "start", "middle", "end"), r"(?:the\s+)?(?P<part>beginning|start|middle|end)\s+(?P<of>of)\s+"
     + _THIS, lambda m, ctx: timeparts.part_of(m, ctx, _anchor)),
    (("week",), r"the\s+(?P<nth>" + _NTH + r")\s+(?P<kind>week|weekend)\s+(?:of|in)\s+" + _THIS,
     lambda m, ctx: timeparts.nth_of(m, ctx, _anchor)),
    (("week",), r"(?:the\s+)?(?P<kind>week|weekend)\s+of\s+(?:the\s+)?(?P<a>" + _ANCHOR + ")",
     lambda m, ctx: timeparts.week_of(m, ctx, _anchor)),
    (("fortnight",), r"(?:a|one)\s+fortnight\s+ago\b", timeparts.fortnight_ago),
    (("fortnight",), r"(?:the\s+)?(?:past|last|previous)\s+fortnight\b", timeparts.past_fortnight),
    (("weekend",), _NUM + r"\s+weekends?\s+ago\b", timeparts.weekends_ago),
    (("before last", "after next"), r"the\s+(week|month|year)\s+(before\s+last|after\s+next)\b",
     timeparts.two_away),
    (_HOLIDAY_WORDS, r"(?:(?P<which>last|this|next)\s+)?(?P<h>" + timeparts.HOLIDAY + r")\b"
     r"(?:\s+(?:in\s+)?(?P<year>(?:19|20)\d\d\b|(?:last|this|next)\s+year\b))?" + _PHRASE_END, timeparts.holiday),
)
_PART_SPECS = tuple((re.compile(p, _FLAGS), h) for _, p, h in _PART_FORMS)
# What may follow "since", "between", "before" and the like: a part form (its names unnamed, so two
# may stand in one pattern), else a single period.
_WIDE = "(?:" + "|".join(re.sub(r"\(\?P<\w+>", "(?:", p) for _, p, _ in _PART_FORMS) + "|" + _ANCHOR + ")"
_LEAD = r"(?:in|during|at|by|on|over|around|throughout|towards?)"
_EARLY, _GENERIC, _HOLIDAY = _PART_FORMS[0], _PART_FORMS[1:-1], _PART_FORMS[-1]
# Each as it stands alone, with the words it needs.
_TOP_PARTS: tuple[tuple[tuple[str, ...], str, Handler], ...] = (
    # A bare "early" or "late" says when, not which part ("Did I work late last month?"): it needs a
    # preposition or "the" before it ("in late October", "the late 1990s" is no year).
    (("early", "late"), r"\b(?:(?:" + _LEAD + r"|the)\s+)+(?=early|late)" + _EARLY[1], _EARLY[2]),
    (("mid",), r"\b(?:(?:" + _LEAD + r"|the)\s+)*(?=mid)" + _EARLY[1], _EARLY[2]),
    *((words, r"\b(?:" + _LEAD + r"\s+)?" + p, h) for words, p, h in _GENERIC),
    # A holiday names a time only after a preposition or "last", "this", "next", and where it ends a
    # phrase: "a gift for Christmas", "the Thanksgiving menu", "the latest on the Christmas plans"
    # are about the holiday, not when.
    (_HOLIDAY[0], r"\b(?:(?P<lead>on|over|at|during|around|throughout)\s+(?:the\s+)?|(?=(?:last|this|next)\s))"
     + _HOLIDAY[1], _HOLIDAY[2]),
    # "on 11/13" as a date, not "on 4/5 stars" or "on 3/4 of the team".
    (("/",), r"\bon\s+(\d{1,2})/(\d{1,2})(?![\d/])(?=\s*(?:[?.!,;:)]|$|\s+(?:at|in|with|for|and|or|when|while"
     r"|about|from|to|did|was|were|we|i|you|he|she|they)\b))", timeparts.month_day),
    (("on the",), r"\bon\s+the\s+(\d{1,2})(?:st|nd|rd|th)(?=\s*(?:[?!,]|$))", timeparts.day_of_month),
)

# Each with the words it cannot match without (none: it is tried on every text). Those that read
# what follows "since", "between", "before" hold every part form: compiling the six took 180 ms of
# every process's start, so each pattern is compiled when a text first holds one of its words.
_TOP: tuple[tuple[tuple[str, ...], str, Handler], ...] = (
    *_TOP_PARTS,
    (("before", "after", "prior"),
     r"\b(?:the\s+)?(?:(?P<n>" + _NUM[1:-1] + r")\s+)?(?P<unit>weekend|week|day|month|year|"
     + "|".join(timeparts.WEEKDAY_NAMES) + r")s?\s+"
     r"(?P<op>before|after|prior\s+to)\s+(?P<a>" + _WIDE + ")", _next_to),
    ((*timeparts.WEEKDAY_NAMES, *WEEKDAYS), timeparts.WEEKDAY_DATE, timeparts.weekday_date),
    (("between",), r"\bbetween\s+(?P<a>" + _WIDE + r")\s+(?:and|&)\s+(?P<b>" + _WIDE + ")", _between),
    (("from",), r"\bfrom\s+(?P<a>" + _WIDE + r")\s+(?:to|until|till|through|thru)\s+(?P<b>" + _WIDE + ")", _between),
    (("since",), r"\bsince\s+(?P<a>" + _WIDE + ")", _since),
    (("before", "prior", "until", "till", "up"),
     r"\b(?P<op>before|prior\s+to|until|till|up\s+to)\s+(?P<a>" + _WIDE + ")", _before),
    (("after",), r"\bafter\s+(?P<a>" + _WIDE + ")", _after),
    # A bare month needs a preposition ("may" is also a word); "on November 13" is a day, not the month.
    ((), r"\b(?:in|during|on|over|throughout)\s+(?:the\s+month\s+of\s+)?" + _MONTH
     + r"(?!\.?\s+\d{1,2}(?:st|nd|rd|th)?(?![\d:])(?!\s*(?:-|–|to|through|and)\s*\d))" + _YEAR_OPT, _in_month),
    ((), r"\b(?:in|during|throughout)\s+(?:the\s+year\s+)?" + _P_YEAR, _year),
    *(((), p, h) for p, h in _PERIODS if p not in (_P_MONTH, _P_YEAR)),
    ((), r"\b(?:past|last|previous|recent)\s+" + _NUM + r"\s+" + _UNIT, _rolling),
    ((), r"\bpast\s+(hour|day|week|month|quarter|year)\b", _past_unit),
)


@functools.cache
def _top_pattern(index: int) -> re.Pattern[str]:
    return re.compile(_TOP[index][1], _FLAGS)


# Vague words lose to any concrete expression, wherever it is.
_VAGUE_SPECS = ((re.compile(r"\b(?:recent|recently|lately)\b", _FLAGS), _recent),)


def _check_now(now: datetime) -> Ctx:
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise ValidationError("now", f"must be a timezone-aware datetime, got {now!r}")
    return Ctx(now=now, tz=now.tzinfo, today=now.date())


def _to_utc(dt: datetime) -> datetime:
    return dt if dt in (MIN_UTC, MAX_UTC) else dt.astimezone(UTC)


def parse_time_scope(text: str, now: datetime) -> TimeRange | None:
    """The first (leftmost, longest) time expression in ``text`` as a closed UTC range, else None.

    Raises ValidationError only for a naive ``now``; nonsense text gives None. The last answers are
    kept: a retrieval asks twice with one ``now`` (its cache key holds the range, then understanding
    reads it), and parsing a long query takes a fraction of a millisecond.
    """
    _check_now(now)
    if not isinstance(text, str) or not text:
        return None
    # The zone and the offset join the key: equal instants in two zones compare equal but have
    # different days, and 01:30 before and after a clock is set back compare equal but are not.
    return _parse_cached(text, now, (now.tzinfo, now.utcoffset()))


#: The dotted capital and dotless small i (Turkish) match "i" in the patterns but fold to other
#: letters, so the words read from a match ("UNTİL", "FRİDAY") were never "until" or "friday": read
#: as I and i, one letter for one, so a match's place in the text is its place in the text given.
_TURKISH_I = str.maketrans({"\u0130": "I", "\u0131": "i"})


@functools.lru_cache(maxsize=64)
def _parse_cached(given: str, now: datetime, _zone: object) -> TimeRange | None:
    ctx = _check_now(now)
    text = given.translate(_TURKISH_I)
    if _AHEAD.search(text) and not _BEHIND.search(text):
        ctx = replace(ctx, ahead=True)
    found: list[tuple[int, int, int, int, re.Match[str], Handler]] = []
    folded = text.casefold()
    tried = [(0, index, _top_pattern(index), handler) for index, (words, _, handler) in enumerate(_TOP)
             if not words or any(w in folded for w in words)]  # the patterns' case folds as the text's
    tried += [(1, index, pattern, handler) for index, (pattern, handler) in enumerate(_VAGUE_SPECS)]
    for tier, index, pattern, handler in tried:
        for m in pattern.finditer(text):
            found.append((tier, m.start(), m.start() - m.end(), index, m, handler))
    found.sort(key=lambda item: item[:4])
    for tier, *_, m, handler in found:
        try:
            span = handler(m, ctx)
            if span is None:
                continue
            start, end = _to_utc(span[0]), _to_utc(span[1])
        except (ValueError, OverflowError, KeyError, IndexError):
            continue  # e.g. "February 30", or a range past year 9999
        if start <= end:
            return TimeRange(start=start, end=end, expression=given[m.start():m.end()], vague=tier == 1,
                             about=not ctx.ahead and end < ctx.now and for_a_period(text, m.start()))
    return None
