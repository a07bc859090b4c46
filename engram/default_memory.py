"""The process-wide default ``Memory`` and the single-call document API that uses it.

A surface, like the CLI: it opens the facade, so it lives above it, while document lookup itself
(:mod:`engram.documents`) works over a context and never opens anything.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from engram.documents import get_default_user_id, get_document
from engram.memory import Memory

__all__ = ["close_default_memory", "get_default_memory", "get_default_user_id", "retrieve_document_from_metadata"]

_default_lock = threading.Lock()
_default_memory: list[Memory] = []


def get_default_memory() -> Memory:
    """A process-wide Memory on ``$ENGRAM_DB`` (else ./engram.db), opened on first use."""
    with _default_lock:
        if not _default_memory:
            _default_memory.append(Memory(os.environ.get("ENGRAM_DB") or None))
        return _default_memory[0]


def close_default_memory() -> None:
    """Close the default Memory if it was opened; the next use opens it again."""
    with _default_lock:
        if _default_memory:
            _default_memory.pop().close()


def retrieve_document_from_metadata(
    meta: Mapping[str, Any],
    *,
    user_id: str | None = None,
    k: int = 50,
    default_tags: Sequence[str] | None = None,
    strategy: str = "latest",
    as_of: str | datetime | None = None,
    memory: Memory | None = None,
) -> str:
    """The full text of exactly one document version, in one call (see :func:`engram.documents.get_document`).

    >>> retrieve_document_from_metadata(                                     # doctest: +SKIP
    ...     {"filename": "memory_storage.md"}, as_of="2025-12-04T09:00:00+00:00")
    """
    target = memory if memory is not None else get_default_memory()
    return get_document(
        target, meta, user_id=user_id, k=k, default_tags=default_tags, strategy=strategy, as_of=as_of
    ).content
