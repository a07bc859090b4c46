"""The FastAPI application: middleware (request ids, size limits, access logs), error mapping,
health, metrics, admin settings and the /ui explorer; the memory routes live in ``routes``."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.config import AdminMemorySettings
from engram.errors import EngramError, NotFound, RateLimited, Unauthorized
from engram.memory import Memory
from engram.service import docs, mem0_platform, retrieval, routes
from engram.service.auth import KeyStore
from engram.service.contract import ERRORS, operation_id
from engram.service.deps import USER_RULE, LimitedKey, Service, ServiceSettings, SvcDep, check_admin
from engram.service.logs import install_record_factory, request_context
from engram.service.observe import HttpMetrics
from engram.service.ratelimit import RateLimiter
from engram.service.responses import AdminSettingsOut, HealthOut, KeyOut, StatsOut
from engram.service.schemas import AdminSettingsBody
from engram.wire import error_json, http_status, jsonable, to_camel

__all__ = ["SECURITY_HEADERS", "create_app"]

log = logging.getLogger("engram.service")
access = logging.getLogger("engram.service.access")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_UI_FILES = {"index.html": "text/html", "app.js": "text/javascript", "browse.js": "text/javascript",
             "detail.js": "text/javascript", "style.css": "text/css"}
#: Sent with every answer. The /ui explorer needs only its own script, style and API; nothing may
#: frame a page that holds an API key (clickjacking), and no answer is sniffed as another type.
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'{data}; connect-src 'self'; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
_OTHER_HEADERS = ((b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
                  (b"referrer-policy", b"no-referrer"))
SECURITY_HEADERS = ((b"content-security-policy", _CSP.format(data="").encode()), *_OTHER_HEADERS)
#: /docs alone also shows ``data:`` images: Swagger UI's stylesheet draws its icons with them (an
#: image cannot run script, so the script policy stays the same).
DOCS_SECURITY_HEADERS = ((b"content-security-policy", _CSP.format(data=" data:").encode()), *_OTHER_HEADERS)
#: The conventions every route follows, at the top of /openapi.json.
API_CONVENTIONS = f"""\
**The user.** {USER_RULE} In a batch, the query parameter is the user of every item that names none.
`DELETE /v1/users/{{userId}}` names the user it forgets in its path.

**Names.** Request bodies are camelCase (snake_case accepted). Answers are camelCase, except recall results,
documents and ingest reports, which keep their snake_case field names.

**Errors.** Every error answers `{{"error": {{"code", "message", "field"?, "location"?}}}}`. Input refused is a
422 whose `field` is the input as the request spelled it (`memories[18].content`, `config.topK`, `userId`).
Refused by the request schema (`INVALID_INPUT`), it also has a `location`, the part of the request holding the
input (`body`, `query`, `path`), and its message starts with the position: `body.memories[18].content: ...`,
or `body at line 1 column 19: ...` for a body that is not JSON.
"""
_PARTS = ("body", "query", "path", "header", "cookie")
#: A union member's tag in a pydantic ``loc`` (``str``, ``list[dict[str,any]]``, ``function-after[...]``).
_UNION_TAG = re.compile(r"^(str|int|float|bool|none|dict|list)$|[\[(]")
_CODES = {400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
          406: "NOT_ACCEPTABLE", 413: "PAYLOAD_TOO_LARGE", 414: "URI_TOO_LONG", 415: "UNSUPPORTED_MEDIA_TYPE",
          429: "RATE_LIMITED"}


def _error(status: int, code: str, message: str, field: str | None = None,
           headers: dict[str, str] | None = None, location: str | None = None, *, detail: bool = False) -> JSONResponse:
    """The error answer; ``detail`` repeats the message where Mem0's client reads it (the /mem0 routes)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    if location is not None:
        error["location"] = location
    body: dict[str, Any] = {"error": error, "detail": message} if detail else {"error": error}
    return JSONResponse(body, status_code=status, headers=headers)


