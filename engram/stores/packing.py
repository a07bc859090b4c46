"""Lists of strings as one array (newline-joined UTF-8), for indexes saved as arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["encoded", "strings"]


def encoded(items: Sequence[str]) -> npt.NDArray[np.uint8]:
    return np.frombuffer("\n".join(items).encode("utf-8", "surrogatepass"), dtype=np.uint8)


def strings(part: npt.NDArray[np.uint8], count: int) -> list[str] | None:
    """The ``count`` items of an :func:`encoded` array; None when they do not split into that many."""
    items = part.tobytes().decode("utf-8", "surrogatepass").split("\n") if count else []
    return items if len(items) == count else None
