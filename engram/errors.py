"""Every error Engram raises, in one tree.

::

    EngramError                      code            base of everything below
    ├── ValidationError              INVALID_INPUT   bad input; names the field and the allowed range
    │   ├── InvalidQuery             INVALID_QUERY   empty or over-long query (seed 001 policy: skip)
    │   └── ConfigError              INVALID_CONFIG  a config value out of its range
    ├── NotFound                     NOT_FOUND       also a LookupError
    │   ├── MemoryNotFound           MEMORY_NOT_FOUND
    │   ├── UserNotFound             COLLECTION_NOT_FOUND (seed 001 policy: empty)
    │   └── DocumentNotFound         DOCUMENT_NOT_FOUND
    ├── StoreError                   STORE_ERROR
    │   ├── StoreUnavailable         ZEP_UNAVAILABLE (seed 001 policy: skip)
    │   └── EmbedderMismatch         EMBEDDER_MISMATCH  vectors of another model are stored
    ├── EmbedderError                EMBEDDER_ERROR  the model could not load or run
    ├── RateLimited                  RATE_LIMITED    (seed 001 policy: cache)
    └── DeadlineExceeded             TIMEOUT         a retrieval ran past RetrievalConfig.timeout_ms (skip)

Every class carries a stable ``code`` so callers (and the HTTP service) can branch on it
without parsing messages.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DeadlineExceeded",
    "DocumentNotFound",
    "EmbedderError",
    "EmbedderMismatch",
    "EngramError",
    "InvalidQuery",
    "MemoryNotFound",
    "NotFound",
    "RateLimited",
    "StoreError",
    "StoreUnavailable",
    "UserNotFound",
    "ValidationError",
]


def short_repr(value: Any) -> str:
    """A value for an error message, cut short; never raises (repr of a 5,000-digit int does)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of about {value.bit_length() * 0.30103:.0f} digits"
    try:
        text = repr(value)
    except Exception:  # an arbitrary object's __repr__ may raise anything
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


class EngramError(Exception):
    """Root of every error Engram raises."""

    code: str = "ENGRAM_ERROR"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self)}


class ValidationError(EngramError, ValueError):
    """Input that Engram refuses; ``field`` names what was wrong."""

    code = "INVALID_INPUT"

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self), "field": self.field}


class InvalidQuery(ValidationError):
    code = "INVALID_QUERY"


class ConfigError(ValidationError):
    code = "INVALID_CONFIG"


class NotFound(EngramError, LookupError):
    code = "NOT_FOUND"


class MemoryNotFound(NotFound):
    code = "MEMORY_NOT_FOUND"


class UserNotFound(NotFound):
    code = "COLLECTION_NOT_FOUND"


class DocumentNotFound(NotFound):
    code = "DOCUMENT_NOT_FOUND"


class StoreError(EngramError):
    code = "STORE_ERROR"


class StoreUnavailable(StoreError):
    code = "ZEP_UNAVAILABLE"


class EmbedderMismatch(StoreError):
    code = "EMBEDDER_MISMATCH"


class EmbedderError(EngramError):
    code = "EMBEDDER_ERROR"


class RateLimited(EngramError):
    code = "RATE_LIMITED"


class DeadlineExceeded(EngramError):
    code = "TIMEOUT"
