"""Questions about the newest of something ("When did Acme last order?", "What was Tom's last
message?", "What's the latest on Pinecrest?"): of everything that matches what the question is
about, the newest answers it. Meaning and keywords rank Acme's first order, which says "order" as
plainly, above its last one; the question's own "last" is in no memory.

Such a question lets the memories that fit its subject gain by how new they are among those that
fit (:func:`newest_first`): the newest fully, the one before it half, the one before that a quarter.
A memory fits when it names the question's entity (a speaker's own words, when the entity speaks)
and holds a word of what is asked about besides the names ("order" in "When did Acme last
order?"), or is close to the whole question in meaning. "Recently" and "lately" do not make such a
question: "What did Melanie paint recently?" asks about a painting she called recent when she spoke
of it, not about her newest memory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.latest import SHORT_QUESTION, same_words
from engram.text import index_terms, query_terms

__all__ = ["FIT_KEYWORDS", "FIT_MEANING", "Newest", "asks_for_the_newest", "newest_first"]

#: The meaning (calibrated, 1 a clear match) at which a memory fits the question without sharing
#: a word of its subject: "When did I last fly?" of "Booked flights to Porto".
FIT_MEANING = 0.9
#: The keyword evidence (a share of the query's best keyword match, less for a long text) a memory
#: needs for the subject's words it holds to count: a 2,000-character answer holds half of any
#: question's words by chance.
FIT_KEYWORDS = 0.5
#: How much of the newest fitting memory's gain each older one keeps, per fitting memory newer than it.
_OLDER = 0.7

# What "last" qualifies when it scopes time ("last week", "the last two days") or means something
# else ("last name", "last call"): none of these asks for the newest of something.
_NOT_NEWEST = (
    r"(?:weeks?|weekends?|months?|years?|days?|nights?|hours?|minutes?|seconds?|mornings?|evenings?"
    r"|afternoons?|summer|winter|spring|autumn|fall|quarter|semester|season|decade|century|few|couple"
    r"|several|\d+|two|three|four|five|six|seven|eight|nine|ten|twelve|half|monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday|christmas|easter|thanksgiving|name|names|resort|call|minute|word"
    r"|but|of\s+(?:the|my|our|his|her|their)\s+\w+\s+(?:left|remaining))"
)
_NEWEST = re.compile(
    r"(?<!\bat\s)\blast\b(?![\s-]*" + _NOT_NEWEST + r"\b)"
    r"|(?<!\bat\sthe\s)\blatest\b|\bnewest\b|\bmost\s+recent(?:ly)?\b",
    re.IGNORECASE,
)
# Words that say how the question asks, not what about: "What was the last thing Bob said?" is about
# whatever Bob said. Stemmed as a query's terms are.
_FRAMING = frozenset(index_terms(
    "thing things something anything stuff message messages say said says saying tell told talk talked talking "
    "mention mentioned news update updates happen happened happening going go went hear heard write wrote use used "
    "post posted chat channel thread email emailed text texted reply replied "
    "last latest newest recent recently time times one ones"
))


class Newest(NamedTuple):
    """A question about the newest of something, as ranking reads it: its text and the stemmed
    words of what it asks about besides names (empty: whatever its entities say)."""

    query: str
    subject: frozenset[str]


def asks_for_the_newest(query: str, scope: str | None = None) -> Newest | None:
    """The question as :func:`newest_first` reads it when ``query`` asks for the newest of something
    ("last", "latest", "newest", "most recent" not scoping time), else None. ``scope`` is the time
    expression the query was read to have ("last week"): its "last" is not this one."""
    if len(query) > SHORT_QUESTION:
        return None
    text = query.replace(scope, " ") if scope else query
    if _NEWEST.search(text) is None:
        return None
    names = {w for w in re.findall(r"(?<![.?!]\s)(?<!^)\b[A-Z][\w'’-]*", text)}
    named = set(index_terms(" ".join(names)))
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
) -> npt.NDArray[np.float64]:
    """Per record, how new it is among those that fit the question, in [0, 1]: 1 for the newest that
    fits, ``_OLDER`` per fitting memory newer than it; 0 for one that does not fit. ``named`` is each
    record's entity overlap with the query (when any record has one, only those with the most fit:
    a speaker's own words over others' mentions of them), ``meaning`` its calibrated similarity.
    A memory after ``now``, or that is the question itself, does not fit."""
    n = len(records)
    fits = np.fromiter((r.created_at <= now and not same_words(r.content, newest.query) for r in records),
                       dtype=bool, count=n)
    named_one = bool(named.size) and named.max() > 0
    if named_one:
        fits &= named >= named.max()
    if newest.subject:
        need = (len(newest.subject) + 1) // 2
        says = np.fromiter((len(newest.subject & set(index_terms(r.content))) >= need if fit else False
                            for r, fit in zip(records, fits, strict=True)), dtype=bool, count=n)
        # A long text holds half of any question's words by chance: its keyword evidence must agree.
        says &= keywords >= FIT_KEYWORDS
        says |= meaning >= FIT_MEANING
        # Words nothing of the named one's says are how the question asks ("... in the family chat").
        if says[fits].any() or not named_one:
            fits &= says
    # Memories said at the same time are as new as each other (the turns of one dated session).
    times = sorted({records[i].created_at for i in range(n) if fits[i]}, reverse=True)
    newer = {when: sum(1 for i in range(n) if fits[i] and records[i].created_at > when) for when in times}
    out = np.zeros(n, dtype=np.float64)
    for i in range(n):
        if fits[i]:
            out[i] = _OLDER ** newer[records[i].created_at]
    return out
