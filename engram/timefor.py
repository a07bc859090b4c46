"""Whether a time expression names the period a thing is for ("the sales tax for Q3"), not when it
was said (engram.timeparse): such a scope is ``about`` its period."""

from __future__ import annotations

import re

__all__ = ["for_a_period"]

# "The sales tax for Q3", "the figures for last month": a period gone by that the thing is for, what
# tells of it often said after it (a return filed in October) or before (a rota): such a scope is
# ``about`` its period. Not "for the past month" (a duration), nor "paid for last week" or "ask me
# for last week" (said when: the word before "for", past an object, case telling a name), nor a
# period to come ("anything scheduled for March 3?"), read as ever by what names its days.
_FOR = re.compile(r"(?:\b([A-Za-z]+)\s+)?(?:(?:me|us|him|her|them|you|it|[A-Z][a-z]+)\s+)?\b[Ff]or\s+$")
#: Words that make "for" part of what was done or how one was ("paid for", "responsible for"),
#: besides any word ending in -ed or -ing ("billed for", "aiming for").
_FOR_WHEN = frozenset(re.findall(r"[a-z]+", """
    ask asks pay pays paid vote votes apply applies go goes went gone wait waits look looks shop shops
    search book books up out leave leaves left head heads charge thank thanks sign register apologize apologise
    responsible grateful thankful sorry ready eligible famous known liable qualified accountable"""))


# "Who floated shifting the outdoor day to Sunday?", "Did Tom push the deadline to next Friday?": the
# day a thing was moved to is what was talked about, not when (said days before, of the day to come).
# The day follows "to" at once: not "Which gym did I switch to in October?", "What did Dad bring to
# Saturday's party?" (a possessive: _OWNED), "Which movie did we go to on Friday?" (no verb of moving).
_MOVED_TO = re.compile(
    r"\b(?:mov(?:e|es|ed|ing)|shift(?:s|ed|ing)?|push(?:es|ed|ing)?|bump(?:s|ed|ing)?|switch(?:es|ed|ing)?"
    r"|chang(?:e|es|ed|ing)|reschedul(?:e|es|ed|ing)|postpon(?:e|es|ed|ing)|bring(?:s|ing)?|brought"
    r"|pull(?:s|ed|ing)?|delay(?:s|ed|ing)?)\b(?:\s+[\w'’-]+){0,4}?\s+(?:to|till|until)\s+(?:the\s+)?$", re.IGNORECASE)
# What an expression moved to cannot begin with or be followed by.
_NOT_MOVED = re.compile(r"(?i:on|in|at|during|by|for|over|yesterday|today|tonight|last|this)\b")
_OWNED = re.compile(r"[\w\s]*?['’]s\b")


def for_a_period(text: str, start: int) -> bool:
    """Whether the time expression at ``start`` names the period a thing is for (:data:`_FOR`), or
    the day a thing was moved to (:data:`_MOVED_TO`)."""
    if (_MOVED_TO.search(text, max(0, start - 80), start) and not _NOT_MOVED.match(text, start)
            and not _OWNED.match(text, start, start + 40)):
        return True
    before = _FOR.search(text, max(0, start - 80), start)
    word = "" if before is None else (before.group(1) or "").casefold()
    return before is not None and word not in _FOR_WHEN and not word.endswith(("ed", "ing"))
