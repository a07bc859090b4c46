"""Exact cosine top-n over one user's vectors, held in memory and kept current on writes.

The seam is :class:`VectorIndex`; very large users get :class:`~.ann.AnnIndex`, this index with
candidates from a faiss IVF snapshot instead of a scan of every row.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Collection, Sequence
from typing import Protocol, Self

import numpy as np
import numpy.typing as npt

from engram.model import KINDS, STATUSES
from engram.stores.packing import Gathered
from engram.stores.sqlite.prescan import POOL, Fitting, Prescan
from engram.stores.sqlite.row_codes import among, code, codes, ranked
from engram.stores.untracked import Strings, string_array

__all__ = ["ExactIndex", "VectorIndex", "ranked"]

#: Above this many vectors a user's search first scans int8 codes of the rows' leading principal
#: components (:mod:`engram.stores.sqlite.prescan`: a twelfth of the memory traffic, which is what
#: bounds a brute-force scan), then re-scores a generous pool of the best rows in float32. Below it
#: every search is exact float32. Where many users share a process, a large user's matrix is no
#: longer in the processor's cache at their next question: over 1,000 users the heaviest (13.9k
#: rows) waited 1.8 ms for a float32 scan and 0.57 for the pre-scan; users of 2-5k rows were
#: slower with it (re-scoring the pool is a fixed cost), 6.9k and 10k about even.
QUANTIZE_ABOVE = 10_000
#: Below one row in this many allowed, a search partitions the allowed rows' scores alone.
SPARSE_SHARE = 8
#: Free rows an index starts with beyond what it holds, and the least it grows by.
_SPARE = 64
#: Bytes per row of the Python objects beside the arrays: its id string and two dict entries.
_PER_ROW_OBJECTS = 250


def _fit(index: weakref.ref[ExactIndex]) -> None:
    held = index()
    if held is not None:
        held._fit()


Matrix = npt.NDArray[np.float32]


class VectorIndex(Protocol):
    def add(self, rowid: int, memory_id: str, vector: Matrix, kind: str, status: str) -> None: ...

    def remove(self, rowid: int) -> None: ...

    def set_status(self, rowid: int, status: str) -> None: ...

    def search(
        self,
        query: Matrix,
        n: int,
        *,
        statuses: Collection[str],
        kinds: Collection[str] | None,
        allowed: Collection[int] | None,
    ) -> list[tuple[str, float]]: ...


class ExactIndex:
    """A growable float32 matrix; removal leaves a hole that a later compaction closes."""

    def __init__(self, dimensions: int, capacity: int = _SPARE, matrix: Matrix | None = None) -> None:
        self._dim = dimensions
        # A loaded index brings its matrix: zeroing one only to drop it was ~1.3% of a cold retrieval.
        self._matrix: Matrix = np.zeros((capacity, dimensions), dtype=np.float32) if matrix is None else matrix
        self._prescan: Prescan | None = None  # fitted after the first large search (_prescanned)
        self._fitting = Fitting()
        self._alive = np.zeros(capacity, dtype=bool)
        # Kinds and statuses as small integer codes so filtering is one vectorized comparison.
        self._kind = np.zeros(capacity, dtype=np.int8)
        self._status = np.zeros(capacity, dtype=np.int8)
        self._ids: Strings = string_array([], capacity)
        self._rowids = np.zeros(capacity, dtype=np.int64)
        self._pos: dict[int, int] = {}
        self._rowid_of: dict[str, int] = {}
        # Whether the rows' rowids ascend (rows read from SQL by user and rowid, then inserts, do):
        # then a batch of rowids finds its positions by bisection instead of a dict lookup each,
        # which at a million rows cost ~1-2 ms of cache misses for an approximate search's 2,000.
        # None: not known since the last compaction or load.
        self._ascending: bool | None = None
        self._size = 0
        self._holes = 0
        self._compactions = 0  # rows moved so far
        self._lock = threading.RLock()
        # The last query's scores: the procedural source asks again with the same vector.
        self._last: tuple[bytes, npt.NDArray[np.float32]] | None = None
        self._masks: dict[tuple[tuple[str, ...], tuple[str, ...] | None], npt.NDArray[np.bool_]] = {}

    @classmethod
    def load(
        cls, dimensions: int, rowids: Sequence[int], memory_ids: Sequence[str], blobs: Sequence[bytes],
        kinds: Sequence[str], statuses: Sequence[str],
    ) -> Self:
        """An index of these rows (float32 blobs of ``dimensions``) built in a few array operations,
        where adding 10k rows one by one cost ~30 ms of Python (~7 ms here)."""
        n = len(memory_ids)
        # One C loop copies the blobs into the matrix: a fixed-width bytes array keeps every byte
        # (NULs too) and pads the empty spare rows with zeros.
        packed = np.array([*blobs, *[b""] * _SPARE], dtype=f"S{4 * dimensions}")
        matrix = packed.view(np.float32).reshape(n + _SPARE, dimensions)
        return cls.of_arrays(
            dimensions, np.asarray(rowids, dtype=np.int64), memory_ids, matrix,
            codes(KINDS, kinds), codes(STATUSES, statuses),
        )

    @classmethod
    def of_arrays(
        cls, dimensions: int, rowids: npt.NDArray[np.int64], memory_ids: Sequence[str], matrix: Matrix,
        kinds: npt.NDArray[np.int8], statuses: npt.NDArray[np.int8],
    ) -> Self:
        """An index of these rows: ``matrix`` holds their vectors first (and may have spare rows
        after them, or none: the index grows by copying), ``kinds``/``statuses`` their codes."""
        n = len(memory_ids)
        index = cls(dimensions, capacity=max(len(matrix), n), matrix=matrix)
        index._alive[:n] = True
        index._rowids[:n] = rowids
        index._kind[:n] = kinds
        index._status[:n] = statuses
        index._ids = string_array(memory_ids, len(index._matrix))
        keys = rowids.tolist()
        index._pos = dict(zip(keys, range(n), strict=True))
        index._rowid_of = dict(zip(memory_ids, keys, strict=True))
        index._size = n
        return index

    def arrays(
        self, spare: int = 0,
    ) -> tuple[npt.NDArray[np.int64], list[str], Gathered, npt.NDArray[np.int8], npt.NDArray[np.int8]]:
        """Copies of the live rows' ids and codes, and their vectors to gather as they are written,
        with ``spare`` zero rows after them: as :meth:`of_arrays` takes them once read back. A row
        never changes in place (a write appends; growing copies into a new matrix) until a
        compaction, which the gathered matrix's ``current`` tells of."""
        with self._lock:
            live = np.flatnonzero(self._alive[: self._size])
            compactions, matrix = self._compactions, self._matrix
            return (self._rowids[live].copy(), self._ids[live].tolist(),
                    Gathered(matrix, live, spare, lambda: self._compactions == compactions),
                    self._kind[live].copy(), self._status[live].copy())

    def __len__(self) -> int:
        return self._size - self._holes

    @property
    def dimensions(self) -> int:
        return self._dim

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (what a cache of indexes budgets), ids and maps estimated."""
        with self._lock:
            arrays = (self._matrix, self._alive, self._kind, self._status, self._rowids)
            prescan = self._prescan.nbytes if self._prescan is not None else 0
            return sum(a.nbytes for a in arrays) + prescan + _PER_ROW_OBJECTS * self._size

    def _grow(self) -> None:
        # Half again, not double: a cache budgets these bytes, and most users grow a little at a time.
        capacity = len(self._matrix) + max(_SPARE, len(self._matrix) // 2)
        matrix = np.zeros((capacity, self._dim), dtype=np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        alive = np.zeros(capacity, dtype=bool)
        alive[: self._size] = self._alive[: self._size]
        rowids = np.zeros(capacity, dtype=np.int64)
        rowids[: self._size] = self._rowids[: self._size]
        kind = np.zeros(capacity, dtype=np.int8)
        kind[: self._size] = self._kind[: self._size]
        status = np.zeros(capacity, dtype=np.int8)
        status[: self._size] = self._status[: self._size]
        ids = string_array(self._ids[: self._size], capacity)
        self._matrix, self._alive, self._rowids, self._ids = matrix, alive, rowids, ids
        self._kind, self._status = kind, status
        if self._prescan is not None:
            self._prescan.resize(capacity)

    def add(self, rowid: int, memory_id: str, vector: Matrix, kind: str, status: str) -> None:
        with self._lock:
            self._last = None
            self._masks.clear()
            self._add(rowid, memory_id, vector, kind, status)

    def _add(self, rowid: int, memory_id: str, vector: Matrix, kind: str, status: str) -> None:
        if rowid in self._pos:
            self._remove(rowid)
        if self._size == len(self._matrix):
            self._grow()
        i = self._size
        self._matrix[i] = vector
        if self._prescan is not None:
            self._prescan.set(i, self._matrix[i])
        self._alive[i] = True
        if self._ascending and i and rowid <= self._rowids[i - 1]:
            self._ascending = False  # a rowid reused, or rows copied out of order
        self._rowids[i] = rowid
        self._ids[i] = memory_id
        self._kind[i] = code(KINDS, kind)
        self._status[i] = code(STATUSES, status)
        self._pos[rowid] = i
        self._rowid_of[memory_id] = rowid
        self._size += 1

    def remove(self, rowid: int) -> None:
        with self._lock:
            self._last = None
            self._masks.clear()
            self._remove(rowid)

    def _remove(self, rowid: int) -> None:
        i = self._pos.pop(rowid, None)
        if i is None:
            return
        self._rowid_of.pop(self._ids[i], None)
        self._alive[i] = False
        self._holes += 1
        if self._holes > 1024 and self._holes > self._size // 4:
            self._compact()

    def holds(self, rowid: int, memory_id: str) -> bool:
        """Whether the row of ``rowid`` is held, under ``memory_id``."""
        with self._lock:
            i = self._pos.get(rowid)
            return i is not None and self._ids[i] == memory_id

    def remove_by_id(self, memory_id: str) -> None:
        with self._lock:
            rowid = self._rowid_of.get(memory_id)
            if rowid is not None:
                self._last = None
                self._masks.clear()
                self._remove(rowid)

    def set_status(self, rowid: int, status: str) -> None:
        with self._lock:
            i = self._pos.get(rowid)
            if i is not None:
                self._status[i] = code(STATUSES, status)
                self._masks.clear()

    def _compact(self) -> None:
        keep = np.flatnonzero(self._alive[: self._size])
        self._matrix[: len(keep)] = self._matrix[keep]
        if self._prescan is not None:
            self._prescan.move(keep)
        self._rowids[: len(keep)] = self._rowids[keep]
        self._ids[: len(keep)] = self._ids[keep]
        self._ids[len(keep) : self._size] = None  # the removed rows' ids are not held
        self._kind[: len(keep)] = self._kind[keep]
        self._status[: len(keep)] = self._status[keep]
        self._alive[:] = False
        self._alive[: len(keep)] = True
        self._size = len(keep)
        self._holes = 0
        self._compactions += 1
        self._pos = {int(r): i for i, r in enumerate(self._rowids[: self._size])}
        self._ascending = None

    def _positions_of(self, rowids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The positions of the live rows among these rowids (others, -1 included, are dropped)."""
        have = self._rowids[: self._size]
        if self._ascending is None:
            self._ascending = bool(np.all(have[1:] > have[:-1]))
        if not self._ascending or not len(have):
            found = [p for r in rowids.tolist() if (p := self._pos.get(r)) is not None]
            return np.asarray(found, dtype=np.int64)
        at: npt.NDArray[np.int64] = np.minimum(np.searchsorted(have, rowids), len(have) - 1)
        at = at[have[at] == rowids]
        return at[self._alive[at]]  # a removed row keeps its rowid until the next compaction

    def _mask(
        self, statuses: Collection[str], kinds: Collection[str] | None, allowed: Collection[int] | None
    ) -> npt.NDArray[np.bool_]:
        mask = self._alive[: self._size].copy()
        if allowed is not None:
            allowed_mask = np.zeros(self._size, dtype=bool)
            positions = [self._pos[r] for r in allowed if r in self._pos]
            allowed_mask[positions] = True
            mask &= allowed_mask
            return mask  # the caller's SQL already applied status and kind
        key = (tuple(statuses), tuple(kinds) if kinds is not None else None)
        cached = self._masks.get(key)
        if cached is not None:
            return cached
        mask &= among(self._status[: self._size], [code(STATUSES, s) for s in statuses])
        if kinds is not None:
            mask &= among(self._kind[: self._size], [code(KINDS, k) for k in kinds])
        if len(self._masks) > 16:
            self._masks.clear()
        self._masks[key] = mask
        return mask

    def search(
        self,
        query: Matrix,
        n: int,
        *,
        statuses: Collection[str],
        kinds: Collection[str] | None,
        allowed: Collection[int] | None,
    ) -> list[tuple[str, float]]:
        with self._lock:
            return self._search(query, n, statuses, kinds, allowed)

    def _search(
        self,
        query: Matrix,
        n: int,
        statuses: Collection[str],
        kinds: Collection[str] | None,
        allowed: Collection[int] | None,
    ) -> list[tuple[str, float]]:
        if self._size == 0 or n <= 0:
            return []
        query = np.ascontiguousarray(query, dtype=np.float32)
        quantized = self._size > QUANTIZE_ABOVE and self._prescanned()
        scores = self._scores(query, quantized)
        mask = self._mask(statuses, kinds, allowed)
        live = int(mask.sum())
        n = min(n, live)
        if n == 0:
            return []
        # The int8 scores only pick a generous pool; float32 decides the order within it.
        pool = min(live, max(20 * n, POOL)) if quantized else n
        if live * SPARSE_SHARE < self._size:
            # Few rows allowed (the procedural source's procedures, a narrow filter): partition
            # only theirs, not every score.
            allowed_rows = np.flatnonzero(mask)
            sub = scores[allowed_rows]
            picked = np.argpartition(-sub, pool - 1)[:pool] if pool < len(sub) else np.arange(len(sub))
            rows = allowed_rows[picked]
        else:
            if live < self._size:  # most searches exclude nothing: spare a copy of every score
                scores = np.where(mask, scores, -np.inf)
            rows = np.argpartition(-scores, pool - 1)[:pool] if pool < len(scores) else np.flatnonzero(mask)
        rows = rows[np.isfinite(scores[rows])]
        return ranked(self._ids, rows, self._matrix[rows] @ query if quantized else scores[rows], n)

    def _scores(self, query: Matrix, quantized: bool) -> npt.NDArray[np.float32]:
        """Every row's score for ``query``, kept for the next call with the same query (the
        procedural source asks again with the semantic source's vector)."""
        key = query.tobytes()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        if quantized and self._prescan is not None:
            scores = self._prescan.scores(query, self._size)
        else:
            scores = self._matrix[: self._size] @ query
        self._last = (key, scores)
        return scores

    def _prescanned(self) -> bool:
        """Whether the pre-scan is ready; if not, it is fitted on a background thread (0.07 s at 14k
        rows, 1 s at a million: not inside a retrieval) and searches scan float32 meanwhile."""
        if self._prescan is not None:
            return True
        if self._wants_prescan():
            self._fitting.start(functools.partial(_fit, weakref.ref(self)))  # a dropped index is not fitted
        return False

    def _wants_prescan(self) -> bool:
        return True

    def _fit(self) -> None:
        with self._lock:
            matrix, size, compactions = self._matrix, self._size, self._compactions
        if size <= QUANTIZE_ABOVE:  # removals compacted it since
            return
        # Rows [0, size) of this array stay as they are until a compaction moves them.
        prescan = Prescan(matrix, size, size)
        with self._lock:
            if self._compactions == compactions and self._wants_prescan():
                prescan.extend(self._matrix, size, self._size)
                self._prescan = prescan

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Matrix]:
        """Copies of these memories' vectors: rows of one new matrix (one copy, not one per row)."""
        with self._lock:
            found = [(m, self._pos[r]) for m in memory_ids if (r := self._rowid_of.get(m)) is not None]
            rows = self._matrix[[i for _, i in found]]
        return {memory_id: rows[j] for j, (memory_id, _) in enumerate(found)}

    def ids(self) -> Sequence[str]:
        ids: list[str] = self._ids[: self._size][self._alive[: self._size]].tolist()
        return ids
