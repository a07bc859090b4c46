"""A memory's facet vectors (engram.ingest.facets) as one column of its row, in both backends.

One float32 matrix, its rows laid end to end: the row's own vector says how wide a row is, so the
bytes carry nothing else. Kept in the memory's row, a facet is written, replaced and erased with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from engram.errors import StoreError
from engram.ext import Vector
from engram.model import MemoryRecord

__all__ = ["aligned_facets", "facet_bytes", "facet_matrices", "facet_matrix", "facet_updates"]


def aligned_facets(
    records: Sequence[MemoryRecord], vectors: Vector, facets: Sequence[Vector | None] | None,
) -> Sequence[Vector | None]:
    """``put_many``'s facets, one per record (None where a memory has none), once the batch's
    records, vectors and facets are checked to be as many."""
    if len(records) != len(vectors) or (facets is not None and len(facets) != len(records)):
        given = "" if facets is None else f" and {len(facets)} facets"
        raise StoreError(f"{len(records)} records but {len(vectors)} vectors{given}")
    return [None] * len(records) if facets is None else facets


def facet_updates(user_id: str, rows: Sequence[tuple[str, str, Vector]]) -> list[tuple[Any, ...]]:
    """``put_facets``' rows as (bytes, user id, memory id, content hash, vector width)."""
    return [(facet_bytes(matrix, width), user_id, memory_id, digest, width)
            for memory_id, digest, matrix in rows for width in [int(np.shape(matrix)[-1])]]


def facet_matrices(rows: Iterable[tuple[str, Any, int]]) -> dict[str, Vector]:
    """(memory id, column bytes, vector width) rows as matrices by id, damaged values left out."""
    found = {memory_id: facet_matrix(blob, int(width)) for memory_id, blob, width in rows}
    return {memory_id: matrix for memory_id, matrix in found.items() if matrix is not None}


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
