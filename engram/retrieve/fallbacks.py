"""The retrieval policy's error fallbacks: what a failure falls back to, and how an answer says so."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from engram.config import RetrievalConfig
from engram.domain import DOMAIN_UNAVAILABLE
from engram.model import Filters, new_id
from engram.retrieve.types import Retrieval, RetrievalMetadata

__all__ = ["FALLBACKS", "empty", "marked"]

#: The retrieval policy's error fallbacks: what a failure falls back to.
FALLBACKS = {
    "ZEP_UNAVAILABLE": ("Memory service temporarily unavailable", "skip"),
    "COLLECTION_NOT_FOUND": ("User memory collection does not exist", "empty"),
    "RATE_LIMITED": ("Memory retrieval rate limit exceeded", "cache"),
    "INVALID_QUERY": ("Query text invalid or too long", "skip"),
    "TIMEOUT": ("Memory retrieval exceeded its deadline", "skip"),
    "DOMAIN_UNAVAILABLE": DOMAIN_UNAVAILABLE,
}


def marked(result: Retrieval, *, cached: bool, error: str | None) -> Retrieval:
    """``result`` marked as served from the cache or not, with the fallback of ``error`` if any."""
    meta: dict[str, Any] = {"cached": cached}
    if error is not None:
        message, fallback = FALLBACKS[error]
        meta["error"] = {"code": error, "message": message, "fallback": fallback}
    return replace(result, metadata=replace(result.metadata, **meta))


def empty(query: str, config: RetrievalConfig, filters: Filters, started: float, code: str | None) -> Retrieval:
    """An answer without memory, begun at ``started`` (``time.perf_counter()``), with the fallback of
    ``code`` if any (None: memory was not asked for)."""
    error = None
    if code is not None:
        message, fallback = FALLBACKS[code]
        error = {"code": code, "message": message, "fallback": fallback}
    metadata = RetrievalMetadata(
        query_time_ms=(time.perf_counter() - started) * 1000,
        total_results=0,
        included_results=0,
        total_tokens=0,
        applied_filters=tuple(filters.describe()),
        config=config.to_dict(),
        error=error,
        retrieval_id=new_id(),
    )
    return Retrieval(query=query, memories=(), metadata=metadata)