def locate(error: Mapping[str, Any], body: Any) -> tuple[str, str, str]:
    """Where a request failed validation: the part (body, query, path, header), the field as the
    request spelled it (``memories[18].content``) and the position a reader looks for
    (``body.memories[18].content``; ``body at line 2 column 9`` for text that is not JSON, whose
    ``loc`` is a character offset that read as a field name)."""
    loc = list(error.get("loc", ()))
    where, rest = (str(loc[0]), loc[1:]) if loc and loc[0] in _PARTS else ("body", loc)
    if error.get("type") == "json_invalid" and rest and isinstance(rest[0], int) and isinstance(body, str):
        offset = rest[0]
        line = body.count("\n", 0, offset) + 1
        column = offset - (body.rfind("\n", 0, offset) + 1) + 1
        return "body", "body", f"body at line {line} column {column}"
    field = ""
    for part in rest:
        if isinstance(part, int):
            field += f"[{part}]"
        elif not _UNION_TAG.match(str(part)):  # pydantic names the union member that failed: not a field
            field += f".{part}" if field else str(part)
    return where, field or where, f"{where}.{field}" if field else where


class RequestMiddleware:
    """Request id, size limits and one structured access line per request.

    Pure ASGI rather than BaseHTTPMiddleware: the body limit has to see the stream as it arrives,
    not after it was read whole into memory.
    """

    def __init__(self, app: ASGIApp, settings: ServiceSettings, metrics: HttpMetrics) -> None:
        self.app = app
        self.settings = settings
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        given = headers.get("x-request-id", "")
        request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex[:16]
        token = request_context.set({"request_id": request_id})
        started = time.perf_counter()
        status = [500]

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message.setdefault("headers", [])
                security = DOCS_SECURITY_HEADERS if scope["path"] == "/docs" else SECURITY_HEADERS
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode()), *security]
            await send(message)

        try:
            await self._handle(scope, receive, send_wrapper, headers)
        finally:
            seconds = time.perf_counter() - started
            self.metrics.observe(scope, status[0], seconds)
            access.info(
                "%s %s %d", scope["method"], scope["path"], status[0],
                extra={"method": scope["method"], "path": scope["path"], "status": status[0],
                       "duration_ms": round(seconds * 1000, 3)},
            )
            request_context.reset(token)

    async def _handle(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        path: str = scope["path"]
        mem0 = _mem0(path)
        if len(scope.get("query_string", b"")) > self.settings.max_query_chars:
            response = _error(414, "URI_TOO_LONG", f"query string over {self.settings.max_query_chars} bytes",
                              detail=mem0)
            await response(scope, receive, send)
            return
        limit = self.settings.max_ingest_bytes if path == "/v1/documents" else self.settings.max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            too_large = _error(413, "PAYLOAD_TOO_LARGE", f"request body over {limit} bytes", detail=mem0)
            await too_large(scope, receive, send)
            return
        seen = [0]

        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if seen[0] > limit:
                    # FastAPI re-raises HTTPException from body reading as is, so this becomes a 413.
                    raise StarletteHTTPException(413, f"request body over {limit} bytes")
            return message

        await self.app(scope, counted, send)


def _mem0(path: str) -> bool:
    """Whether ``path`` is one of Mem0's platform calls (engram.service.mem0_platform)."""
    return path.startswith(mem0_platform.router.prefix + "/")


def _install_handlers(app: FastAPI) -> None:
    @app.exception_handler(EngramError)
    async def on_engram_error(request: Request, exc: EngramError) -> JSONResponse:
        status = http_status(exc)
        if status >= 500:
            log.error("engram error: %s", exc, extra={"code": exc.code})
        headers: dict[str, str] = {}
        if isinstance(exc, Unauthorized):
            headers["WWW-Authenticate"] = "Bearer"
        elif isinstance(exc, RateLimited):
            headers["Retry-After"] = RateLimiter.retry_after(exc.retry_after)
        if _mem0(request.url.path):  # Mem0's requests spell fields in snake case; its client reads ``detail``
            error = exc.to_dict()
            body = {"error": error, "detail": error["message"]}
            return JSONResponse(body, status_code=status, headers=headers or None)
        return JSONResponse({"error": error_json(exc)}, status_code=status, headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where, field, position = locate(first, exc.body)
        message = f"{position}: {first.get('msg', 'invalid')}"
        if first.get("type") == "json_invalid":
            message += f" ({first.get('ctx', {}).get('error', 'not JSON')})"
        return _error(422, "INVALID_INPUT", message, field=field, location=where, detail=_mem0(request.url.path))

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, "HTTP_ERROR")
        return _error(exc.status_code, code, str(exc.detail), headers=dict(exc.headers or {}),
                      detail=_mem0(request.url.path))

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return _error(500, "INTERNAL", "internal error; see the server log with this request's id",
                      detail=_mem0(request.url.path))


def admin_json(settings: AdminMemorySettings) -> dict[str, Any]:
    data = asdict(settings)
    return {
        "retrieval": {to_camel(k): (list(v) if isinstance(v, tuple) else v) for k, v in data.items()
                      if not k.startswith("interleaving_")},
        "interleaving": {"strategy": settings.interleaving_strategy, "ratio": settings.interleaving_ratio},
    }


def create_app(memory: Memory, keys: KeyStore, settings: ServiceSettings | None = None) -> FastAPI:
    """The service over one ``Memory``; the caller owns (and closes) the memory and the key store."""
    install_record_factory()
    # FastAPI's own /docs page loads Swagger UI from a CDN: third-party code on the origin whose
    # /ui holds an API key (and a blank page offline). engram.service.docs serves it from a package.
    app = FastAPI(title="Engram", version="1", summary="Memory retrieval for LLM agents.",
                  description=API_CONVENTIONS, docs_url=None, redoc_url=None,
                  generate_unique_id_function=operation_id)
    app.state.service = Service(memory=memory, keys=keys, settings=settings or ServiceSettings())
    app.state.http_metrics = HttpMetrics()
    app.add_middleware(RequestMiddleware, settings=app.state.service.settings, metrics=app.state.http_metrics)
    _install_handlers(app)
    app.include_router(routes.router)
    app.include_router(retrieval.router)
    app.include_router(docs.router)
    app.include_router(mem0_platform.router)

    @app.get("/healthz", tags=["service"], response_model=HealthOut)
    def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/metrics", tags=["service"], response_class=PlainTextResponse)
    def metrics(svc: SvcDep) -> PlainTextResponse:
        """Prometheus text: HTTP requests by method, route and status, the process, then retrieval."""
        render = getattr(svc.memory.metrics, "to_prometheus", None)
        text = app.state.http_metrics.render() + (str(render()) if callable(render) else "")
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    @app.get("/v1/me", tags=["service"], response_model=KeyOut, responses=ERRORS)
    def me(key: LimitedKey) -> dict[str, Any]:
        """The calling key: which users it may touch, whether it is an admin key."""
        return key.to_dict()

    @app.get("/v1/admin/settings", tags=["admin"], response_model=AdminSettingsOut, responses=ERRORS)
    def get_settings(key: LimitedKey, svc: SvcDep) -> dict[str, Any]:
        check_admin(key)
        return admin_json(svc.admin or AdminMemorySettings())

    @app.get("/v1/admin/stats", tags=["admin"], response_model=StatsOut, responses=ERRORS,
             response_model_exclude_unset=True)
    def stats(key: LimitedKey, svc: SvcDep) -> dict[str, Any]:
        """Store-wide counts: an admin key for every user only, since they span every user."""
        check_admin(key, every_user=True)
        return dict(jsonable(svc.memory.stats()))

    @app.put("/v1/admin/settings", tags=["admin"], response_model=AdminSettingsOut, responses=ERRORS)
    def put_settings(body: AdminSettingsBody, key: LimitedKey,
                     svc: SvcDep) -> dict[str, Any]:
        """Change AdminMemorySettings within their ranges; later retrievals run with them."""
        check_admin(key)
        current = asdict(svc.admin or AdminMemorySettings())
        if body.retrieval is not None:
            current.update(body.retrieval.model_dump(exclude_none=True))
        if body.interleaving is not None:
            inter = body.interleaving.model_dump(exclude_none=True)
            current.update({f"interleaving_{k}": v for k, v in inter.items()})
        current["custom_redaction_patterns"] = tuple(current["custom_redaction_patterns"])
        new = AdminMemorySettings(**current)  # ConfigError (422) names the field and its range
        svc.set_admin(new)
        log.info("admin settings changed", extra={"key_id": key.id, "settings": json.dumps(admin_json(new))})
        return admin_json(new)

    @app.get("/ui", include_in_schema=False)
    def ui_index() -> Response:
        return _ui_file("index.html")

    @app.get("/ui/{name}", include_in_schema=False)
    def ui_asset(name: str) -> Response:
        return _ui_file(name)

    return app


def _ui_file(name: str) -> Response:
    media = _UI_FILES.get(name)
    if media is None:
        raise NotFound("no such file")
    body = resources.files("engram.service").joinpath("ui", name).read_bytes()
    return Response(body, media_type=media, headers={"Cache-Control": "no-cache"})
