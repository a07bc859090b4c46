"""A keyword search's matches and how the best of them are picked: by score, then id, among the
rows a filter keeps (:func:`best`). Both backends' postings (:mod:`engram.stores.postings`) give
their matches as :class:`Matches`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.model import Hit
from engram.stores.untracked import Strings

__all__ = ["Matches", "best", "exact_best", "first_round"]

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Matches:
    """A search's matching rows, unordered: entry ``i`` is the postings' row ``positions[i]``,
    scored ``scores[i]``. Row ids and places in id order are read only for the entries asked
    about: a common term matches a third of a million rows, and :func:`best` looks at tens.
    Rows ``[0, placed)`` have a place in id order (``_ranks``, :mod:`engram.stores.id_order`);
    later ones are compared by their ids.

    The postings' arrays are held as they were: later writes add rows after these positions, and a
    merge replaces the arrays, so the positions keep naming the same rows."""

    scores: npt.NDArray[np.float64]
    positions: Ints
    _rowids: Ints
    _ranks: Ints
    _placed: int
    _ids: Strings
    #: The most a row left out of these scores (0.0: none was left out).
    bound: float = 0.0

    @property
    def rowids(self) -> Ints:
        """Every entry's rowid."""
        return self._rowids[self.positions]

    def rowids_of(self, selection: npt.NDArray[np.int64]) -> Ints:
        """The rowids of these entries."""
        return self._rowids[self.positions[selection]]

    def first_by_id(self, selection: npt.NDArray[np.int64], k: int) -> Ints:
        """The ``k`` of these entries with the smallest ids, as indices into ``selection``."""
        positions = self.positions[selection]
        placed = positions < self._placed
        if placed.all():
            return np.argpartition(self._ranks[positions], k - 1)[:k]
        # The k first of the placed ones by place, beside every unplaced one, compared by id.
        inside = np.flatnonzero(placed)
        if len(inside) > k:
            inside = inside[np.argpartition(self._ranks[positions[inside]], k - 1)[:k]]
        candidates = np.concatenate([inside, np.flatnonzero(~placed)])
        ids = self._ids[positions[candidates]].tolist()
        return candidates[sorted(range(len(candidates)), key=ids.__getitem__)[:k]]

    def by_score_then_id(self, selection: npt.NDArray[np.int64]) -> Ints:
        """These entries by score, best first, then by id."""
        positions = self.positions[selection]
        scores = self.scores[selection]
        if not len(positions) or int(positions.max()) < self._placed:
            return selection[np.lexsort((self._ranks[positions], -scores))]
        keys = list(zip((-scores).tolist(), self._ids[positions].tolist(), strict=True))
        return selection[sorted(range(len(keys)), key=keys.__getitem__)]

    def ids(self, selection: npt.NDArray[np.int64]) -> list[str]:
        """The memory ids of these entries."""
        ids: list[str] = self._ids[self.positions[selection]].tolist()
        return ids


def _head(scores: npt.NDArray[np.float64], want: int) -> Ints | None:
    """Rows holding the ``want`` best of ``scores`` and every score tied with the last of them,
    found in one pass: every row scoring at least a threshold read off a strided sample, where a
    partition of a common term's third of a million matches cost milliseconds. None when the
    sample set the threshold too high (fewer than ``want`` rows reach it)."""
    step = len(scores) // (64 * want)
    if step < 2:
        return None
    sample = scores[::step]
    above = min(len(sample), 4 * want // step + 1)  # ~4 ``want`` rows are expected to reach it
    rows = np.flatnonzero(scores >= np.partition(sample, len(sample) - above)[len(sample) - above])
    return rows if len(rows) >= want else None


def first_round(n: int) -> int:
    """How many rows :func:`best` checks first for ``n`` answers."""
    return n + n // 4 + 8


def exact_best(
    search: Callable[[int], Matches | None], n: int,
    passing: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64] | None],
) -> list[Hit]:
    """:func:`best` of ``search(depth)``, matches that may leave out rows unable to reach the best
    ``depth`` (max-score pruning, :mod:`engram.stores.accumulate`). The answer stands when its
    ``n``-th score is above every left-out row's (``bound``); otherwise (filters rejected too many of
    the rows kept) ``search(0)`` gives every match and :func:`best` picks again."""
    matches = search(first_round(n))
    if matches is None:
        return []
    hits = best(matches, n, passing)
    if matches.bound > 0.0 and (len(hits) < n or hits[-1][1] <= matches.bound):
        matches = search(0)
        hits = [] if matches is None else best(matches, n, passing)
    return hits


def best(
    matches: Matches, n: int, passing: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64] | None],
) -> list[Hit]:
    """The ``n`` best matches that ``passing`` keeps (it returns the rowids it keeps of those it is
    given, None for all), by score then id. Rows are checked in that order, in rounds that grow with
    the share rejected so far: usually one round of a few more than ``n``."""
    scores = matches.scores
    taken = np.zeros(len(scores), dtype=np.bool_)  # rows checked in an earlier round
    left = len(scores)
    kept: list[tuple[float, str]] = []
    want = first_round(n)
    checked = passed = 0
    while left and len(kept) < n:
        # Only the first round may read the head off a sample: later ones skip the rows taken.
        pool = _head(scores, want) if not checked and left > want else None
        if pool is None:
            pool = np.flatnonzero(~taken)
        if len(pool) > want:
            # The first ``want`` rows by (score, id): those above the cut, then the tied ones first in id order.
            remaining = scores[pool]
            cut = np.partition(remaining, len(pool) - want)[len(pool) - want]
            chosen = remaining > cut
            tied = np.flatnonzero(remaining == cut)
            need = want - int(chosen.sum())
            if need < len(tied):
                tied = tied[matches.first_by_id(pool[tied], need)]
            chosen[tied] = True
            take = pool[chosen]
        else:
            take = pool
        taken[take] = True
        left -= len(take)
        take = matches.by_score_then_id(take)
        allowed = passing(matches.rowids_of(take))
        checked += len(take)
        if allowed is not None:  # a set, not np.isin: these are tens of rows, where isin's sorts cost more
            keep = set(allowed.tolist())
            take = take[[rowid in keep for rowid in matches.rowids_of(take).tolist()]]
        passed += len(take)
        kept.extend(zip(scores[take].tolist(), matches.ids(take), strict=True))
        want = max(4 * want, int(2 * (n - len(kept)) * checked / max(passed, 1)))
    return [(memory_id, score) for score, memory_id in kept[:n]]
