"""Summing a keyword query's BM25 contributions per row: over every posting of every term, or only
where the best rows can be (max-score pruning).

Scoring every posting is exact but costs one random write per posting: a million memories' common
question touches ~450k rows to rank ~50. Max-score pruning (Turtle and Flood's MaxScore, as Lucene
and PISA use it, here term at a time over dense arrays) bounds what the query's later, commoner
terms can add to any row: a row holding none of the first ``e + 1`` (rarest) terms scores at most
the sum of the other terms' bounds. Once the ``depth``-th best row among those holding one of the
first terms scores above that sum, the rows holding only later terms cannot reach the answer, and
the later terms are read only where they add to a row already found (a lookup per posting instead
of a write). The caller checks the final answer against the bound after its filters
(:func:`engram.stores.matches.exact_best`) and asks for every row when the answer does not clear it.

Every row's contributions are added in the query's term order, whichever path it takes, so a
row's score is the same float as a plain sum over every posting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.text import K1

__all__ = ["PRUNE_ABOVE", "Accumulator", "Term", "contributions"]

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
#: Queries whose terms hold fewer postings are summed whole: pruning saves nothing measurable there.
PRUNE_ABOVE = 50_000
#: How many of the rarest terms may be taken as the ones every answer must hold before giving up
#: and summing every posting (each further try re-reads the later terms).
_TRIES = 3
#: Slack on each bound: the rounding of a contribution cannot lift it past its bound.
_SLACK = 1.0 + 1e-9


def contributions(idf: float, positions: Ints, freqs: npt.NDArray[np.generic], norms: Floats) -> Floats:
    """BM25's contribution of one term at these positions (``norms``: each row's length normalization)."""
    counts = freqs.astype(np.float64)
    return idf * (K1 + 1.0) * counts / (counts + norms[positions])


@dataclass(frozen=True)
class Term:
    """One query term and its contributions at every live posting: either kept already (``kept``,
    positions and contributions), or computed and kept on demand (``full``) from its live
    ``positions`` and ``freqs``, which only a term without kept contributions carries."""

    idf: float
    kept: tuple[Ints, Floats] | None
    full: Callable[[], tuple[Ints, Floats]]
    positions: npt.NDArray[np.integer] | None = None
    freqs: npt.NDArray[np.unsignedinteger] | None = None

    def bound(self, shortest: float) -> float:
        """No contribution of this term exceeds it (``shortest``: the smallest length normalization)."""
        if self.kept is not None:
            return float(self.kept[1].max()) * _SLACK if len(self.kept[1]) else 0.0
        assert self.freqs is not None  # a term without kept contributions carries its postings
        most = float(self.freqs.max()) if len(self.freqs) else 0.0
        return self.idf * (K1 + 1.0) * most / (most + shortest) * _SLACK

    def where(self, chosen: Callable[[npt.NDArray[np.integer]], npt.NDArray[np.bool_]], norms: Floats,
              ) -> tuple[Ints, Floats]:
        """Its positions that ``chosen`` picks (a mask over positions), and its contributions there,
        computed for those alone when they are not kept."""
        if self.kept is not None:
            positions, values = self.kept
            picked = chosen(positions)
            return positions[picked], values[picked]
        assert self.positions is not None and self.freqs is not None
        picked = chosen(self.positions)
        where = self.positions[picked].astype(np.int64)
        return where, contributions(self.idf, where, self.freqs[picked], norms)


class Accumulator:
    """Scratch arrays of one user's postings: a sum and a mark per row, zero between searches.
    A fresh array per search (~17 MB of temporaries at a million memories) cost page faults that
    made the slowest searches 5-10x the median on a virtual machine."""

    def __init__(self) -> None:
        self._sums: Floats = np.zeros(0, dtype=np.float64)
        self._marks: npt.NDArray[np.uint8] = np.zeros(0, dtype=np.uint8)

    @property
    def nbytes(self) -> int:
        return self._sums.nbytes + self._marks.nbytes

    def ready(self, size: int, capacity: int) -> tuple[Floats, npt.NDArray[np.uint8]]:
        """The arrays, for at least ``size`` rows (``capacity`` when they must grow)."""
        if len(self._sums) < size:
            # Written now, not zeroed lazily by the system: each page's first write faults, which a
            # million memories' first search paid ~2,000 times over, scattered (~15 ms).
            self._sums = np.empty(max(size, capacity), dtype=np.float64)
            self._sums.fill(0.0)
            self._marks = np.empty(max(size, capacity), dtype=np.uint8)
            self._marks.fill(0)
        return self._sums, self._marks

    def _cleared(self) -> None:
        """After a failure part way: the arrays are no longer known to be zero."""
        self._sums = np.zeros(0, dtype=np.float64)
        self._marks = np.zeros(0, dtype=np.uint8)

    def every(self, terms: Sequence[Term], size: int, capacity: int) -> tuple[Ints, Floats]:
        """Every row holding a term, and its score."""
        sums, marks = self.ready(size, capacity)
        try:
            for term in terms:
                positions, added = term.kept if term.kept is not None else term.full()
                np.add.at(sums, positions, added)  # in place: no temporaries
            matched = marks[:size].view(np.bool_)
            rows = np.flatnonzero(np.greater(sums[:size], 0.0, out=matched))  # every contribution is positive
            totals = sums[rows]
            sums[rows] = 0.0
            marks[rows] = 0
        except BaseException:
            self._cleared()
            raise
        return rows, totals

    def pruned(
        self, terms: Sequence[Term], norms: Floats, shortest: float, depth: int, size: int, capacity: int,
    ) -> tuple[Ints, Floats, float] | None:
        """The rows holding one of the first (rarest) terms, their scores, and the most any other row
        can score; None when no such split puts ``depth`` rows above that (then sum every term)."""
        bounds = [term.bound(shortest) for term in terms]
        sums, marks = self.ready(size, capacity)
        found: list[Ints] = []
        try:
            for e in range(min(len(terms) - 1, _TRIES)):
                positions, added = terms[e].full()
                if e:  # rows an earlier term brought in have this term's contribution already
                    fresh = marks[positions] == 0
                    positions, added = positions[fresh], added[fresh]
                marks[positions] = e + 1
                np.add.at(sums, positions, added)

                def just_found(at: npt.NDArray[np.integer], mark: int = e + 1) -> npt.NDArray[np.bool_]:
                    picked: npt.NDArray[np.bool_] = marks[at] == mark
                    return picked

                for later in terms[e + 1 :]:  # only where the rows just found hold them
                    np.add.at(sums, *later.where(just_found, norms))
                found.append(positions)
                rows = np.concatenate(found) if e else positions
                rest = sum(bounds[e + 1 :])
                if len(rows) >= depth:
                    totals = sums[rows]
                    if np.count_nonzero(totals > rest) >= depth:  # the depth-th best is above the rest
                        sums[rows] = 0.0
                        marks[rows] = 0
                        return rows, totals, rest
            for rows in found:
                sums[rows] = 0.0
                marks[rows] = 0
        except BaseException:
            self._cleared()
            raise
        return None
