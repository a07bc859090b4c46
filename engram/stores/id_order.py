"""Each keyword row's place in memory-id order, which breaks ties between equal scores: hits come
out by score, then id, the same on every backend.

Places are computed once (a sort of every id: ~0.5 s at a million memories) and kept while rows
arrive in id order, as this process's ULIDs do. A row that arrives out of order (an id the caller
chose, another process's write in the same millisecond) and every row after it are left without a
place until enough of them gather; until then :class:`~engram.stores.matches.Matches` compares
those few by their ids. Before, each such write made the next search sort every id again: at a
million memories, 0.4-0.7 s of each search after an add. Gathered rows are placed by bisection
among the placed ones, which keep their order (:meth:`IdOrder.complete`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engram.stores.untracked import Strings

__all__ = ["IdOrder"]

Ints = npt.NDArray[np.int64]
#: Rows without a place are placed at the next search once they are this many, or a sixteenth of all.
_UNPLACED = 1024


class IdOrder:
    """Places of rows ``[0, placed)`` in id order (``rank``), or None until first asked for."""

    def __init__(self) -> None:
        self.rank: Ints | None = None
        self.placed = 0
        self._last = ""  # the largest placed id
        self._next = 0  # a place after every placed row's

    @classmethod
    def loaded(cls, rank: Ints, ids: list[str], capacity: int) -> IdOrder:
        """The order a saved index holds (``rank``: a place for each of ``ids``)."""
        order = cls()
        order.rank = _grown(np.asarray(rank, dtype=np.int64), capacity)
        order.placed = len(ids)
        if ids:
            last = int(np.argmax(rank))
            order._last, order._next = ids[last], int(rank[last]) + 1
        return order

    def added(self, row: int, memory_id: str, capacity: int) -> None:
        """Row ``row``, the next, was added with this id."""
        if self.rank is None:
            return
        if len(self.rank) < capacity:
            self.rank = _grown(self.rank, capacity)
        if self.placed == row and memory_id > self._last:
            self.rank[row] = self._next
            self._next += 1
            self._last = memory_id
            self.placed = row + 1

    def ranks(self, ids: Strings, size: int, capacity: int) -> Ints:
        """Places of rows ``[0, placed)``: of every row when they were never computed (computed now)
        or when too many are without one (placed now)."""
        if self.rank is None or size - self.placed > max(_UNPLACED, size // 16):
            return self.complete(ids, size, capacity)
        return self.rank

    def complete(self, ids: Strings, size: int, capacity: int) -> Ints:
        """Places of every row ``[0, size)`` (``ids``: each row's)."""
        if self.rank is None:
            order = np.argsort(ids[:size].astype(str), kind="stable")
        elif self.placed < size:
            # The placed rows keep their order; each other row goes in by bisection among them, and
            # rows falling in one gap keep their own id order (np.insert keeps the order given).
            placed = np.argsort(self.rank[: self.placed], kind="stable")
            others = np.arange(self.placed, size, dtype=np.int64)
            others = others[np.argsort(ids[self.placed : size], kind="stable")]
            at = np.searchsorted(ids[placed], ids[others])
            order = np.insert(placed, at, others)
        else:
            return self.rank
        self.rank = np.zeros(max(capacity, size), dtype=np.int64)
        self.rank[order] = np.arange(size, dtype=np.int64)
        self.placed, self._next = size, size
        self._last = str(ids[order[-1]]) if size else ""
        return self.rank

    def compacted(self, alive: npt.NDArray[np.bool_], capacity: int) -> None:
        """The rows where ``alive`` is False are gone and the others closed up, in order; every row
        had a place (:meth:`complete`)."""
        if self.rank is not None:
            self.rank = _grown(self.rank[: len(alive)][alive], capacity)
            self.placed = int(alive.sum())


def _grown(array: Ints, size: int) -> Ints:
    out = np.zeros(size, dtype=array.dtype)
    out[: len(array)] = array
    return out
