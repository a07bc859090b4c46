"""The retrieval policy's error fallbacks: what a failure falls back to, and how an answer says so."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engram.domain import DOMAIN_UNAVAILABLE
from engram.retrieve.types import Retrieval

__all__ = ["FALLBACKS", "marked"]

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
