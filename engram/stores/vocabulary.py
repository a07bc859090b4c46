"""A user's keyword vocabulary: each term's code in their postings (:mod:`engram.stores.postings`).

An index built from rows holds a dict. One loaded from a saved file keeps the file's terms as a
sorted list with their codes and finds a term by bisection: building a dict of a million terms cost
0.7 s of a large user's first search after a restart (2 ms at 10k). Terms added since the load go to
a dict of their own.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["Vocabulary"]


class Vocabulary:
    """Term -> code, codes 0..len-1 in the order terms arrived."""

    def __init__(self, codes: dict[str, int] | None = None) -> None:
        self._codes: dict[str, int] = {} if codes is None else codes
        # A tuple: the collector stops walking a tuple of strings after its first look (a list of a
        # million terms cost every full collection ~18 ms; see engram.stores.untracked).
        self._sorted: tuple[str, ...] = ()
        self._sorted_codes: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)

    @classmethod
    def of_sorted(cls, terms: list[str], codes: npt.NDArray[np.int64]) -> Vocabulary | None:
        """From :meth:`sorted_terms`' two halves; None when they do not fit together."""
        # operator.lt, not str.__lt__: the same strict order, checked at less than half the cost
        # (0.33 -> 0.15 ms for a 5,000-word user, paid at every cold load).
        if len(terms) != len(codes) or not all(map(operator.lt, terms, itertools.islice(terms, 1, None))):
            return None
        vocabulary = cls()
        vocabulary._sorted, vocabulary._sorted_codes = tuple(terms), np.asarray(codes, dtype=np.int64)
        return vocabulary

    def copy(self) -> Vocabulary:
        """A copy that later additions to this one do not change."""
        out = Vocabulary(dict(self._codes))
        out._sorted, out._sorted_codes = self._sorted, self._sorted_codes  # never changed in place
        return out

    def __len__(self) -> int:
        return len(self._sorted) + len(self._codes)

    def get(self, term: str) -> int | None:
        code = self._codes.get(term)
        if code is not None or not self._sorted:
            return code
        i = bisect.bisect_left(self._sorted, term)
        return int(self._sorted_codes[i]) if i < len(self._sorted) and self._sorted[i] == term else None

    def code(self, term: str) -> int:
        """The term's code, a new one (the next) when it is new."""
        found = self.get(term)
        if found is None:
            found = self._codes[term] = len(self)
        return found

    def sorted_terms(self) -> tuple[list[str], npt.NDArray[np.int64]]:
        """Every term in sorted order and the code of each (what a saved file holds)."""
        pairs: Sequence[tuple[str, int]] = sorted(
            [*zip(self._sorted, self._sorted_codes.tolist(), strict=True), *self._codes.items()]
        )
        return [t for t, _ in pairs], np.asarray([c for _, c in pairs], dtype=np.int64)
