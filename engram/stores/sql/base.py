"""What the shared store methods need of a backend: its dialect, one read, one write transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

from engram.stores.sql.dialect import Dialect, Tx

__all__ = ["SQLBase", "chunks"]

T = TypeVar("T")


def chunks(ids: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``ids`` in runs of at most ``size``: every id is sent, however many there are."""
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


class SQLBase:
    """A backend implements ``_read`` and ``_write``; the shared mixins speak through ``_query``."""

    dialect: ClassVar[Dialect]

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of one statement already in the backend's own spelling."""
        raise NotImplementedError

    def _write(self, op: Callable[[Tx], T]) -> T:
        """``op`` inside one write transaction; its result."""
        raise NotImplementedError

    def _query(self, text: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._read(self.dialect.sql(text), params)
