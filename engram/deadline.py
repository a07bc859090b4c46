"""The deadline of the store reads a retrieval makes on this thread (issue 41, finding 6).

A retrieval's deadline (``RetrievalConfig.timeout_ms``) is checked between its stages, but one
store read can run far past it: at 20,000 memories one SQLite statement of the entity source read
for ~750 ms under a 100 ms deadline. The pipeline names the moment its reads must end with
:func:`reads_until`; a store that can interrupt a statement reads :func:`read_deadline` when it
starts one (SQLite's progress handler, PostgreSQL's ``statement_timeout``) and raises
DeadlineExceeded when the statement is cut. Reads made outside a retrieval have no deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from engram.errors import DeadlineExceeded

__all__ = ["check", "read_deadline", "reads_until", "remaining_ms"]

_deadline: ContextVar[float | None] = ContextVar("engram_read_deadline", default=None)


@contextmanager
def reads_until(deadline: float | None) -> Iterator[None]:
    """Store reads on this thread inside stop at ``deadline`` (a ``time.perf_counter()`` value; None: never)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def read_deadline() -> float | None:
    """When the reads of this thread must end (a ``time.perf_counter()`` value), or None."""
    return _deadline.get()


def remaining_ms(deadline: float) -> int:
    """Whole milliseconds left before ``deadline``, at least 1 (0 means "no limit" to PostgreSQL)."""
    return max(1, int((deadline - time.perf_counter()) * 1000))


def check(deadline: float | None, doing: str) -> None:
    """DeadlineExceeded when ``deadline`` has passed: a read is not started once it has."""
    if deadline is not None and time.perf_counter() >= deadline:
        raise DeadlineExceeded(f"retrieval passed its deadline {doing}")
