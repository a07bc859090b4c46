"""A conversation between people tells one event over many turns.

"How does Jon feel about the opening night?" matches "The official opening night is tomorrow", and
Jon's answer comes two turns later: "Thanks, Gina! I'm excited! It's been a wild ride". The turn
that answers shares no word and little meaning with the question; what it shares is the
conversation the best matches are in. So a turn of a conversation between people gains from the
relevance of that conversation's other best turns among the candidates (``same_conversation``).

Only between people: a chat with an assistant is a series of requests, each turn its own subject,
and there the gain lifted the other turns of the session a fact was told in above the fact's other
sessions (LongMemEval dev, user turns recall_all@10 0.929 -> 0.881; every turn 0.849 -> 0.806).
A session counts as one between people when its candidates are all said by a named person (a role
that is no role word such as ``user`` or ``assistant``) and by at least two of them. Nothing is read
from the store: the candidates a retrieval already ranks are the conversation's turns it knows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.text import ROLE_WORDS

__all__ = ["CONVERSATION_TURNS", "conversation_support"]

#: A conversation's best this-many candidates lend it their relevance: each turn gains their sum
#: over this many, not counting itself (a turn among them is lent by the others only, so the
#: replies around the best matches catch up with them). One stray match lends little, an episode
#: found by several turns most. LoCoMo dev evidence recall@10 with the gain at 0.4: the best 2
#: turns 0.783, 3 turns 0.810, 5 turns 0.794; each turn lent by the best 3 others (itself never
#: among them) 0.791.
CONVERSATION_TURNS = 3

Column = npt.NDArray[np.float64]


def conversation_support(records: Sequence[MemoryRecord], relevance: Column) -> Column:
    """Per record, the sum of its session's :data:`CONVERSATION_TURNS` best ``relevance`` values
    (each up to 1) but its own, over :data:`CONVERSATION_TURNS`, when that session is a
    conversation between people; 0 for the rest."""
    n = len(records)
    sessions: dict[str, list[int]] = {}
    for at, record in enumerate(records):
        if record.session_id is not None:
            sessions.setdefault(record.session_id, []).append(at)
    # One array pass over every such session at once (a retrieval ranks twice, ~170 candidates).
    code = np.full(n, -1, dtype=np.int64)
    talks = [members for members in sessions.values()
             if len(members) > 1 and _between_people([records[at] for at in members])]
    for number, members in enumerate(talks):
        code[members] = number
    support = np.zeros(n, dtype=np.float64)
    inside = np.flatnonzero(code >= 0)
    if not len(inside):
        return support
    values = np.minimum(relevance[inside], 1.0)
    codes = code[inside]
    order = np.lexsort((-values, codes))
    first = np.searchsorted(codes[order], codes[order], side="left")
    best = order[np.arange(len(order)) - first < CONVERSATION_TURNS]  # each session's best turns
    lent = np.bincount(codes[best], weights=values[best], minlength=len(talks))
    least = np.full(len(talks), np.inf)
    np.minimum.at(least, codes[best], values[best])
    # A turn among the best is lent by the others only (equal values alike, whatever their order).
    mine = lent[codes]
    support[inside] = np.where(values >= least[codes], mine - values, mine) / CONVERSATION_TURNS
    return support


def _between_people(turns: Sequence[MemoryRecord]) -> bool:
    speakers = set()
    for turn in turns:
        role = (turn.role or "").strip().casefold()
        if not role or role in ROLE_WORDS:
            return False
        speakers.add(role)
    return len(speakers) >= 2
