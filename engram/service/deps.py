"""What every route shares: the service state, the key checks and the rate limit."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from engram.config import AdminMemorySettings, RetrievalConfig
from engram.errors import Forbidden, RateLimited, Unauthorized, ValidationError, short_repr
from engram.memory import Memory
from engram.service.auth import ApiKey, KeyStore
from engram.service.ratelimit import RateLimiter

__all__ = [
    "USER_RULE",
    "AuthKey",
    "LimitedKey",
    "Service",
    "ServiceSettings",
    "SvcDep",
    "UserParam",
    "UserQ",
    "authorized",
    "check_admin",
    "check_user",
    "limited",
    "service",
    "user_of",
]

FORBIDDEN_MESSAGE = "this API key may not access that user"
#: The one way every route names its user (said in each route's parameter and in /openapi.json).
USER_RULE = (
    "The user the request acts for. Every route that acts for one user takes it as the `userId` query "
    "parameter; routes with a JSON body also accept `userId` in the body (as before), and given in both "
    "places the two must be equal (else 422 with field `userId`)."
)
#: ``userId`` of a route without a body: the query parameter, required.
UserQ = Annotated[str, Query(alias="userId", min_length=1, max_length=256, description=USER_RULE)]
#: ``userId`` of a route with a body: the query parameter, or the body's ``userId`` (see :func:`user_of`).
UserParam = Annotated[str | None, Query(alias="userId", min_length=1, max_length=256, description=USER_RULE)]


@dataclass(frozen=True)
class ServiceSettings:
    """Service-wide bounds; per-key ``rate``/``burst`` in ``api_keys`` override the defaults."""

    rate: float = 100.0
    burst: float = 200.0
    max_body_bytes: int = 1_048_576
    max_ingest_bytes: int = 16_777_216
    max_query_chars: int = 4096
    #: Retrievals one server process ranks at once, the rest waiting their turn (None: no bound).
    #: On the embedded store a retrieval is CPU work under one interpreter lock: eight at once cost
    #: ~50 % more CPU each than one alone (docs/scaling.md, "Several service workers").
    retrievals_at_once: int | None = None
    #: The retrieval policy searches only when a request names its ``sessionId``; off by default,
    #: since one-shot callers (no chat session) are Engram's common case. On, a retrieval without one
    #: answers an empty payload, as ``useMemory: false`` does.
    require_session: bool = False


#: How long a worker serves the admin settings it last read before reading them again: another
#: worker's change reaches every worker within this many seconds.
ADMIN_SETTINGS_TTL = 1.0
_ADMIN_SETTINGS = "admin_memory_settings"


@dataclass
class Service:
    memory: Memory
    keys: KeyStore
    settings: ServiceSettings = field(default_factory=ServiceSettings)
    limiter: RateLimiter = field(init=False)
    _admin: tuple[float, int, AdminMemorySettings | None] = (float("-inf"), 0, None)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.limiter = RateLimiter(self.settings.rate, self.settings.burst)
        if self.settings.retrievals_at_once is not None:
            # The bound is the memory's: a request waits for it only after its query's embedding has
            # started, so a model that runs outside the interpreter lock keeps working meanwhile.
            self.memory.pipeline.slots = threading.BoundedSemaphore(self.settings.retrievals_at_once)

    @property
    def admin(self) -> AdminMemorySettings | None:
        """The admin settings, shared by every worker through the key store (None: never set)."""
        return self._read_admin(force=False)

    def _read_admin(self, *, force: bool) -> AdminMemorySettings | None:
        """The settings last read, read again after :data:`ADMIN_SETTINGS_TTL` seconds (or now)."""
        now = time.monotonic()
        with self._lock:
            read_at, version, settings = self._admin
        if not force and now - read_at < ADMIN_SETTINGS_TTL:
            return settings
        shared = self.keys.shared_setting(_ADMIN_SETTINGS)
        if shared is not None and shared[1] != version:
            settings = _admin_from_json(shared[0])
            # Payloads cached under the old settings must not be served under the new ones (their
            # keys hold the config, but the rate-limited path answers from the cache as it is).
            self.memory.clear_cached_retrievals()
        with self._lock:
            self._admin = (now, shared[1] if shared is not None else version, settings)
        return settings

    @property
    def base_config(self) -> RetrievalConfig:
        """Admin settings over the memory's config: what a retrieval runs with before its overrides."""
        admin = self.admin
        return admin.to_config(self.memory.config) if admin is not None else self.memory.config

    def set_admin(self, settings: AdminMemorySettings) -> None:
        """Change the admin settings for every worker (this one at once, the others within
        :data:`ADMIN_SETTINGS_TTL` seconds)."""
        self.keys.share_setting(_ADMIN_SETTINGS, json.dumps(asdict(settings)))
        self._read_admin(force=True)

    def wait(self, key: ApiKey) -> float:
        return self.limiter.acquire(key.id, key.rate, key.burst)


