"""Questions about what no longer holds ("What was my old gym?", "Who was our contact at Globex
before Sofia?", "Which carrier did we use for Acme before DHL?"): current truth leaves a superseded
fact out of every retrieval, and here it is the answer. Such a question also reads superseded facts
(when the caller's statuses are the default, active only), and a superseded fact gains in
proportion to its own relevance (:func:`superseded`), so the old value comes before the one that
replaced it. Only facts: an old version of a document is not what "my old address" asks for.

The question must be put in the past ("was", "were", "did", "had", "used to") and name what was
("old", "previous", "former", "before ...", "originally", "no longer", "until ..."): "Where does
my old friend Tom work now?" and "What's the prior approval process?" ask about what holds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from engram.model import Filters, MemoryRecord, TimeRange
from engram.retrieve.latest import SHORT_QUESTION
from engram.text import index_terms, query_terms
from engram.timeparse import MIN_UTC

__all__ = [
    "PAST_KINDS", "asked_by_time_alone", "asks_about_the_past", "ended", "held", "held_then", "names_predicate",
    "read_in_past", "reading_filters", "successor", "superseded",
]

#: The kinds whose superseded versions such a question reads.
PAST_KINDS = ("fact",)
#: How much of the gain each earlier version keeps against the one superseded last ("before Sofia"
#: asks for Bob, whom Sofia replaced, before Alice, whom Bob replaced).
_EARLIER = 0.7

_TENSE = re.compile(r"\b(?:was|were|did|had|used\s+to)\b", re.IGNORECASE)
_PAST = re.compile(
    r"\b(?:old|previous|previously|former|formerly|originally|no\s+longer|any\s*more|until|used?\s+to"
    r"|before\s+(?:that|this|then|(?:the|their|our|my|his|her|its)\s+\w+|\w+ing\b"
    r"|(?:they|we|i|he|she|you|it)\s+\w+|(?-i:[A-Z])[\w'’-]*)|before\s*[?.!]*\s*$)",
    re.IGNORECASE,
)
_SUCCESSOR = re.compile(r"\bbefore\s+((?-i:[A-Z])[\w'’-]*(?:\s+(?-i:[A-Z])[\w'’-]*){0,3})", re.IGNORECASE)
# A question for a state ("Which gym ...?", "What was the price ...?", "Who was ...?", "Where did I live
# ...?"), not for an event ("What did Acme order last month?").
_STATE = re.compile(
    r"^\W*(?:which\s+\w+|what\s+(?!(?:did|do|does|had|has|have|is|are|will|would|can|could|should)\b)"
    r"(?!(?:was|were)\s+(?:said|told|done|discussed|decided|asked|mentioned|agreed|shared|sent|written)\b)\w+"
    r"|who\s+(?:was|were)\b|where\s+did\s+(?:i|we|you|he|she|they)\s+(?:live|work|stay))", re.IGNORECASE)
# "How old was Leo?", "a 3-year-old laptop": an age, not what was.
_AGE = re.compile(r"\bhow\s+old\b|\b\w+[\s-]+(?:years?|months?|weeks?|days?)[\s-]+old\b", re.IGNORECASE)


def asks_about_the_past(query: str, scope: str | None = None, then: TimeRange | None = None,
                        now: datetime | None = None) -> bool:
    """Whether ``query`` asks about what held before and no longer does (see above). ``scope`` is the
    time expression the query was read to have ("before April 10"): its words are not this form's.
    A question put in the past about a state in a bounded time gone by (``then``, read against
    ``now``) asks what held then, which may have been superseded since: "Which gym did I go to in
    September?" (not "What did Acme order last month?", an event)."""
    if len(query) > SHORT_QUESTION:
        return False
    text = _own_words(query, scope)
    if _TENSE.search(text) is None:
        return False
    gone = ended(then, now) and then is not None and then.start > MIN_UTC
    return (gone and _STATE.search(text) is not None) or _PAST.search(text) is not None


def _own_words(query: str, scope: str | None) -> str:
    """``query`` without its time ``scope``'s words and without ages ("How old was Leo?")."""
    return _AGE.sub(" ", query.replace(scope, " ") if scope else query)


def ended(then: TimeRange | None, now: datetime | None) -> bool:
    """Whether ``then`` is a precise time scope that ``now`` has left behind (not "recently")."""
    return then is not None and now is not None and not then.vague and then.end < now


def asked_by_time_alone(query: str, scope: str | None = None) -> tuple[str, ...]:
    """The terms of a question about the past that names what was by its time scope alone (no
    "old", "before ...": :func:`asks_about_the_past`'s second form), else ()."""
    text = _own_words(query, scope)
    return () if _PAST.search(text) else tuple(query_terms(text))


