"""Keyword evidence of each candidate, read against the best keyword match of its query and with a
discount for a long text's length (the ``keywords`` half of relevance: :mod:`engram.retrieve.rank`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.episodes import said_by_a_person, said_by_the_assistant

__all__ = ["KEYWORD_FULL_SHARE", "KEYWORD_LENGTH", "KEYWORD_LENGTH_POWER", "KEYWORD_LENGTH_POWER_OWN",
           "keyword_evidence", "length_discount"]

#: The share of a query's keyword weight at which its best keyword match counts as a full match
#: (keyword relevance 1.0). LoCoMo dev evidence recall@10 +2.4 and LongMemEval dev turn recall@5
#: +1.2 over reading keyword scores as a share of every query word; flat between 0.3 and 0.5.
KEYWORD_FULL_SHARE = 0.5
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

