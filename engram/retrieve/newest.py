"""Questions about the newest of something ("When did Acme last order?", "What was Tom's last
message?", "What's the latest on Pinecrest?"): of everything that matches what the question is
about, the newest answers it. Meaning and keywords rank Acme's first order, which says "order" as
plainly, above its last one; the question's own "last" is in no memory.

Such a question lets the memories that fit its subject gain by how new they are among those that
fit (:func:`newest_first`): the newest fully, the one before it 0.7 of that, the one before that
0.49. A memory fits when it names the question's entity (a speaker's own words, when the entity
speaks) and holds half of the words of what is asked about besides the names ("order" in "When did
Acme last order?"), or is close to the whole question in meaning. "Recently" and "lately" do not make such a
question: "What did Melanie paint recently?" asks about a painting she called recent when she spoke
of it, not about her newest memory.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord, TimeRange
from engram.retrieve.latest import SHORT_QUESTION, normal_words
from engram.text import index_terms, query_terms

__all__ = ["FIT_KEYWORDS", "FIT_MEANING", "Newest", "asks_for_the_newest", "newest_first", "without_names"]

#: The meaning (calibrated, 1 a clear match) at which a memory fits the question without sharing
#: a word of its subject: "When did I last fly?" of "Booked flights to Porto".
FIT_MEANING = 0.9
#: The keyword evidence (a share of the query's best keyword match, less for a long text) a memory
#: needs for the subject's words it holds to count: a 2,000-character answer holds half of any
#: question's words by chance.
FIT_KEYWORDS = 0.5
#: How much of the newest fitting memory's gain each older one keeps, per fitting memory newer than it.
_OLDER = 0.7
#: How much of a memory's text is read for the subject's words: a pasted file is not stemmed whole.
_READ = 4_000

# What "last" qualifies when it scopes time ("last week", "the last two days", "last Christmas") or
# means something else ("last name", "the last step", "last-mile", "last long" and "Last.fm"): none
# of these asks for the newest of something. A count alone does ("Tom's last two messages").
_UNITS = (
    r"(?:weeks?|weekends?|months?|years?|days?|nights?|hours?|minutes?|seconds?|mornings?|evenings?"
    r"|afternoons?|summers?|winters?|springs?|autumns?|falls?|quarters?|semesters?|seasons?|decades?"
    r"|centuries|century)"
)
_COUNT = (r"(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|few|a\s+few|several"
          r"|couple(?:\s+of)?|a\s+couple(?:\s+of)?|half(?:\s+a)?|many)")
_NOT_NEWEST = (
    rf"(?:{_UNITS}|{_COUNT}\s+{_UNITS}"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|christmas|easter|thanksgiving|halloween"
    r"|new\s+year|names?|resort|call|minute|word|mile|steps?|stages?|phases?|pages?|lines?|parts?|chapters?"
    r"|sections?|items?|entry|entries|points?|digits?|letters?|characters?|rows?|columns?|slides?"
    r"|paragraphs?|sentences?|rounds?|laps?|but|long|longer|for|until|through|forever"
    r"|of\s+(?:the|my|our|his|her|their)\s+\w+\s+(?:left|remaining))\b"
)
_NEWEST = re.compile(
    # not "at last", "the week before last", "second-to-last", "next to last"
    r"(?<!\bat\s)(?<!\bbefore\s)(?<!\bto\s)(?<!\bto-)\blast\b(?![\s-]*" + _NOT_NEWEST + r")(?!\.\w)"
    r"|(?<!\bat\sthe\s)(?<!\bat\sthe\svery\s)\blatest\b|\bnewest\b|\bmost[\s-]+recent(?:ly)?\b",
    re.IGNORECASE,
)
# Where something was said is not what it is about: "When did Mark last message the family chat?"
# asks for Mark's newest message, whatever it says.
_WHERE_SAID = re.compile(
    r"\b(?:(?:in|on|to|into|at)\s+)?(?:the|our|my|a)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:chat|chats|channel|thread|group|inbox|slack|whatsapp|forum)\b", re.IGNORECASE)
# "How long does the battery last?": the verb.
_LASTS = re.compile(r"^\W*how\s+long\b.*\blast\W*$", re.IGNORECASE)
# Words that say how the question asks, not what about: "What was the last thing Bob said?" is about
# whatever Bob said. Stemmed as a query's terms are.
_FRAMING = frozenset(index_terms(
    "thing things something anything stuff message messages say said says saying tell told talk talked talking "
    "mention mentioned news update updates happen happened happening going go went hear heard write wrote use used "
    "post posted chat channel thread email emailed text texted reply replied "
    "last latest newest recent recently time times one ones two three four five six seven eight nine ten few "
    "couple several many plan plans status situation progress story front"
))


class Newest(NamedTuple):
    """A question about the newest of something, as ranking reads it: its text and the stemmed
    words of what it asks about besides names (empty: whatever its entities say)."""

    query: str
    subject: frozenset[str]


def without_names(subject: Iterable[str], entities: Iterable[str]) -> frozenset[str]:
    """A newest-question's ``subject`` without the words of the names it gives (entity ids such as
    ``customer:acme``), however the question wrote them: "when did acme last order?" asks for orders."""
    return frozenset(subject) - set(index_terms(" ".join(entity.partition(":")[2] for entity in entities)))


def asks_for_the_newest(query: str, scope: str | None = None) -> Newest | None:
    """The question as :func:`newest_first` reads it when ``query`` asks for the newest of something
    ("last", "latest", "newest", "most recent" not scoping time), else None; a question of more than
    200 characters is not read. ``scope`` is the time expression the query was read to have ("last
    week"): its "last" is not this one."""
    if len(query) > SHORT_QUESTION:
        return None
    text = query.replace(scope, " ") if scope else query
    if _NEWEST.search(text) is None or _LASTS.search(text) is not None:
        return None
    text = _WHERE_SAID.sub(" ", text)
    # A name is what the entities say, not the subject ("Tom's last message?" is about Tom's words).
    named = set(index_terms(" ".join(re.findall(r"\b[A-Z][\w'’-]*", text))))
    subject = frozenset(t for t in query_terms(text) if t not in named and t not in _FRAMING)
    return Newest(query, subject)


def newest_first(
    records: Sequence[MemoryRecord],
    newest: Newest,
    *,
    named: npt.NDArray[np.float64],
    meaning: npt.NDArray[np.float64],
    keywords: npt.NDArray[np.float64],
    now: datetime,
    names_someone: bool = False,
    time_range: TimeRange | None = None,
) -> npt.NDArray[np.float64]:
    """Per record, how new it is among those that fit the question, in [0, 1]: 1 for the newest that
    fits, ``_OLDER`` to the power of the number of fitting memories said later for the others; 0 for
    one that does not fit. ``named`` is each record's entity overlap with the query: when any record
    has one, only those with the most fit (a speaker's own words over others' mentions of them); when
    the query names someone (``names_someone``) no record names, or names no one and has no subject,
    only what is close to it in meaning fits (``meaning``: calibrated similarity, FIT_MEANING).
    ``keywords`` is each record's keyword evidence. With a ``time_range``, only what was said in it
    fits. A memory after ``now``, or that repeats the question, does not fit."""
    n = len(records)
    asked = normal_words(newest.query)
    fits = np.fromiter((r.created_at <= now and asked not in normal_words(r.content) for r in records),
                       dtype=bool, count=n)
    if time_range is not None:
        fits &= np.fromiter((time_range.start <= r.created_at <= time_range.end for r in records), dtype=bool, count=n)
    close = meaning >= FIT_MEANING
    named_one = bool(named.size) and float(named.max()) > 0
    if named_one:
        fits &= named >= named.max()
    elif names_someone or not newest.subject:
        fits &= close
    if newest.subject:
        need = (len(newest.subject) + 1) // 2
        says = np.fromiter((fit and len(newest.subject & set(index_terms(r.content[:_READ]))) >= need
                            for r, fit in zip(records, fits, strict=True)), dtype=bool, count=n)
        # A long text holds half of any question's words by chance: its keyword evidence must agree.
        says = (says & (keywords >= FIT_KEYWORDS)) | close
        fits &= says
    times = sorted(records[i].created_at for i in range(n) if fits[i])
    gain = np.zeros(n, dtype=np.float64)
    for i in range(n):
        if fits[i]:  # memories said at the same time are as new as each other (one dated session's turns)
            gain[i] = _OLDER ** (len(times) - bisect_right(times, records[i].created_at))
    return gain