def reading_filters(filters: Filters, past: bool) -> Filters:
    """The filters a question reads with: for one about the past, superseded versions too, when
    the statuses are the default (active only); else ``filters`` itself."""
    if past and filters.statuses == ("active",):
        return replace(filters, statuses=("active", "superseded"))
    return filters


def read_in_past(record: MemoryRecord) -> bool:
    """Whether a question about the past reads ``record``: not an old version of a document."""
    return record.status != "superseded" or record.kind in PAST_KINDS


def successor(query: str) -> str | None:
    """The name of what replaced the answer ("DHL" in "Which carrier did we use before DHL?"): it
    names the current version, so it is no entity of what is asked for."""
    found = _SUCCESSOR.search(query)
    return found.group(1) if found else None


def superseded(
    records: Sequence[MemoryRecord], then: TimeRange | None = None, now: datetime | None = None,
    asked: bool | tuple[str, ...] = True,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Per record, how much it no longer holds: 1 for a superseded fact, ``_EARLIER`` for each
    version of the same subject and predicate superseded after it, 0 for the rest; and which records
    are the current versions of those facts (what replaced the answer, not the answer). With a time
    scope ended by ``now`` (``then``, not vague), only the versions that held during it: "in
    September" asks for the gym of September, not every gym since. ``asked`` is the question's
    terms when only its scope says it asks about the past (:func:`asked_by_time_alone`): then only a
    fact whose predicate's last word is one of them ("Which gym ...": "gym", not "membership fee")."""
    scope = then if ended(then, now) else None
    words = frozenset(asked) if isinstance(asked, tuple) else None
    out = np.zeros(len(records), dtype=np.float64)
    chains: dict[tuple[str, str], list[tuple[datetime, int]]] = {}
    for i, r in enumerate(records):
        if (r.status == "superseded" and r.kind in PAST_KINDS and (scope is None or held(r, scope))
                and (words is None or names_predicate(r, words))):
            chains.setdefault(_chain(r), []).append((r.valid_to or r.created_at, i))
    for versions in chains.values():
        for later, (_, i) in enumerate(sorted(versions, reverse=True)):
            out[i] = _EARLIER ** later
    current = np.fromiter((r.status == "active" and r.kind in PAST_KINDS and _chain(r) in chains
                           and (scope is None or not held(r, scope)) for r in records), dtype=bool, count=len(records))
    return out, current


def held_then(records: Sequence[MemoryRecord], then: TimeRange, now: datetime, asked: tuple[str, ...],
              entities: Sequence[str] = ()) -> set[str]:
    """The ids of the facts, current or superseded, that held during ``then`` (a scope ended by
    ``now``), whose predicate is what the ``asked`` terms name (:func:`names_predicate`) and which
    name one of the question's ``entities`` when it names any: what a state question asked by its
    time alone points at, as a time scope points at what was said in it ("Which gym did I go to on
    October 28?" is answered by the gym since October 15, still current; not Sam's gym)."""
    if not ended(then, now) or not asked:
        return set()
    words, named = frozenset(asked), frozenset(entities)
    return {r.id for r in records if r.kind in PAST_KINDS and r.status in ("active", "superseded")
            and held(r, then) and names_predicate(r, words) and (not named or bool(named.intersection(r.entities)))}


#: The last word of a predicate that says little alone: "email address" is asked for as "email".
_GENERIC_HEADS = frozenset(index_terms("address number name code id membership status type level account"))


def names_predicate(record: MemoryRecord, words: frozenset[str]) -> bool:
    """Whether ``words`` name the predicate of ``record``: its last word ("Which gym ...": ``gym``,
    not ``membership fee``; "What was the weather like?" not ``weather app``), or its first when the
    last says little alone (``email address``, ``zip code``, ``gym membership``)."""
    terms = index_terms(record.predicate or "")
    heads = terms[-1:] + (terms[:1] if terms and terms[-1] in _GENERIC_HEADS else [])
    return bool(words.intersection(heads))


def held(record: MemoryRecord, then: TimeRange) -> bool:
    """Whether ``record`` held at some time in ``then``: from its start (``valid_from``, else when it
    was stored) until it was superseded (``valid_to``)."""
    start = record.valid_from or record.created_at
    return start <= then.end and (record.valid_to is None or record.valid_to > then.start)


def _chain(record: MemoryRecord) -> tuple[str, str]:
    """The versions a fact belongs to: its subject and predicate (itself alone without a subject)."""
    if not record.subject:
        return ("", record.id)
    return (record.subject.casefold(), (record.predicate or "").casefold())
