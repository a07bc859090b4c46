"""What every route shares: the service state, errors as HTTP answers, key checks, JSON shapes."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Any

from fastapi import Depends, Request

from engram.config import AdminMemorySettings, RetrievalConfig
from engram.errors import (
    EmbedderError,
    EmbedderMismatch,
    EngramError,
    NotFound,
    RateLimited,
    StoreError,
    StoreUnavailable,
    ValidationError,
)
from engram.memory import Memory
from engram.service.auth import ApiKey, KeyStore
from engram.service.ratelimit import RateLimiter
from engram.service.schemas import to_camel

__all__ = [
    "AuthKey",
    "LimitedKey",
    "Service",
    "ServiceError",
    "ServiceSettings",
    "SvcDep",
    "authorized",
    "error_status",
    "jsonable",
    "limited",
    "record_json",
    "service",
]

FORBIDDEN_MESSAGE = "this API key may not access that user"


@dataclass(frozen=True)
class ServiceSettings:
    """Service-wide bounds; per-key ``rate``/``burst`` in ``api_keys`` override the defaults."""

    rate: float = 100.0
    burst: float = 200.0
    max_body_bytes: int = 1_048_576
    max_ingest_bytes: int = 16_777_216
    max_query_chars: int = 4096


class ServiceError(Exception):
    """An HTTP answer with a stable code; raised by routes, rendered by one handler."""

    def __init__(
        self, status: int, code: str, message: str, *, field: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return {"error": error}


def error_status(exc: EngramError) -> int:
    if isinstance(exc, ValidationError):
        return 422
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, RateLimited):
        return 429
    if isinstance(exc, EmbedderMismatch):
        return 409
    if isinstance(exc, (StoreUnavailable, EmbedderError)):
        return 503
    if isinstance(exc, StoreError):
        return 500
    return 400


@dataclass
class Service:
    memory: Memory
    keys: KeyStore
    settings: ServiceSettings = field(default_factory=ServiceSettings)
    limiter: RateLimiter = field(init=False)
    admin: AdminMemorySettings | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.limiter = RateLimiter(self.settings.rate, self.settings.burst)

    @property
    def base_config(self) -> RetrievalConfig:
        """Admin settings over the memory's config: what a retrieval runs with before its overrides."""
        with self._lock:
            admin = self.admin
        return admin.to_config(self.memory.config) if admin is not None else self.memory.config

    def set_admin(self, settings: AdminMemorySettings) -> None:
        with self._lock:
            self.admin = settings
        # Cached payloads were computed under the old settings; their keys include the config, but
        # clearing keeps a settings change visible at once even to the rate-limited cache path.
        self.memory.pipeline.cache.clear()

    def wait(self, key: ApiKey) -> float:
        return self.limiter.acquire(key.id, key.rate, key.burst)


def service(request: Request) -> Service:
    svc: Service = request.app.state.service
    return svc


SvcDep = Annotated[Service, Depends(service)]


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip()
    return request.headers.get("x-api-key")


def authorized(request: Request, svc: SvcDep) -> ApiKey:
    key = svc.keys.authenticate(_token(request))
    if key is None:
        raise ServiceError(
            401, "UNAUTHORIZED", "a valid API key is required (Authorization: Bearer <key>)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return key


AuthKey = Annotated[ApiKey, Depends(authorized)]


def limited(key: AuthKey, svc: SvcDep) -> ApiKey:
    """The caller's key, after taking a token from its bucket (429 with Retry-After when empty)."""
    wait = svc.wait(key)
    if wait > 0:
        raise rate_limited(wait)
    return key


LimitedKey = Annotated[ApiKey, Depends(limited)]


def rate_limited(wait: float) -> ServiceError:
    return ServiceError(
        429, "RATE_LIMITED", "Memory retrieval rate limit exceeded",
        headers={"Retry-After": RateLimiter.retry_after(wait)},
    )


def check_user(key: ApiKey, user_id: str) -> str:
    # The same answer whether or not the user exists: a 403 must not reveal who has memories.
    if not isinstance(user_id, str) or not key.may_access(user_id):
        raise ServiceError(403, "FORBIDDEN", FORBIDDEN_MESSAGE)
    return user_id


def check_admin(key: ApiKey) -> None:
    if not key.admin:
        raise ServiceError(403, "FORBIDDEN", "this API key is not an admin key")


def jsonable(value: Any) -> Any:
    """Facade results as JSON: ``to_dict`` where a type has one, else dataclass fields."""
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return jsonable(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


def record_json(value: Any) -> Any:
    """A record's top-level fields in camelCase (seed 001 style); nested metadata kept verbatim."""
    data = jsonable(value)
    if not isinstance(data, dict):
        return data
    return {to_camel(k) if k != "metadata" else k: v for k, v in data.items()}
