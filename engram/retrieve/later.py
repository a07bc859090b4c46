"""What the user said later about the same thing as the best matches: a plan that changed, a price
renegotiated, a date moved. "What's my salary at the new job?" matches the first offer ("They
OFFERED me the job!!! ... €58,000 gross a year") in words and meaning; what the user said four days
later ("They came back: €61,500, 27 days and an NS business card for the train. ACCEPTED!!") names
neither salary nor job, yet is close in meaning to the offer it updates. A question is usually put
in the words a fact was first told in, so its newer tellings share fewer of them.

So a turn of the user's said after one of the query's :data:`BEST` best matches, as close to that
match in meaning as :data:`CLOSE` of the similarity range (that counter-offer is not: at 0.68 of the
range it stays 24th; a bar of 0.65 reaches it but moved a dozen probe questions both ways, the plans
file -1.5 at 5, and was not kept), and holding a number as the match does
(a date, a price, a count, a dose: what changes when a plan does) takes :data:`SHARE` of the
match's relevance when it has less (``later_telling``): it ranks just after it. Only the user's
turns, and the facts and episodes an app stored of the same subject (:data:`STORED_TELLINGS`): in a
conversation between people the turns close to each other are most of the talk (texting
written blind to the code, every person's turns: recall@5 -2.5). Only with a number on both sides:
without it, LongMemEval dev lost a question at 10 on user turns and one at 5 on every turn, later
turns of other sessions on the same topic taking the places of the evidence.

Blind probe files of long assistant chats, recall@5/10: plans that keep changing 0.528/0.690 ->
0.558/0.695; coding chats 0.724/0.805 -> 0.738/0.818; general-task histories 0.782/0.843 ->
0.792/0.853; the two older files 0.720/0.818 -> 0.720/0.824 and 0.668/0.821 -> 0.685/0.821;
texting, every dev set and the scenario set unchanged.

A question of how things turned out ("Where did we end up having Thanksgiving?", "Which days were
we actually away?", "What is Mateo studying now?", :func:`asks_for_the_outcome`) asks for the later
telling itself, so there it needs no number ("Thanksgiving decision: Gloria is hosting at her
house"), may be as far as :data:`OUTCOME_CLOSE` of the range, and takes :data:`OUTCOME_SHARE` of the
match's relevance: it ranks with the match it retells, not after it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.ingest.entities import MENTION
from engram.model import MemoryRecord
from engram.retrieve.columns import calibrated
from engram.retrieve.episodes import is_question
from engram.retrieve.turn_roles import users_turn

__all__ = ["BEST", "CLOSE", "NOT_RETOLD", "OUTCOME_CLOSE", "OUTCOME_SHARE", "SHARE", "STORED_TELLINGS",
           "asks_for_the_outcome", "decisions", "later_tellings"]

#: How many of the best matches (by relevance) a later telling may retell.
BEST = 3
#: Kinds no later turn retells: a procedure says how things are done, not how they stand, and a
#: summary tells of many things at once, so the user's later turns near one are near in topic only
#: ("Which days is Oisín in childcare now?" had lifted "Dentist for all three kids ..." and "check the
#: cake is ok for Oisín" for their closeness to the weekly-digest procedure). A Mem0-like store of
#: five users R@5/10 0.610/0.793 -> 0.635/0.798, coding instructions +1.0 at 5, technical chats +1.9
#: at 10; every other file, dev set and the scenario set unchanged.
NOT_RETOLD = ("procedure", "summary")
#: Besides the user's turns, the kinds an app stores what it learnt as, which retell a match as the
#: user's turn does: in a Mem0- or Zep-like store the newer value is an extracted fact or an episode
#: ("Dev now trains at around 6:15am"), not a chat turn. Only one of the same subject as the match
#: (:func:`_of_another`). Four such stores R@5/10 0.687/0.792 -> 0.692/0.807, 0.635/0.758 -> 0.635/0.782,
#: 0.635/0.798 -> 0.655/0.803, 0.657/0.763 -> 0.652/0.763; the chat files within a question (plans
#: -0.5 at 10, a coding group -0.6 at 5, everyday histories +0.9 at 10); a blind file of long technical
#: chats, every dev set and the scenario set's hit@1 unchanged. Tried in session 52 without
#: NOT_RETOLD and the subject check: the first store's updated facts lost 5 points at 5.
STORED_TELLINGS = ("fact", "episode")
#: How close in meaning to a best match a later turn must be, as a share of the similarity range
#: (MiniLM's 0.15-0.65: a cosine of 0.5).
CLOSE = 0.7
#: The share of the match's relevance a later telling takes.
SHARE = 0.8
#: ... and for a question of how things turned out: seventeen probe files, eleven questions up and
#: five down (recall@5: one user's year with an assistant 0.648 -> 0.670, everyday assistant
#: histories 0.681 -> 0.699, plans that keep changing +1.0 / +1.0 at 5 / 10, ML/devops chats +0.9 /
#: +0.9, three more files +0.4 to +1.1; coding instructions -1.0, analyst/Android/security chats -1.0,
#: technical chats -0.4); the scenario set +1 hit@1 ("Which job queue did we settle on ...?"); every dev
#: set unchanged. 1.05 measured the same but for one more loss at 10.
OUTCOME_CLOSE = 0.6
OUTCOME_SHARE = 1.0

#: Words that ask how things turned out or stand now.
_OUTCOME = re.compile(
    r"\b(?:end(?:ed)?\s+up|in\s+the\s+end|actually|finally|eventually|ultimately|after\s+all|settled?\s+on"
    r"|final|these\s+days|nowadays|currently|right\s+now|now|still|anymore|any\s+more)\b",
    re.IGNORECASE,
)

Column = npt.NDArray[np.float64]


_DIGIT = re.compile(r"\d")


def _holds_a_number(text: str) -> bool:
    return _DIGIT.search(text) is not None


def _any(text: str) -> bool:
    return True


def asks_for_the_outcome(query: str) -> bool:
    """Whether ``query`` asks how something turned out or stands now ("end up", "in the end",
    "actually", "these days", "now", "still", ...)."""
    return _OUTCOME.search(query) is not None


def decisions(records: Sequence[MemoryRecord]) -> npt.NDArray[np.bool_]:
    """Per record, whether it is the user's turn that asks nothing: for a question of how things
    turned out, what the user decided or reported ("Going with four thousand.", "Done — 243.5
    agreed.", "She's in! Went in yesterday"), which the assistant's reply after it restates in the
    question's words. Ranking lets such a turn gain the answer's share of the context its neighbours
    lend it (gain_weights.ANSWER_GAIN), not the share of other turns: it is short and far in meaning
    from what it settles, so neither its words nor the later telling above reach it. A turn that
    asks ("Should we move the jobs to a real queue?") decides nothing."""
    return np.fromiter((users_turn(r) and not is_question(r) for r in records), dtype=bool, count=len(records))


def later_tellings(records: Sequence[MemoryRecord], relevance: Column, vectors: Mapping[str, Any],
                   similarity_range: tuple[float, float], now: datetime, outcome: bool = False) -> Column:
    """Per record, :data:`SHARE` of the relevance (read up to 1) of the best of the :data:`BEST` best
    matches it retells (see the module): the same user's, said after the match and by ``now``;
    else 0. A memory without a vector, or with one of another size, retells nothing. For a question
    of how things turned out (``outcome``) the bar, the share and the number are those above."""
    numbered, bar, share = (_any, OUTCOME_CLOSE, OUTCOME_SHARE) if outcome else (_holds_a_number, CLOSE, SHARE)
    out = np.zeros(len(records), dtype=np.float64)
    if len(records) < 2:
        return out
    best = np.minimum(np.nan_to_num(relevance, nan=0.0), 1.0)
    matches = [m for m in np.argsort(-best, kind="stable")[:BEST].tolist()
               if best[m] > 0 and vectors.get(records[m].id) is not None and numbered(records[m].content)
               and records[m].kind not in NOT_RETOLD]
    first = min((records[m].created_at for m in matches), default=None)
    # Only what could retell a match is read further: the user's turns said after the first of them.
    if first is None:
        return out
    liftable = best < share * float(best[matches].max())  # a turn as relevant as that is lifted by none
    later = [at for at in np.flatnonzero(liftable).tolist() if first < (record := records[at]).created_at <= now
             and record.id in vectors and (users_turn(record) or record.kind in STORED_TELLINGS)
             and numbered(record.content)]
    if not later:
        return out
    as_rows = {records[at].id: np.asarray(vectors[records[at].id], dtype=np.float32).ravel()
               for at in (*matches, *later)}
    size = as_rows[records[matches[0]].id].size
    matches = [m for m in matches if as_rows[records[m].id].size == size]
    later = [at for at in later if as_rows[records[at].id].size == size]
    if not later:
        return out
    near = np.stack([as_rows[records[at].id] for at in later]) @ np.stack([as_rows[records[m].id] for m in matches]).T
    close = calibrated(near.astype(np.float64), similarity_range) >= bar
    for row_at, at in enumerate(later):
        for column, match in enumerate(matches):
            told, retold = records[at], records[match]
            if close[row_at, column] and at != match and told.user_id == retold.user_id \
                    and told.created_at > retold.created_at and not _of_another(told, retold):
                out[at] = max(out[at], share * best[match])
    return out


def _of_another(told: MemoryRecord, retold: MemoryRecord) -> bool:
    """Whether a stored telling (not the user's turn) is of another subject than the match: both name
    typed entities (a customer, a person, not a mere mention) and none in common. "Globex pays NET15
    ... no more NET30 for them" is no newer telling of "Acme Corporation is on NET30 payment terms"."""
    if users_turn(told):
        return False
    theirs, its = _typed(told), _typed(retold)
    return bool(theirs) and bool(its) and not theirs & its


def _typed(record: MemoryRecord) -> set[str]:
    return {e for e in record.entities if not e.startswith(MENTION)}
