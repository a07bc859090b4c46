"""The /v1 retrieval routes: retrieve (the payload and, on request, the prompt), recall in every
mode, and feedback; a request's config overrides are bounded here."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from engram.config import AdminMemorySettings, RetrievalConfig
from engram.errors import ConfigError, ValidationError
from engram.ingest.normalize import to_utc
from engram.metadata_filter import check
from engram.model import Filters
from engram.service.auth import ApiKey
from engram.service.contract import ERRORS, errors
from engram.service.deps import (
    AuthKey,
    LimitedKey,
    Service,
    SvcDep,
    UserParam,
    check_user,
    rate_limited,
    user_of,
)
from engram.service.responses import FeedbackOut, RecallOut, RetrievalOut
from engram.service.routes import OUT, require
from engram.service.schemas import ConfigOverrides, FeedbackRequest, RecallRequest, RetrieveRequest
from engram.validate import aware_time
from engram.wire import encode, record_json, to_camel

__all__ = ["REQUEST_MAX_CANDIDATES", "effective_config", "router"]

log = logging.getLogger("engram.service")
router = APIRouter(prefix="/v1", responses=ERRORS)

#: The most candidates per source a non-admin request may ask for (the default is 50); candidate
#: fetching and scoring grow with it, so it is bounded like the admin ranges.
REQUEST_MAX_CANDIDATES = 200
# Overrides that AdminMemorySettings also has: a non-admin request stays within their ranges.
_ADMIN_RANGED = ("top_k", "clip_sentences", "max_tokens", "min_score", "search_type")


def effective_config(svc: Service, overrides: ConfigOverrides | None, *, admin: bool = False) -> RetrievalConfig:
    """The service's config with a request's overrides.

    A non-admin key's overrides must stay within the admin ranges (topK 1-20, maxTokens 100-3000,
    clipSentences 1-5, the ranges of ``AdminMemorySettings``) and ask at most
    :data:`REQUEST_MAX_CANDIDATES` candidates: any key could otherwise ask for 500 memories or a
    900,000-token payload. Admin keys keep ``RetrievalConfig``'s own ranges.
    """
    base = svc.base_config
    if overrides is None:
        return base
    changes = overrides.model_dump(exclude_none=True)
    if not admin:
        _check_request_ranges(changes, base)
    try:
        return replace(base, **changes)
    except ConfigError as exc:
        # Name the field as the caller wrote it: config.topK, not top_k.
        head = exc.field.split(".", 1)
        name = "config." + ".".join([to_camel(head[0]), *head[1:]])
        raise ConfigError(name, str(exc).split(": ", 1)[-1]) from exc


def _check_request_ranges(changes: dict[str, Any], base: RetrievalConfig) -> None:
    ranged = {name: changes[name] for name in _ADMIN_RANGED if name in changes}
    try:
        # The admin settings are the one place the ranges are written; building one checks them.
        AdminMemorySettings(**ranged)
    except ConfigError as exc:
        name = "config." + exc.field.split(".", 1)[-1]
        message = str(exc).split(": ", 1)[-1]
        raise ConfigError(name, f"{message} (the admin range; only an admin key may go beyond it)") from exc
    limit = max(REQUEST_MAX_CANDIDATES, base.candidate_limit)
    wanted = changes.get("candidate_limit")
    if wanted is not None and not 1 <= wanted <= limit:
        raise ConfigError("config.candidateLimit", f"must be an integer in [1, {limit}], got {wanted}")


def _filters(body: RetrieveRequest) -> Filters:
    extra = body.filters
    filters = Filters(
        kinds=tuple(body.kinds) if body.kinds else None,
        tags_all=tuple(body.tags or ()),
        tags_any=tuple(extra.tags_any or ()) if extra else (),
        session_id=extra.session_id if extra else None,
        project_id=extra.project_id if extra else None,
        agent_id=extra.agent_id if extra else None,
        created_after=to_utc(extra.created_after, "filters.createdAfter") if extra and extra.created_after else None,
        created_before=to_utc(extra.created_before, "filters.createdBefore")
        if extra and extra.created_before else None,
        metadata=dict(extra.metadata or {}) if extra else {},
        where=check(extra.where, "filters.where") if extra and extra.where else None,
    )
    return filters


@router.post("/retrieve", tags=["retrieval"], response_model=RetrievalOut, **OUT)
async def retrieve(body: RetrieveRequest, key: AuthKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    """The retrieval payload (memories and metadata); ``prompt`` too when ``format`` is given.

    ``sessionId`` names the caller's chat session (logged); ``filters.sessionId`` restricts to one.
    A service started with ``--require-session`` searches only when ``sessionId`` is given (the
    retrieval policy's gating): without it the memories are empty, as for ``useMemory: false``.
    """
    # One thread hop for the whole retrieval: declared as a plain function, FastAPI would also hop
    # to a worker thread and back to check the answer against the response model.
    return await run_in_threadpool(_retrieve, body, key, svc, user_id)


def _retrieve(body: RetrieveRequest, key: ApiKey, svc: Service, user_id: str | None) -> Any:
    user = user_of(key, user_id, body.user_id)
    shared = [check_user(key, scope) for scope in body.also or ()]
    config = effective_config(svc, body.config, admin=key.admin)
    filters = _filters(body)
    now = aware_time(body.now, "now") if body.now else None  # its offset is the asker's calendar
    wait = svc.wait(key)
    if wait > 0 and shared:
        raise rate_limited(wait)  # a retrieval across scopes is never cached: nothing to answer from
    if wait > 0:
        # The retrieval policy for RATE_LIMITED: answer from cache when there is one, else a real 429.
        result = svc.memory.retrieve_cached(body.message, user_id=user, config=config, now=now, filters=filters)
        if not result.memories:
            raise rate_limited(wait)
    else:
        as_of = to_utc(body.as_of, "asOf") if body.as_of else None
        use_memory = body.use_memory and (body.session_id is not None or not svc.settings.require_session)
        result = svc.memory.retrieve(
            body.message, user_id=user, config=config, now=now, filters=filters, use_memory=use_memory,
            as_of=as_of, also=shared,
        )
    meta = result.metadata
    log.info(
        "[MEM:RETRIEVE] Retrieved %d of %d memories in %.1fms", meta.included_results, meta.total_results,
        meta.query_time_ms,
        extra={"user_id": user, "session_id": body.session_id, "retrieval_id": meta.retrieval_id,
               "cached": meta.cached, "error_code": (meta.error or {}).get("code")},
    )
    payload = result.to_dict()
    if body.format is not None:
        payload["prompt"] = result.to_prompt(style=body.format)
    return payload


@router.post("/recall", tags=["retrieval"], response_model=RecallOut, responses=errors(404, 501), **OUT)
def recall(body: RecallRequest, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    """Recall in every mode: relevant, recent, important, frequent, temporal, by_kind, linked."""
    user = user_of(key, user_id, body.user_id)
    if body.mode == "temporal":
        if not body.start or not body.end:
            raise ValidationError("start" if not body.start else "end", "temporal recall needs start and end")
        result = require(svc, "recall_temporal")(
            to_utc(body.start, "start"), to_utc(body.end, "end"), user_id=user, topic=body.topic
        )
    elif body.mode == "by_kind":
        if not body.kind:
            raise ValidationError("kind", "by_kind recall needs a kind")
        result = require(svc, "recall_by_kind")(body.kind, user_id=user, limit=body.max_results)
    elif body.mode == "linked":
        if not body.memory_id:
            raise ValidationError("memoryId", "linked recall needs a memoryId")
        result = require(svc, "recall_linked")(
            body.memory_id, user_id=user, link_types=body.link_types, depth=body.depth
        )
    else:
        result = require(svc, "recall")(
            body.query, user_id=user, mode=body.mode, max_results=body.max_results, kind=body.kind,
            min_salience=body.min_salience, project_id=body.project_id, include_archived=body.include_archived,
        )
    data = encode(result)
    return data if isinstance(data, dict) else {"memories": [record_json(r) for r in data]}


@router.post("/feedback", tags=["retrieval"], response_model=FeedbackOut, responses=errors(404, 501), **OUT)
def feedback(body: FeedbackRequest, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    user = user_of(key, user_id, body.user_id)
    result = require(svc, "feedback")(body.retrieval_id, body.used_ids, user_id=user)
    return {"ok": True, "result": encode(result)}
