"""Lists of strings as one array (newline-joined UTF-8), and matrices gathered as they are written,
for indexes saved as arrays."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

__all__ = ["Gathered", "encoded", "strings", "write_part"]

_CHUNK_ROWS = 16_384


def encoded(items: Sequence[str]) -> npt.NDArray[np.uint8]:
    return np.frombuffer("\n".join(items).encode("utf-8", "surrogatepass"), dtype=np.uint8)


def strings(part: npt.NDArray[np.uint8], count: int) -> list[str] | None:
    """The ``count`` items of an :func:`encoded` array; None when they do not split into that many."""
    items = part.tobytes().decode("utf-8", "surrogatepass").split("\n") if count else []
    return items if len(items) == count else None


@dataclass(frozen=True)
class Gathered:
    """Rows of ``matrix`` at ``rows``, then ``spare`` zero rows: written a chunk at a time, never
    copied whole (at a million 384-dimensional rows, a copy held 1.5 GB more and took 8 s of page
    faults). ``current`` says whether the rows still are where they were (a compaction moves them)."""

    matrix: npt.NDArray[np.float32]
    rows: npt.NDArray[np.int64]
    spare: int
    current: Callable[[], bool]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows) + self.spare, int(self.matrix.shape[1])

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype[np.float32]:
        return self.matrix.dtype

    @property
    def nbytes(self) -> int:
        rows, columns = self.shape
        return rows * columns * self.matrix.dtype.itemsize


def write_part(out: BinaryIO, part: npt.NDArray[np.generic] | Gathered) -> None:
    """Write an array's bytes, or a gathered matrix's, without a copy of the whole."""
    if isinstance(part, Gathered):
        for start in range(0, len(part.rows), _CHUNK_ROWS):
            out.write(np.ascontiguousarray(part.matrix[part.rows[start : start + _CHUNK_ROWS]]).data)
        row = part.matrix.shape[1] * part.matrix.dtype.itemsize
        for start in range(0, part.spare, _CHUNK_ROWS):
            out.write(bytes(row * min(_CHUNK_ROWS, part.spare - start)))
    else:
        out.write(np.ascontiguousarray(part).data)
