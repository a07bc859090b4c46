"""Sentence boundaries that never rewrite the text they split.

A sentence is a span of the original string, so clipping is a plain cut: whatever is kept is an
exact prefix of the (left-stripped) input. The rules err towards *not* splitting: a missed
boundary only keeps a little more text, while a false one can cut an e-mail address, a URL or a
price in half and change what the memory says.

A boundary is

* a run of ``.``, ``!``, ``?``, ``‼``, ``…`` (or ``؟``, ``।``, ``۔``), optionally followed by
  closing quotes or brackets, then whitespace, then an uppercase (or caseless) letter, possibly
  behind opening quotes or brackets, or the end of the text;
* a run containing a CJK full stop or mark (``。！？｡``) and its closers, whatever follows
  (those scripts put no space between sentences) unless it is more terminators;
* a paragraph break: a blank line, or a newline followed by a list marker (``-``, ``*``, ``•``,
  ``1.``, ``2)``, ``a)``, ``#``...).

A lone ``.`` is no boundary after a common abbreviation (``Dr.``, ``Inc.``, ``etc.``, ``Jan.``),
a dotted abbreviation (``e.g.``, ``U.S.``, ``p.m.``), a single capital initial (``J. R. R.
Tolkien``) or an enumerator that opens the sentence (``1. Buy milk``). A run of dots only (an
ellipsis) is no boundary inside a sentence. Dots inside a token (``acme.io``, ``2.3.1``,
``$18.50``, ``10.0.0.1``) are never followed by whitespace, so they never qualify.

Every step looks at a bounded window or walks over text no other step walks again, so splitting
is linear in the length of the input.
"""

from __future__ import annotations

import re

from engram.errors import ConfigError

__all__ = ["clip_content", "split_sentences"]

_CJK_TERMINATORS = "。！？｡"
_TERMINATORS = ".!?‼⁇⁈⁉…؟।॥۔" + _CJK_TERMINATORS
_CLOSERS = "\"'”’»)]}」』】》〉"
_OPENERS = "\"'“‘«([{¿¡「『【《〈"
_CJK_SET = frozenset(_CJK_TERMINATORS)

_T = f"[{re.escape(_TERMINATORS)}]"
_C = f"[{re.escape(_CLOSERS)}]"
_O = f"[{re.escape(_OPENERS)}]"
# Indentation, then a bullet, a heading or an enumerator, then whitespace or the end of the text.
_LIST_MARKER = r"[ \t\r\f\v]*+(?:[-*•+‣◦▪–—]|#{1,6}|\d{1,3}[.)]|[A-Za-z][.)]|\(\w{1,3}\))(?:\s|\Z)"
# Everything that can end a sentence, filtered as far as a regex can without backtracking, so that
# dots inside tokens and runs of stray punctuation never reach Python:
# * a whole run (the lookbehind keeps the engine from retrying inside it, the possessive
#   quantifiers from giving characters back) with its closers, then the end of the text or
#   whitespace and a letter, perhaps behind a few opening quotes; ``first`` captures that letter.
#   The lookbehind comes after the first character so that every alternative opens with a
#   character class, which lets the engine skip ahead to the next candidate character;
# * a CJK mark with the rest of its run, whatever follows;
# * a newline opening a blank line or a list item.
_CANDIDATE = re.compile(
    rf"{_T}(?<!{_T}.){_T}*+{_C}*+(?=\s*+\Z|\s++{_O}{{0,4}}+(?P<first>[^\W\d_]))"
    rf"|[{_CJK_TERMINATORS}]{_T}*+{_C}*+"
    rf"|\n(?=[ \t\r\f\v]*+(?:\n|\Z)|{_LIST_MARKER})"
)
_SPACE = re.compile(r"\s*+")

# Lowercase, without the final dot. "No." is left out on purpose: "No. 5" is already protected by
# the digit that follows, and as a word it often ends a sentence ("No. I disagree.").
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "rev", "gen", "gov", "sen", "rep",
        "capt", "col", "lt", "sgt", "hon", "messrs", "ph.d",
        "inc", "ltd", "co", "corp", "llc", "dept", "bros", "assn",
        "vs", "etc", "al", "cf", "viz", "approx", "ca", "fig", "figs", "vol", "ed", "eds", "pp",
        "ave", "blvd", "rd",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip
# Abbreviations are short; a longer token before a dot is a word, so the backward walk stops here.
_MAX_TOKEN = 12


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as :func:`clip_content` counts them, each without surrounding whitespace.

    Each sentence is a slice of ``text``; nothing is re-spaced. Text after the last boundary counts
    as a sentence, and a text with no boundary is one sentence. Blank text has none.
    """
    return [text[start:end] for start, end in _spans(text)]


def clip_content(text: str, max_sentences: int) -> str:
    """The first ``max_sentences`` sentences of ``text``, then ``...`` if anything was cut.

    The result is ``text`` with surrounding whitespace removed when it has at most
    ``max_sentences`` sentences; otherwise it is an exact prefix of the left-stripped text, ending
    at the last kept sentence, followed by ``...``. Raises :class:`ConfigError` when
    ``max_sentences`` is less than 1.
    """
    if max_sentences < 1:
        raise ConfigError("clip_sentences", f"must be at least 1, got {max_sentences}")
    stripped = text.strip()
    spans = _spans(stripped)
    if len(spans) <= max_sentences:
        return stripped
    return stripped[: spans[max_sentences - 1][1]] + "..."


def _spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of each sentence, trimmed of whitespace at both ends."""
    spans: list[tuple[int, int]] = []
    start = _skip_space(text, 0)
    for match in _CANDIDATE.finditer(text):
        if match.start() < start:
            continue  # inside the whitespace already skipped after the previous boundary
        if match.group() == "\n":
            end = _trim_end(text, start, match.start())
        elif _is_boundary(text, match, start):
            end = match.end()
        else:
            continue
        if end > start:
            spans.append((start, end))
        start = _skip_space(text, match.end())
    if start < len(text):
        spans.append((start, _trim_end(text, start, len(text))))
    return spans


def _is_boundary(text: str, match: re.Match[str], sentence_start: int) -> bool:
    """Whether a terminator run the candidate pattern let through really ends a sentence."""
    run = match.group().rstrip(_CLOSERS)
    if not _CJK_SET.isdisjoint(run):
        # Whatever follows, unless the run goes on after its closers ("。」..."): counting those
        # dots as a sentence of their own would let a clipped text's "..." add a sentence.
        return match.end() == len(text) or text[match.end()] not in _TERMINATORS
    first = match.group("first")
    if first is None:
        return True  # the end of the text
    if first.islower():
        return False  # "Inc. approved", "Ready? yes"
    if not run.strip(".…"):
        # A lone dot may close an abbreviation; a longer run of dots is an ellipsis mid-sentence.
        return run == "." and not _dot_is_part_of_token(text, match.start(), sentence_start)
    return True


def _dot_is_part_of_token(text: str, dot: int, sentence_start: int) -> bool:
    """Whether the ``.`` at ``dot`` closes an abbreviation, an initial or a leading enumerator."""
    lower = max(sentence_start, dot - _MAX_TOKEN - 1)
    begin = dot
    while begin > lower and (text[begin - 1].isalpha() or text[begin - 1] == "."):
        begin -= 1
    token = text[begin:dot]
    if token and begin > sentence_start and begin == lower:
        return False  # the walk hit its limit: a long word, not an abbreviation
    if token:
        lowered = token.lower()
        if lowered in _ABBREVIATIONS:
            return True
        if len(token) == 1:
            return token.isupper()  # an initial: "J. R. R. Tolkien"; a lone "a." ends a sentence
        parts = lowered.split(".")
        return len(parts) > 1 and all(len(part) == 1 and part.isalpha() for part in parts)  # e.g, u.s, p.m
    # "1." opening the sentence numbers a list item; "in 2024." closes one.
    digits = dot
    while digits > sentence_start and dot - digits < 3 and text[digits - 1].isdigit():
        digits -= 1
    return digits == sentence_start and digits < dot


def _skip_space(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return pos if match is None else match.end()


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end
