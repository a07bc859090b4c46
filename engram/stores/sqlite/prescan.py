"""The pre-scan of a large user's exact vector search: int8 codes of each row's leading principal
components, a twelfth of the float32 matrix's bytes.

A brute-force scan is bound by memory traffic. Scanning int8 codes of all 384 dimensions (a quarter
of the bytes) cost ~3.9 ms at 100k rows; codes of the 128 directions along which the user's vectors
vary most cost ~1.2 ms, and the float32 re-scoring of a pool of the best 1,000 rows decides the
order. The component count and pool were picked by measurement (``bench/ann_choice.py``-style
runs, recall of the exact top 50): 0.9997 on real all-MiniLM-L6-v2 vectors, 0.9986 on Gaussian
samples with their covariance but no neighbourhoods (the hard case), 1.0 on the benchmark store's
vectors; all 384 int8 dimensions with a 256-row pool scored 1.0 at 1.5x the time.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from engram.pools import process_pool

__all__ = ["COMPONENTS", "POOL", "Fitting", "Prescan", "fitter"]

Matrix = npt.NDArray[np.float32]

#: Principal directions kept.
COMPONENTS = 128
#: The least number of rows re-scored in float32 (20 per result asked for above that).
POOL = 1000
#: Rows the directions are fitted on: a sample estimates a 384x384 covariance well.
_SAMPLE = 8192
#: A code's range covers this percentile of the sample's projected values; rarer ones are clipped.
_COVERED = 99.99


log = logging.getLogger(__name__)


def fitter() -> ThreadPoolExecutor:
    """The one thread that fits pre-scans, for every index of this process (one fit at a time)."""
    return process_pool("engram-prescan", 1)


class Fitting:
    """An index's fit in the background: at most one at a time in this process, none again after
    one failed (its searches stay exact), and a fit the process could not start is not waited for."""

    def __init__(self) -> None:
        self._pid: int | None = None  # the process a fit is queued or running in
        self.failed = False

    def start(self, fit: Callable[[], None]) -> None:
        """Queue ``fit`` unless one is under way here or one failed."""
        if self.failed or self._pid == os.getpid():
            return
        self._pid = os.getpid()
        try:
            fitter().submit(self._run, fit)
        except RuntimeError:  # the interpreter is exiting: searches scan float32
            self._pid = None

    def _run(self, fit: Callable[[], None]) -> None:
        try:
            fit()
        except Exception as exc:  # memory, most likely: the exact scan still answers
            self.failed = True
            log.warning("[MEM:VECTORS] fitting a vector pre-scan failed; searching float32: %r", exc)
        finally:
            self._pid = None


class Prescan:
    """Codes for rows ``[0, len)`` of a matrix, fitted once on a sample of its rows; rows written
    later are coded with the same directions (they move little as a user's memories grow)."""

    def __init__(self, matrix: Matrix, size: int, capacity: int) -> None:
        rows = matrix[:size]
        if size > _SAMPLE:
            rows = rows[np.random.default_rng(0).choice(size, _SAMPLE, replace=False)]
        sample = np.asarray(rows, dtype=np.float32)
        centred = sample - sample.mean(axis=0)
        # The covariance in float32 (float64 took 0.11 s of a 14k-row fit, float32 0.07, the same
        # recall on real MiniLM vectors at 14k, 100k and 200k rows); its eigenvectors in float64.
        _, vectors = np.linalg.eigh((centred.T @ centred).astype(np.float64))
        components = min(COMPONENTS, matrix.shape[1])
        # eigh orders by ascending eigenvalue: the last columns are the leading directions.
        self._basis: Matrix = np.ascontiguousarray(vectors[:, ::-1][:, :components], dtype=np.float32)
        spread = float(np.percentile(np.abs(sample @ self._basis), _COVERED)) if size else 1.0
        self._scale = 127.0 / spread if spread > 0 else 1.0
        self._codes = np.zeros((capacity, components), dtype=np.int8)
        for start in range(0, size, 65_536):  # bounded temporaries for very large users
            end = min(size, start + 65_536)
            self._codes[start:end] = self._code(matrix[start:end])

    @property
    def nbytes(self) -> int:
        return int(self._codes.nbytes + self._basis.nbytes)

    def _code(self, rows: Matrix) -> npt.NDArray[np.int8]:
        projected = (rows @ self._basis) * self._scale
        codes: npt.NDArray[np.int8] = np.clip(np.rint(projected), -127, 127).astype(np.int8)
        return codes

    def set(self, i: int, vector: Matrix) -> None:
        self._codes[i] = self._code(vector[None, :])[0]

    def extend(self, matrix: Matrix, start: int, end: int) -> None:
        """Code rows ``[start, end)`` of ``matrix`` (written while these codes were fitted), with
        room for all of its rows."""
        self.resize(len(matrix))
        if end > start:
            self._codes[start:end] = self._code(matrix[start:end])

    def move(self, keep: npt.NDArray[np.int64]) -> None:
        """Rows ``keep`` become rows ``[0, len(keep))`` (a compaction)."""
        self._codes[: len(keep)] = self._codes[keep]

    def resize(self, capacity: int) -> None:
        codes = np.zeros((capacity, self._codes.shape[1]), dtype=np.int8)
        kept = min(capacity, len(self._codes))
        codes[:kept] = self._codes[:kept]
        self._codes = codes

    def scores(self, query: Matrix, size: int) -> npt.NDArray[np.float32]:
        """Approximate scores of rows ``[0, size)``, in the query's order only (not its scale)."""
        import simsimd

        projected = query @ self._basis
        top = float(np.abs(projected).max())
        code = np.clip(np.rint(projected * (127.0 / top if top > 0 else 1.0)), -127, 127).astype(np.int8)
        scores: npt.NDArray[np.float32] = np.asarray(
            simsimd.cdist(code[None, :], self._codes[:size], metric="dot"), dtype=np.float32
        )[0]
        return scores
