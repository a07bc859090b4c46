"""The query's meaning, read half without the names many of the user's memories carry.

A short question's vector is mostly its names. "What activities does Melanie partake in?" asked of a
chat where half the turns are Melanie's (each embedded behind her name, engram.ingest.embed), or
"Which foods do I have to keep out of family dinners because of the kids or Marcus?" of a family whose
husband is named every other day, is closest to whatever names them, and the turn about swimming
with the kids, or the rule "absolutely nothing with tree nuts", names neither. Who is named is
already counted, by entity overlap, weighed by how many memories name them
(:mod:`engram.retrieve.specific`). So when the query names someone more than that module's
``COMMON_SHARE`` of the user's memories name, it is embedded a second time without those names, and
the meaning of every memory (and the vector search) is read from the mean of the two vectors: the
names keep half their pull. A name few memories carry (at most 2% of them) is what finds the answer
and stays whole.

The query keeps its names when fewer than :data:`LEAST_LEFT` of its words would be left besides
its time scope's: "What did Tom do on November 13?" is a name and a date, and without the name its
vector says nothing of the install he reported that day.

The seven probe files whose questions are still unread (680 questions) recall@5/10 0.572/0.701
-> 0.582/0.717, the twelve others 0.706/0.806 -> 0.714/0.816; LoCoMo dev 0.734/0.813 -> 0.733/0.822;
LongMemEval dev user turns unchanged, every turn 0.785/0.892 -> 0.774/0.903. The scenario set's
hit@1 +1 ("Can I phone Maya in the evening?" first). Two files written
blind afterwards: three old friends' year of chat lower (0.580/0.682 -> 0.552/0.665), a developer's
months with a coding assistant 0.617/0.770 -> 0.650/0.770, two former neighbours' year of chat
0.578/0.683 -> 0.589/0.700. Without names alone (not
their mean) lost LoCoMo 3.6 points at 5; taking the names' own vectors out of the query's
(a projection, no second embedding) gained half as much.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from engram.ext import Vector
from engram.ingest.entities import MENTION
from engram.retrieve.candidates import PendingVector
from engram.retrieve.understand import keywords

log = logging.getLogger("engram.retrieve")

__all__ = ["LEAST_LEFT", "NAMES_KEPT", "BlendedVector", "Unnamed", "without_common_names"]

#: The fewest of the query's words (keywords, not counting its time scope's or a title) that must
#: be left once its common names are out.
LEAST_LEFT = 2
#: The weight of the query's own vector in the mean; the vector without names has the rest.
NAMES_KEPT = 0.5

_TITLES = frozenset({"dr", "mr", "mrs", "ms", "mx", "prof", "sir"})


class Unnamed(NamedTuple):
    """The query without its common names, and the names as the query wrote them."""

    text: str
    names: tuple[str, ...]


def without_common_names(text: str, entities: Sequence[str], weights: Mapping[str, float],
                         scope: str | None = None) -> Unnamed | None:
    """``text`` without the names among ``entities`` whose entity weight (``weights``; 1 when
    absent) is under 1, with a possessive "'s"; None when it names none of them, or when fewer than
    :data:`LEAST_LEFT` keywords would be left besides ``scope``'s (the time scope's expression)."""
    rest, names = text, []
    for entity in entities:
        if not entity.startswith(MENTION) or weights.get(entity, 1.0) >= 1.0:
            continue
        words = entity[len(MENTION):].split()
        if not words:
            continue
        name = re.compile(r"(?<!\w)(" + r"\s+".join(map(re.escape, words)) + r")(?:['’]s)?(?!\w)", re.IGNORECASE)
        found = name.search(rest)
        if found is None:
            continue
        names.append(found[1])
        rest = name.sub(" ", rest)
    if not names:
        return None
    rest = " ".join(rest.split())
    left = set(keywords(rest)) - _TITLES - set(keywords(scope or ""))
    return Unnamed(rest, tuple(names)) if len(left) >= LEAST_LEFT else None


class BlendedVector:
    """A :class:`PendingVector`: the weighted mean of the query's own vector and the one without
    its common names, made unit length; either alone when the other is not there (late: None). The
    second embedding only refines the first, so its failure is logged and the query's own vector
    answers alone; :attr:`blended` says whether the names were set aside (in the mean, or alone)."""

    def __init__(self, own: PendingVector, unnamed: PendingVector) -> None:
        self._own, self._unnamed = own, unnamed
        self._read: list[Vector | None] = []
        self.blended = False

    def done(self) -> bool:
        return self._own.done() and self._unnamed.done()

    def result(self) -> Vector | None:
        if not self._read:
            own = self._own.result()
            try:
                unnamed = self._unnamed.result()
            except Exception:  # a plugin's own error as well as EmbedderError: never the answer's
                log.warning("[MEM:RETRIEVE] embedding the query without its names failed; using it as asked",
                            exc_info=True)
                unnamed = None
            if own is None or unnamed is None:
                self._read.append(own if unnamed is None else unnamed)
                self.blended = unnamed is not None
            else:
                mean = NAMES_KEPT * np.asarray(own, dtype=np.float32) + (1.0 - NAMES_KEPT) * np.asarray(
                    unnamed, dtype=np.float32)
                # Of unit length, as every query vector is: a store's raw score is then the cosine on
                # every backend (SQLite's dot product, PostgreSQL's cosine distance), so min_similarity agrees.
                size = float(np.linalg.norm(mean))
                self._read.append((mean / size if size > 0 else mean).astype(np.float32))
                self.blended = True
        return self._read[0]
