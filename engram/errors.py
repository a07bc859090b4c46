"""Every error Engram raises, in one tree.

::

    EngramError                      code            base of everything below
    ├── ValidationError              INVALID_INPUT   bad input; names the field and the allowed range (422)
    │   ├── InvalidQuery             INVALID_QUERY   empty or over-long query (retrieval policy: skip)
    │   └── ConfigError              INVALID_CONFIG  a config value out of its range
    ├── NotFound                     NOT_FOUND       also a LookupError (404)
    │   ├── MemoryNotFound           MEMORY_NOT_FOUND
    │   └── DocumentNotFound         DOCUMENT_NOT_FOUND
    ├── StoreError                   STORE_ERROR     (500)
    │   ├── StoreUnavailable         ZEP_UNAVAILABLE (retrieval policy: skip; 503)
    │   └── EmbedderMismatch         EMBEDDER_MISMATCH  vectors of another model are stored (409)
    ├── EmbedderError                EMBEDDER_ERROR  the model could not load or run (503)
    ├── MissingExtra                 MISSING_EXTRA   an optional extra is not installed; also an ImportError
    ├── RateLimited                  RATE_LIMITED    too many requests for one API key (retrieval policy: cache; 429)
    ├── DeadlineExceeded             TIMEOUT         a retrieval passed RetrievalConfig.timeout_ms (partial, else skip)
    ├── Unauthorized                 UNAUTHORIZED    the HTTP service got no valid API key (401)
    ├── Forbidden                    FORBIDDEN       the API key may not touch that user, or is not an admin key (403)
    └── ServiceError                 SERVICE_ERROR   any other answer of the HTTP service; ``code`` and ``status``
                                                     are the service's own (PAYLOAD_TOO_LARGE 413, NOT_IMPLEMENTED 501)

Every class carries a stable ``code`` so callers (and the HTTP service) can branch on it
without parsing messages. The HTTP status of each is :data:`engram.wire.HTTP_STATUS`'s (the one
table the service answers with and the client reads back). A user with no memories is not an
error: retrieval answers empty (its metadata's error code ``COLLECTION_NOT_FOUND``).
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
    "Forbidden",
    "InvalidQuery",
    "MemoryNotFound",
    "MissingExtra",
    "NotFound",
    "RateLimited",
    "ServiceError",
    "StoreError",
    "StoreUnavailable",
    "Unauthorized",
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


class MissingExtra(EngramError, ImportError):
    """A feature whose optional dependencies are not installed; ``extra`` names the extra that brings them
    (:mod:`engram.extras` words the message: the feature, the extra, the pip line)."""

    code = "MISSING_EXTRA"

    def __init__(self, message: str, *, extra: str = "") -> None:
        super().__init__(message)
        self.extra = extra


class RateLimited(EngramError):
    """Too many requests for one API key; ``retry_after`` is the seconds to wait (0 when unknown)."""

    code = "RATE_LIMITED"

    def __init__(self, message: str = "Memory retrieval rate limit exceeded", *, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DeadlineExceeded(EngramError):
    code = "TIMEOUT"


class Unauthorized(EngramError):
    """The HTTP service got no API key, or one it does not know or that was revoked."""

    code = "UNAUTHORIZED"


class Forbidden(EngramError):
    """The API key is valid but may not touch that user, or the route needs an admin key."""

    code = "FORBIDDEN"


class ServiceError(EngramError):
    """An answer of the HTTP service with no class of its own; ``code`` and ``status`` are the service's."""

    code = "SERVICE_ERROR"

    def __init__(self, message: str, *, code: str | None = None, status: int = 500) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.status = status
