"""Per-row strings (memory ids) kept where Python's cyclic garbage collector does not walk them.

A list is a container the collector walks item by item at every collection of its generation: a
list of a million ids cost each full collection ~18 ms, and a million-memory user's three (the
keyword index's ids and terms, the vector index's ids) made one take ~55 ms, paid by whichever
retrieval set it off (one in a hundred, at p95 of the million-memory benchmark). A numpy array of
objects holds the same strings and is not a collected container; strings cannot form cycles, so
nothing is left for the collector to find there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["Strings", "string_array"]

Strings = npt.NDArray[np.object_]


def string_array(items: Sequence[str] | Strings, capacity: int = 0) -> Strings:
    """``items`` in an object array of at least ``capacity`` slots (the spare ones hold None)."""
    out: Strings = np.empty(max(len(items), capacity), dtype=object)
    # Slice assignment copies the references (a 1-D target: strings are never split into characters).
    out[: len(items)] = items
    return out
