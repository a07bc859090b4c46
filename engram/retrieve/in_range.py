"""A query's time scope, after ranking: which memories it points at, listed first and kept above
the score floor (a request for work that speaks of no conversation or day of the user's trusts its
scope never: "Write the Q3 churn query" is about the data's quarter).

"What did Acme order last month?" is answered by what happened last month, even when memories from
other months match its words better; "What did I do a week ago?" by that week's memories, though no
word of the query is in them. A scope earns that only when it says something about what answers:
a precise range (not "recently"), memories that happened in it (not facts and procedures, dated by
when they were stored), whose best scores a tenth of the best overall, and of those only the ones
that score a tenth of that best (their content matches the query as the range's best does).
What names a day of the range, said outside it ("October was 4,120 credits", said in November; a
plan said before of a day in it) joins them on the same terms: it tells of the range at least as
surely as a memory that was merely said in it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence, Set

from engram.model import TimeRange
from engram.retrieve.types import Scored

__all__ = ["RANGE_MATCH", "REQUEST_SCOPE_TRUST", "SCOPE_TRUST", "TIMELESS_KINDS", "WORK_SCOPE_TRUST", "apply_min_score",
           "in_range_first", "pointed_at", "scope_trust"]

#: Kinds whose date is when they were stored, not when what they say happened: a time scope
#: neither lifts them above other memories nor keeps them under the score floor.
TIMELESS_KINDS = ("fact", "procedure")
#: A time scope lifts the memories inside it (and keeps them above the score floor) only while the
#: best of them scores at least this share of the best memory overall: a scope read into a question
#: that means no date ("the rotation for Admon on a Sunday") must not put that day's unrelated
#: messages above a match at 0.99. 0.25 cost the everyday set a time question; 0.1 changed no dev answer.
SCOPE_TRUST = 0.1
#: ... and this share for a request ("A customer who bought an annual plan six weeks ago wants their
#: money back. How should I handle it?"): a request's time often tells of the situation it describes,
#: not of which memories it wants, and that week's unrelated messages (at 0.15 of the refund policy)
#: came first. A request that means its scope ("Summarize what we discussed yesterday") finds
#: yesterday's messages among its best matches (0.6 of the best).
REQUEST_SCOPE_TRUST = 0.3
#: ... and never for a request that speaks of no conversation ("Write the Q3 churn query", "Find
#: everyone who assumed the admin role in the last week"): its time is the work's, not when anything
#: was said, and the range lifts nothing and keeps nothing above the floor (the temporal signal
#: still counts). "Write the Q3 churn query" had listed Q3's messages above the new churn rule and
#: the restated Q3 figure, its two best matches (0.99, 0.77), said in Q4. A probe file of long
#: technical chats written blind to the code R@5/10 0.743/0.823 -> 0.750/0.829; the other files,
#: every dev set and the scenarios unchanged. A request that speaks of one keeps REQUEST_SCOPE_TRUST.
WORK_SCOPE_TRUST = math.inf
#: Words by which a request speaks of a conversation or of the user's own days, whose time is when
#: things were said or done: "Summarize what we discussed yesterday", "List what I did last weekend",
#: "Give me a recap of yesterday", "Show me my notes from Monday", "Write up the minutes of the sync".
_OF_TALK = re.compile(
    r"\b(?:discuss\w*|talk\w*|said|say|told|tell|mention\w*|decided|decide|agreed|agree|chat\w*|covered|went\s+over"
    r"|asked|spoke|conversations?|meetings?|messages?|emails?|summar\w*|recap\w*|remind\w*|catch\s+me\s+up"
    r"|notes?|minutes|stand-?ups?|syncs?|calls?|did|done|happened|went|wrote|sent|diary|journal)\b", re.IGNORECASE)
#: ... and lifts (and keeps above the floor) only the memories inside it that score at least this
#: share of the best of them: their content matches the query as the range's best does. "What did
#: Acme order last month?" no longer lists "The roaster's afterburner was serviced" (0.064, last
#: month) above Acme's 0.95 summary, while "What did I do last weekend?", whose answers all score
#: low (0.113 ... 0.015), keeps them all. No dev figure moved; 0.15 cost the everyday set a
#: weekend answer at 0.13 of the best.
RANGE_MATCH = 0.1


def scope_trust(query: str, requests: bool) -> float:
    """How much a query's time scope is trusted to point at what answers it (:func:`pointed_at`'s
    ``trust``): a question's :data:`SCOPE_TRUST`, a request's :data:`REQUEST_SCOPE_TRUST` when it
    speaks of a conversation, else :data:`WORK_SCOPE_TRUST`."""
    if not requests:
        return SCOPE_TRUST
    return REQUEST_SCOPE_TRUST if _OF_TALK.search(query) else WORK_SCOPE_TRUST


def in_range_first(scored: Sequence[Scored], time_range: TimeRange, ahead: Set[str] = frozenset(),
                   trust: float = SCOPE_TRUST, naming: Set[str] = frozenset(),
                   rules: Set[str] = frozenset()) -> list[Scored]:
    """A time-scoped query's answer: memories that happened inside the range ahead of the others
    (tier 1), each part in score order; facts and procedures (:data:`TIMELESS_KINDS`) stored in
    the range are not lifted, so "What did Acme order last month?" is not answered with last
    month's procedures. Outside memories still follow, so a range that holds nothing relevant
    falls back to the best matches overall instead of an empty answer. The rules that govern a
    request (``rules``: its ``closest_rule`` memories) hold whatever day it speaks of and stand
    with what is inside: "Dennis had a fall at 4 this morning. What needs doing today?" is
    answered by the falls procedure, stored months before, beside this morning's notes. A vague
    range ("recently") keeps plain score order: its temporal signal already favours what falls
    inside it, and "What did Melanie paint recently?" still wants the painting she mentioned a
    month before."""
    ids = pointed_at(scored, time_range, ahead, trust, naming)
    if not ids:
        return list(scored)
    ids = ids | rules
    inside = [s for s in scored if s.record.id in ids]
    # Built directly: dataclasses.replace, which checks its fields each call, cost more.
    outside = [s for s in scored if s.record.id not in ids]
    return inside + [Scored(s.record, s.score, s.signals, s.weights, s.reasons, s.vector, 1) for s in outside]


def pointed_at(scored: Sequence[Scored], time_range: TimeRange | None, ahead: Set[str] = frozenset(),
               trust: float = SCOPE_TRUST, naming: Set[str] = frozenset()) -> set[str]:
    """The ids of the memories a query's time scope points at: dated inside a precise range
    (:func:`_dated_inside`) and scoring at least :data:`RANGE_MATCH` of the best of those, provided
    that best scores at least ``trust`` (:data:`SCOPE_TRUST`, :data:`REQUEST_SCOPE_TRUST` for a
    request; :data:`WORK_SCOPE_TRUST`, never, for a request for work: :func:`scope_trust`) of the
    best memory overall (else the scope says nothing about what answers, and none are); and those
    of ``naming`` (said outside the range, naming a day inside it) that score as much."""
    if time_range is None or time_range.vague or time_range.about or not math.isfinite(trust):
        return set()
    inside = [s for s in scored if _dated_inside(s, time_range, ahead)]
    best = max((s.score for s in scored), default=0.0)
    if not inside or max(s.score for s in inside) < trust * best:
        return set()
    best_inside = max(s.score for s in inside)
    ids = {s.record.id for s in inside if s.score >= RANGE_MATCH * best_inside}
    ids.update(s.record.id for s in scored if s.record.id in naming and s.score >= RANGE_MATCH * best_inside)
    return ids


def _dated_inside(item: Scored, time_range: TimeRange, ahead: Set[str]) -> bool:
    """Whether a time scope points at this memory: it happened inside the range, as far as its
    date tells (a fact or procedure is dated by when it was stored, which says nothing of what it
    is about), and some evidence relates it to the query."""
    record = item.record
    if item.score <= 0:
        return False
    if record.kind not in TIMELESS_KINDS and time_range.start <= record.created_at <= time_range.end:
        return True
    return record.id in ahead  # "on Dec 1", said before of days to come (``names_day``): a fact too


def apply_min_score(
    scored: Sequence[Scored], min_score: float, *, keep_best: bool = False, time_range: TimeRange | None = None,
    ahead: Set[str] = frozenset(), trust: float = SCOPE_TRUST, naming: Set[str] = frozenset(),
) -> tuple[list[Scored], int]:
    """Keep items scoring at least ``min_score`` (the ``score_threshold`` filter); also the count dropped.

    With ``keep_best`` (the caller narrowed the search with filters) a floor that would drop every
    candidate keeps them all instead: the filter already says what is wanted, and "What happened?"
    over one ticket's memories carries no words to score. Likewise the query's own time scope
    (``time_range``, unless vague) is evidence the floor does not overrule: a memory inside it with
    any score is kept (not a fact or procedure: their date is when they were stored; not when the
    scope points at nothing relevant, :func:`pointed_at`), so "What did I do a week ago?" is not
    answered with better-worded memories from other weeks while that week's are dropped
    (LongMemEval dev turn recall_all@10 +1.2 with the defaults; the everyday time questions 0.78 ->
    0.83).
    """
    inside = pointed_at(scored, time_range, ahead, trust, naming)
    kept = [s for s in scored if s.score >= min_score or s.record.id in inside]
    if not kept and keep_best:
        kept = list(scored)
    return kept, len(scored) - len(kept)
