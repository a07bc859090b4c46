"""A memory's facet vectors (engram.ingest.facets) as one column of its row, in both backends.

One float32 matrix, its rows laid end to end: the row's own vector says how wide a row is, so the
bytes carry nothing else. Kept in the memory's row, a facet is written, replaced and erased with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engram.errors import StoreError
from engram.ext import Vector

__all__ = ["facet_bytes", "facet_matrix"]


def facet_bytes(facets: Vector | None, width: int | None) -> bytes | None:
    """What the column holds for ``facets`` of a memory whose own vector has ``width`` dimensions
    (None: it has none)."""
    if facets is None:
        return None
    matrix = np.asarray(facets, dtype=np.float32)
    if matrix.size == 0:
        return None
    if matrix.ndim != 2 or matrix.shape[1] != width or not np.isfinite(matrix).all():
        raise StoreError(f"facets of shape {matrix.shape} do not go with a vector of {width} dimensions")
    return matrix.tobytes()


def facet_matrix(blob: Any, width: int) -> Vector | None:
    """The matrix a column's bytes hold, for a memory whose vector has ``width`` dimensions; None
    for bytes that hold no whole rows of that width (a damaged row is read as having no facets)."""
    data = bytes(blob)
    if width <= 0 or not data or len(data) % (4 * width):
        return None
    return np.frombuffer(data, dtype=np.float32).reshape(-1, width).copy()
