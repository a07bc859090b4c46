"""What a store keeps in memory for long, kept where Python's cyclic garbage collector does not walk it.

A list is a container the collector walks item by item at every collection of its generation: a
list of a million ids cost each full collection ~18 ms, and a million-memory user's three (the
keyword index's ids and terms, the vector index's ids) made one take ~55 ms, paid by whichever
retrieval set it off (one in a hundred, at p95 of the million-memory benchmark). A numpy array of
objects holds the same strings and is not a collected container; strings cannot form cycles, so
nothing is left for the collector to find there.

Cached records (:func:`untrack`) are the same cost in objects: the collector visits each of a
record's 27 fields at every full collection. 15k records held by the record cache (1,000 users,
400 retrievals) made a full collection take 35 ms against 7-19 without them, paid by the retrieval
that set it off; 300k, about what the default budget holds, 88-98 ms against 12-13. A frozen
record of strings, numbers, times and tuples of strings cannot be part of a cycle, so the collector
is told to leave it alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["Strings", "string_array", "untrack"]

Strings = npt.NDArray[np.object_]


def string_array(items: Sequence[str] | Strings, capacity: int = 0) -> Strings:
    """``items`` in an object array of at least ``capacity`` slots (the spare ones hold None)."""
    out: Strings = np.empty(max(len(items), capacity), dtype=object)
    # Slice assignment copies the references (a 1-D target: strings are never split into characters).
    out[: len(items)] = items
    return out


def _untracker() -> Callable[[object], None] | None:
    # CPython's own call (its C API), through ctypes; elsewhere (PyPy, an interpreter built without
    # ctypes) the collector keeps walking the records, which costs time, never correctness.
    if sys.implementation.name != "cpython":
        return None
    try:
        import ctypes

        call = ctypes.pythonapi.PyObject_GC_UnTrack
    except (ImportError, AttributeError, OSError):
        return None
    call.argtypes = [ctypes.py_object]
    call.restype = None
    return call


_UNTRACK = _untracker()


def untrack(objects: Iterable[object]) -> None:
    """Take ``objects`` out of the collector's walks. Only for objects that cannot be part of a
    reference cycle: one that were would never be collected. A record read from the store is such
    an object while nobody changes it: frozen, and its one container, the metadata decoded from
    JSON, holds no record. Records a store returns are shared with its cache and are not to be
    changed (their metadata included): a change would show in later answers, and a reference from
    their metadata back to a record would never be collected."""
    if _UNTRACK is not None:
        for obj in objects:
            _UNTRACK(obj)