def _admin_from_json(text: str) -> AdminMemorySettings:
    values = json.loads(text)
    values["custom_redaction_patterns"] = tuple(values.get("custom_redaction_patterns") or ())
    return AdminMemorySettings(**values)


async def service(request: Request) -> Service:
    # async: FastAPI runs a plain function dependency on a worker thread, and a thread hop costs
    # more than this attribute read; every route resolves it.
    svc: Service = request.app.state.service
    return svc


SvcDep = Annotated[Service, Depends(service)]


#: The two ways to send a key, declared in /openapi.json as its security schemes (either will do).
_BEARER = HTTPBearer(auto_error=False, scheme_name="bearer", bearerFormat="egk_<id>_<secret>",
                     description="An API key made with `engram keys create`.")
_API_KEY = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="apiKey",
                        description="The same API key, for clients that cannot set Authorization.")
Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]
HeaderKey = Annotated[str | None, Depends(_API_KEY)]


def authorized(svc: SvcDep, bearer: Bearer, header: HeaderKey) -> ApiKey:
    key = svc.keys.authenticate(bearer.credentials.strip() if bearer is not None else header)
    if key is None:
        raise Unauthorized("a valid API key is required (Authorization: Bearer <key>)")
    return key


AuthKey = Annotated[ApiKey, Depends(authorized)]


def limited(key: AuthKey, svc: SvcDep) -> ApiKey:
    """The caller's key, after taking a token from its bucket (429 with Retry-After when empty)."""
    return spend(svc, key)


def spend(svc: Service, key: ApiKey, message: str | None = None) -> ApiKey:
    """``key``, after taking a token from its bucket; a RateLimited with Retry-After (saying ``message``,
    else the retrieval policy's own) when it is empty."""
    wait = svc.wait(key)
    if wait > 0:
        raise rate_limited(wait) if message is None else RateLimited(message, retry_after=wait)
    return key


LimitedKey = Annotated[ApiKey, Depends(limited)]


def rate_limited(wait: float) -> RateLimited:
    return RateLimited("Memory retrieval rate limit exceeded", retry_after=wait)


def check_user(key: ApiKey, user_id: str) -> str:
    # The same answer whether or not the user exists: a 403 must not reveal who has memories.
    if not isinstance(user_id, str) or not key.may_access(user_id):
        raise Forbidden(FORBIDDEN_MESSAGE)
    return user_id


def user_of(key: ApiKey, query: str | None, body: str | None, *, field: str = "userId") -> str:
    """The user a request names in its query (``userId``) or its body (``field``), checked against the key.

    Both may be given if they agree: a body written for the old convention stays valid with the
    query parameter added. Two different users are refused rather than one silently chosen.
    """
    if query is not None and body is not None and query != body:
        raise ValidationError(field, f"the userId query parameter ({short_repr(query)}) and the body "
                                     f"({short_repr(body)}) name different users; give one of them")
    user = query if query is not None else body
    if user is None:
        raise ValidationError("userId", "required: give it as the userId query parameter (or in the JSON body)")
    return check_user(key, user)


def check_admin(key: ApiKey, *, every_user: bool = False) -> None:
    """Refuse a key that is not an admin key; with ``every_user`` (what spans every user: resetting
    the store, its store-wide counts) also an admin key scoped to some users or tenants only."""
    if not key.admin:
        raise Forbidden("this API key is not an admin key")
    if every_user and "*" not in key.scopes:
        raise Forbidden("this admin key is scoped to some users; what spans every user of the store needs an "
                        "admin key for every user (engram keys create --admin, without --user or --tenant)")
