"""Mem0's platform API on the Engram service, under ``/mem0``: code written for Mem0's hosted
``MemoryClient`` runs against Engram by changing its host and key::

    from mem0 import MemoryClient
    client = MemoryClient(api_key="egk_...", host="http://localhost:8000/mem0")

Each route answers one of the client's calls (``add``, ``search``, ``get_all``, ``get``, ``update``,
``delete``, ``delete_all``, ``history``) in Mem0's shapes, through :mod:`engram.mem0` over the
service's memory: the same calls and answers as ``engram.mem0.Memory`` in-process. The key is an
Engram key, sent as Mem0 sends its own (``Authorization: Token <key>``), and it must cover the
user, agent or run a call names (``engram.mem0.scope``: an agent's memories are the user
``agent:<id>``). A memory named by id that the key may not read is answered as one that does not
exist. Mem0's projects, organisations, webhooks, exports and profiles have no counterpart here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request

from engram.errors import MemoryNotFound, ServiceError, Unauthorized, ValidationError
from engram.mem0 import Memory as Mem0
from engram.mem0 import scoped
from engram.service.auth import ApiKey
from engram.service.contract import ERRORS
from engram.service.deps import SvcDep, check_user, spend
from engram.validate import integer

__all__ = ["router"]

# Mem0's contract, documented by Mem0 and in docs/from-mem0.md: not part of Engram's own /openapi.json.
router = APIRouter(prefix="/mem0", tags=["mem0"], responses=ERRORS, include_in_schema=False)
Payload = Annotated[dict[str, Any], Body(default_factory=dict)]
#: Options of Mem0's platform that change nothing Engram answers (how Mem0 queues or formats a call,
#: or its account's ids): accepted and left aside. Any other unknown option is refused by name.
_IGNORED = frozenset(("version", "output_format", "async_mode", "org_id", "project_id", "enable_graph", "infer",
                      "keyword_search", "fields"))
#: The page size of ``get_all`` when the call names none (Mem0's default).
_PAGE_SIZE = 100
_MAX_PAGE_SIZE = 1000
#: Pages reach at most this deep, and at most ``_MAX_LISTED`` memories in: the most a listing reads.
_MAX_PAGES = 10
_MAX_LISTED = 10_000


def _key(request: Request, svc: SvcDep) -> ApiKey:
    """The caller's key, sent as Mem0's client sends it (``Token``), as a bearer, or as ``X-API-Key``."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    given = token.strip() if scheme.casefold() in ("token", "bearer") else request.headers.get("x-api-key")
    key = svc.keys.authenticate(given)
    if key is None:
        raise Unauthorized("a valid API key is required (Authorization: Token <key>, as Mem0's client sends it)")
    return spend(svc, key, "this API key's rate limit is exceeded")


Key = Annotated[ApiKey, Depends(_key)]


@router.get("/v1/ping/")
def ping(key: Key) -> dict[str, Any]:
    """What Mem0's client asks when it starts: the key works. Engram has no organisations or projects;
    the client needs both named, so each is ``engram``."""
    return {"status": "ok", "message": "pong", "org_id": "engram", "project_id": "engram", "user_email": None}


@router.post("/v1/memories/")
@router.post("/v3/memories/add/")
def add(payload: Payload, key: Key, svc: SvcDep) -> dict[str, Any]:
    """``MemoryClient.add``: each message stored as it was said (no LLM runs), in Mem0's v1.1 answer."""
    args = _options(payload, ("messages", "user_id", "agent_id", "run_id", "metadata", "memory_type", "prompt",
                              "timestamp", "expiration_date"))
    messages = args.pop("messages", None)
    if messages is None:
        raise ValidationError("messages", "required: a text, a message or a list of messages")
    _check(key, None, args)
    return _mem0(svc).add(messages, **args)


@router.post("/v2/memories/search/")
@router.post("/v3/memories/search/")
def search(payload: Payload, key: Key, svc: SvcDep) -> dict[str, Any]:
    """``MemoryClient.search``: the scope's memories that matter for ``query``, best first."""
    args = _options(payload, ("query", "filters", "top_k", "limit", "threshold", "rerank", "explain", "user_id",
                              "agent_id", "run_id"))
    query = args.pop("query", None)
    if not isinstance(query, str):
        raise ValidationError("query", "required: the text to search for")
    if len(query) > svc.settings.max_query_chars:
        raise ValidationError("query", f"at most {svc.settings.max_query_chars} characters; got {len(query)}")
    args["filters"] = _check(key, args.get("filters"), args)
    return _mem0(svc).search(query, **args)


@router.post("/v2/memories/")
@router.post("/v3/memories/")
def get_all(payload: Payload, key: Key, svc: SvcDep, request: Request,
            page: Annotated[int | None, Query(ge=1, le=_MAX_PAGES)] = None,
            page_size: Annotated[int | None, Query(ge=1, le=_MAX_PAGE_SIZE)] = None) -> dict[str, Any]:
    """``MemoryClient.get_all``: the scope's memories, newest first, a page at a time (``count`` is
    how many this page holds; ``next`` is the next page's address while there are more). The page
    is the query's (Mem0's client sends it there, and ``next`` does), else the body's."""
    args = _options(payload, ("filters", "user_id", "agent_id", "run_id", "page", "page_size"))
    given_page, given_size = args.pop("page", 1), args.pop("page_size", _PAGE_SIZE)
    page = integer("page", given_page if page is None else page, 1, _MAX_PAGES)
    page_size = integer("page_size", given_size if page_size is None else page_size, 1, _MAX_PAGE_SIZE)
    if (page - 1) * page_size >= _MAX_LISTED:
        raise ValidationError("page", f"pages reach {_MAX_LISTED} memories at most; page {page} of {page_size} starts "
                                      "past them")
    args["filters"] = _check(key, args.get("filters"), args)
    found = _mem0(svc).get_all(**args, top_k=min(page * page_size + 1, _MAX_LISTED))["results"]
    results = found[(page - 1) * page_size: page * page_size]
    more = len(found) > page * page_size
    return {
        "count": len(results), "results": results,
        "next": str(request.url.include_query_params(page=page + 1, page_size=page_size)) if more else None,
        "previous": str(request.url.include_query_params(page=page - 1, page_size=page_size)) if page > 1 else None,
    }


