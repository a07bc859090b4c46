"""Keyword evidence of each candidate, read against the best keyword match of its query and with a
discount for a long text's length (the ``keywords`` half of relevance: :mod:`engram.retrieve.rank`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.turn_roles import said_by_a_person, said_by_the_assistant

__all__ = ["KEYWORD_FULL_SHARE", "KEYWORD_LENGTH", "KEYWORD_LENGTH_POWER", "KEYWORD_LENGTH_POWER_OWN",
           "MEANINGLESS", "SHORT_TEXT", "WEAK_KEYWORDS", "keyword_evidence", "length_discount", "without_meaning"]

#: The share of a query's keyword weight at which its best keyword match counts as a full match
#: (keyword relevance 1.0). LoCoMo dev evidence recall@10 +2.4 and LongMemEval dev turn recall@5
#: +1.2 over reading keyword scores as a share of every query word; flat between 0.3 and 0.5. At
#: 0.6 two ordinary words of a question ("want" and "old" of "Why did I want out of my old firm?")
#: in memories about something else count less: eleven probe files R@5/10 0.698/0.800 -> 0.703/0.801
#: (personal-assistant histories 0.772 -> 0.796 at 5, unread daily texting 0.678 -> 0.688 at 10,
#: the plans file 0.730 -> 0.720 at 10), LoCoMo 0.732/0.813 -> 0.736/0.815, LongMemEval unchanged;
#: 0.7 cost LongMemEval user turns 1.2 at 10.
KEYWORD_FULL_SHARE = 0.6
#: Keyword evidence of a memory longer than this many characters counts ``(KEYWORD_LENGTH /
#: length) ** KEYWORD_LENGTH_POWER`` of itself: a long answer holds many of a query's words by
#: chance (BM25's length normalization leaves a 2,500-character message the best keyword match of
#: questions it has nothing to do with). LongMemEval dev with assistant turns: recall_all@5/10
#: 0.570/0.774 -> 0.677/0.839; user turns, LoCoMo and the everyday set unchanged; flat from 300 to
#: 600 characters. A person's own long message (the user's pasted notes or itinerary, a friend's
#: long message in a group chat) counts ``KEYWORD_LENGTH_POWER_OWN`` instead: there a rare word
#: ("Haneda", a ryokan's name) is often what it was kept to be found by. A probe set written blind
#: to the code, recall@5/10 0.68/0.84 with 0.75, 0.70/0.86 with 0.4 (inside long messages 0.38/0.75
#: -> 0.50/0.88), 0.75/0.86 with none; but with none, long journal pastes holding a query's words in
#: passing took the place of short relevant turns (7 of 12 in the top 5 -> 3; with 0.4, 5).
KEYWORD_LENGTH = 500
KEYWORD_LENGTH_POWER = 0.75
KEYWORD_LENGTH_POWER_OWN = 0.4
#: A memory of at most :data:`SHORT_TEXT` characters whose meaning is under :data:`MEANINGLESS`
#: (calibrated: 0 is what unrelated texts score, 1 a clear match; MiniLM's cosine 0.2) keeps only
#: that share of it of a keyword evidence under :data:`WEAK_KEYWORDS`: one ordinary word of the
#: question ("day", "app") in a short message about something else ("First day at Corvel
#: tomorrow. Nervous." for "On which day did Sanne and I get engaged?") is no evidence that it
#: answers. A short text's vector says what the whole text is about; a long one's averages many
#: things, so there little meaning is no evidence against it (with 300 characters, long coding and
#: general-task chats lost 1-2 points at 10), nor is it against a strong keyword match (an
#: identifier, a rare name: with every match discounted, long technical chats lost 4 at 10).
#: Probe files written blind to the code, recall@5/10: plans that keep changing 0.563/0.700 ->
#: 0.573/0.710, a book club 0.694/0.809 -> 0.694/0.831, texting 0.652/0.745 -> 0.652/0.753, two
#: more up to +0.5, the other four unchanged; LongMemEval dev user turns 0.833 -> 0.845 at 5, every
#: turn 0.785 -> 0.796 at 5; LoCoMo, the instructions set and the scenario set unchanged.
SHORT_TEXT = 200
MEANINGLESS = 0.1
WEAK_KEYWORDS = 0.6


def keyword_evidence(raw: npt.NDArray[np.float64], records: Sequence[MemoryRecord],
                     yours: bool = False) -> npt.NDArray[np.float64]:
    """Each record's keyword evidence in [0, 1] from the keyword source's raw scores (BM25 as a
    share of the query's words). It is read against the best keyword match of this query: a
    question's filler ("How many ... have I attended in the past three months?") is in no memory,
    so even the memory that holds every word that matters scores a fraction of "all the query's
    words"; the best match counts as a full one once it holds at least KEYWORD_FULL_SHARE of them."""
    scale = 1.0 / max(float(raw.max(initial=0.0)), KEYWORD_FULL_SHARE)
    return np.asarray(np.minimum(1.0, raw * scale) * length_discount(records, yours), dtype=np.float64)


def length_discount(records: Sequence[MemoryRecord], yours: bool = False) -> npt.NDArray[np.float64]:
    """How much of its keyword evidence each record keeps (see :data:`KEYWORD_LENGTH`); the
    assistant's replies count as its own words when the query asks what it said (``yours``)."""
    lengths = np.fromiter((len(r.content) for r in records), dtype=np.float64, count=len(records))
    powers = np.fromiter((KEYWORD_LENGTH_POWER_OWN if said_by_a_person(r) or (yours and said_by_the_assistant(r))
                          else KEYWORD_LENGTH_POWER for r in records), dtype=np.float64, count=len(records))
    return np.asarray(np.minimum(1.0, (KEYWORD_LENGTH / np.maximum(lengths, 1.0)) ** powers), dtype=np.float64)


def without_meaning(keywords: npt.NDArray[np.float64], meaning: npt.NDArray[np.float64],
                    records: Sequence[MemoryRecord], embedded: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """``keywords`` with the weak evidence of short memories that mean little like the query cut
    in proportion (see :data:`SHORT_TEXT`); only where a memory has a vector (``embedded``) to
    read its meaning from."""
    short = np.fromiter((len(r.content) <= SHORT_TEXT for r in records), dtype=bool, count=len(records))
    cut = short & embedded & (keywords < WEAK_KEYWORDS)
    share = np.minimum(1.0, np.maximum(meaning, 0.0) / MEANINGLESS)
    return np.asarray(np.where(cut, keywords * share, keywords), dtype=np.float64)
