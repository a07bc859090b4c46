"""What a pure function of a text gave, kept for the next time the same text is read.

A retrieval reads its candidates' texts again and again: whether each states a standing rule, what
each costs in tokens. Successive questions of a user meet many of the same memories, so those
answers are kept by the text's hash and length, never by the text: nothing kept here holds the
words of a memory, and a forgotten memory's entry is only a number among others until it is pushed
out. Two texts that share both a 64-bit hash and a length would share an answer; the chance is
about one in 10^10 among the entries kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["MEMO_ENTRIES", "TextMemo"]

#: At most this many answers are kept per function; when full, all are dropped at once (cheaper than
#: least-recently-used bookkeeping on every read, and a retrieval fills only a few hundred).
MEMO_ENTRIES = 16_384

T = TypeVar("T")


class TextMemo(Generic[T]):
    """``function(text)`` memoized by ``(hash(text), len(text))``; safe to share between threads
    (a race computes an answer twice, never a wrong one)."""

    def __init__(self, function: Callable[[str], T], entries: int = MEMO_ENTRIES) -> None:
        self._function = function
        self._entries = entries
        self._kept: dict[tuple[int, int], T] = {}

    def __call__(self, text: str) -> T:
        key = (hash(text), len(text))
        kept = self._kept.get(key, _MISSING)
        if kept is not _MISSING:
            return kept  # type: ignore[return-value]
        value = self._function(text)
        if len(self._kept) >= self._entries:
            self._kept = {}
        self._kept[key] = value
        return value

    def __len__(self) -> int:
        return len(self._kept)


_MISSING = object()
