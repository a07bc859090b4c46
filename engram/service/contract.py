"""What /openapi.json promises beyond the routes' own models: the error answer every route can
give, the statuses each route declares, the bearer scheme, and the ranges Engram checks itself.

The ranges are declared, not enforced, here: Engram's own checks (configs, ``engram.validate``)
refuse an out-of-range value with the message the Python API gives, and the schema tells a client
the same bounds beforehand.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi.routing import APIRoute
from pydantic import BaseModel, Field

__all__ = ["ERRORS", "ErrorDetail", "ErrorOut", "errors", "operation_id"]

CODES = (
    "INVALID_INPUT, INVALID_CONFIG, INVALID_QUERY (422); UNAUTHORIZED (401); FORBIDDEN (403); NOT_FOUND, "
    "MEMORY_NOT_FOUND, DOCUMENT_NOT_FOUND (404); EMBEDDER_MISMATCH (409); PAYLOAD_TOO_LARGE (413); "
    "URI_TOO_LONG (414); RATE_LIMITED (429); INTERNAL, STORE_ERROR (500); NOT_IMPLEMENTED (501); "
    "STORE_UNAVAILABLE, EMBEDDER_ERROR (503). New codes may be added: treat an unknown one by its status."
)


class ErrorDetail(BaseModel):
    code: str = Field(description=f"A stable machine-readable code: {CODES}")
    message: str = Field(description="What went wrong, for a person; it names the field and the allowed range.")
    field: str | None = Field(
        default=None, description="The input refused, as the request spelled it (`memories[18].content`)."
    )
    location: Literal["body", "query", "path", "header", "cookie"] | None = Field(
        default=None, description="The part of the request holding the input refused by the request schema."
    )


class ErrorOut(BaseModel):
    """Every error the service answers, whatever its status."""

    error: ErrorDetail


_WHY = {
    401: "No valid API key (`Authorization: Bearer <key>` or `X-API-Key`).",
    403: "The key may not act for this user, or the route needs an admin key.",
    404: "Nothing with that id for this user.",
    413: "The request body is over the service's limit.",
    414: "The query string is over the service's limit.",
    422: "Input refused: `field` names it and `message` says why.",
    429: "The key's rate limit: wait `Retry-After` seconds.",
    500: "An internal error; the server log has it under the answer's `X-Request-ID`.",
    501: "This Engram has no such facade method.",
    503: "The store or the embedder is unavailable; retry later.",
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "`Bearer`."}},
    429: {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait before retrying."}},
}
#: What every authenticated route may answer besides its success.
COMMON = (401, 403, 413, 414, 422, 429, 500, 503)


def errors(*extra: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route: :data:`COMMON` and ``extra`` statuses, each answering :class:`ErrorOut`."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*COMMON, *extra}):
        out[status] = {"model": ErrorOut, "description": _WHY[status]}
        if status in _HEADERS:
            out[status]["headers"] = _HEADERS[status]
    return out


ERRORS = errors()


def operation_id(route: APIRoute) -> str:
    """A route's function name (``add_memory``): what a generated client names its call."""
    return route.name