@router.get("/v1/memories/{memory_id}/")
def get(memory_id: str, key: Key, svc: SvcDep) -> dict[str, Any]:
    """``MemoryClient.get``: one memory (404 when there is none, or the key may not read it)."""
    _owned(key, svc, memory_id)
    found = _mem0(svc).get(memory_id)
    if found is None:
        raise MemoryNotFound(f"no memory {memory_id!r}")
    return found


@router.put("/v1/memories/{memory_id}/")
def update(memory_id: str, payload: Payload, key: Key, svc: SvcDep) -> dict[str, Any]:
    """``MemoryClient.update``: new ``text``, ``metadata`` merged in, ``timestamp``, ``expiration_date``."""
    args = _options(payload, ("text", "data", "metadata", "timestamp", "expiration_date"))
    if "expiration_date" in payload and payload["expiration_date"] is None:
        args["expiration_date"] = None  # Mem0's way to clear the expiry
    _owned(key, svc, memory_id)
    return _mem0(svc).update(memory_id, **args)


@router.delete("/v1/memories/{memory_id}/")
def delete(memory_id: str, key: Key, svc: SvcDep) -> dict[str, Any]:
    """``MemoryClient.delete``: one memory."""
    _owned(key, svc, memory_id)
    return _mem0(svc).delete(memory_id)


@router.delete("/v1/memories/")
def delete_all(key: Key, svc: SvcDep, request: Request, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None) -> dict[str, Any]:
    """``MemoryClient.delete_all``: every memory of the user, agent or run named, and only with
    nothing else named: a narrower deletion Engram cannot make is refused, never widened."""
    ids = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    for name in request.query_params:
        if name not in ids and name not in _IGNORED:
            raise ValidationError(name, "is not an option Engram's Mem0 API honours in delete_all; "
                                        "see docs/from-mem0.md")
    _check(key, None, ids)
    return _mem0(svc).delete_all(**ids)


@router.get("/v1/memories/{memory_id}/history/")
def history(memory_id: str, key: Key, svc: SvcDep) -> list[dict[str, Any]]:
    """``MemoryClient.history``: the memory's changes, oldest first."""
    _owned(key, svc, memory_id)
    return _mem0(svc).history(memory_id)


@router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
def unsupported(path: str, key: Key) -> None:
    """Mem0's other platform calls (users, batches, exports, projects, webhooks, ...)."""
    raise ServiceError(f"Mem0's /{path} has no counterpart in Engram; see docs/from-mem0.md",
                       code="NOT_IMPLEMENTED", status=501)


def _mem0(svc: SvcDep) -> Mem0:
    """Mem0's calls over the service's memory, searching with the admin settings as /v1 routes do."""
    return Mem0.over(svc.memory, svc.base_config)


def _options(payload: Mapping[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    """The call's options Engram reads; Mem0's options that change nothing here are left aside,
    any other is refused by name (422)."""
    out: dict[str, Any] = {}
    for name, value in payload.items():
        if name in known:
            if value is not None:
                out[name] = value
        elif name not in _IGNORED and value is not None:
            raise ValidationError(name, "is not an option Engram's Mem0 API honours; see docs/from-mem0.md")
    return out


def _check(key: ApiKey, filters: Any, args: Mapping[str, Any]) -> Any:
    """The call's filters with Mem0's ``{"AND": [{"user_id": ...}, ...]}`` scope flattened, after
    checking that the key covers the scope they and ``args`` name (403 otherwise)."""
    flat = _flattened(filters)
    user, *_ = scoped(flat, args.get("user_id"), args.get("agent_id"), args.get("run_id"))
    check_user(key, user)
    return flat


def _flattened(filters: Any) -> Any:
    """Mem0's platform wraps even one condition in ``AND``: its plain scope equalities are lifted
    to the top (where ``engram.mem0`` reads a scope), the rest stays an ``AND``."""
    if not isinstance(filters, Mapping) or set(filters) != {"AND"} or not isinstance(filters["AND"], list):
        return filters
    top: dict[str, Any] = {}
    rest: list[Any] = []
    for condition in filters["AND"]:
        if (isinstance(condition, Mapping) and len(condition) == 1
                and next(iter(condition)) in ("user_id", "agent_id", "run_id")
                and isinstance(next(iter(condition.values())), str)
                and next(iter(condition)) not in top):
            top.update(condition)
        else:
            rest.append(condition)
    if rest:
        top["AND"] = rest
    return top


def _owned(key: ApiKey, svc: SvcDep, memory_id: str) -> None:
    """404 for a memory the key may not read, as for one that does not exist: a key learns nothing
    of another user's memories, not even that an id is taken."""
    try:
        owner = svc.memory.get(memory_id).user_id
    except MemoryNotFound:
        raise MemoryNotFound(f"no memory {memory_id!r}") from None
    if not key.may_access(owner):
        raise MemoryNotFound(f"no memory {memory_id!r}")
