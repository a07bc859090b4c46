"""The /v1 routes over the ``Memory`` facade; each checks the key may touch the user it names."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Query

from engram.config import AdminMemorySettings, RetrievalConfig
from engram.errors import ConfigError, MemoryNotFound, ValidationError
from engram.ingest.normalize import to_utc, validate_id
from engram.model import STATUSES, Filters
from engram.service.deps import (
    AuthKey,
    LimitedKey,
    Service,
    ServiceError,
    SvcDep,
    check_user,
    jsonable,
    rate_limited,
    record_json,
)
from engram.service.schemas import (
    ConfigOverrides,
    DocumentQuery,
    EntityIn,
    FeedbackRequest,
    IngestRequest,
    LinkIn,
    MemoryBatch,
    MemoryIn,
    MemoryPatch,
    RecallRequest,
    RetrieveRequest,
    to_camel,
)
from engram.service.uploads import Upload, ingest_uploads

__all__ = ["REQUEST_MAX_CANDIDATES", "effective_config", "router"]

log = logging.getLogger("engram.service")
router = APIRouter(prefix="/v1")
UserQ = Annotated[str, Query(alias="userId", min_length=1, max_length=256)]


def _require(svc: Service, name: str) -> Any:
    method = getattr(svc.memory, name, None)
    if method is None:
        raise ServiceError(501, "NOT_IMPLEMENTED", f"this Engram has no Memory.{name}")
    return method


@router.post("/memories", status_code=201, tags=["memories"])
def add_memory(body: MemoryIn, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, body.user_id)
    return record_json(svc.memory.add_many([body.model_dump(exclude_none=True)])[0])


@router.post("/memories/batch", status_code=201, tags=["memories"])
def add_memories(body: MemoryBatch, key: LimitedKey, svc: SvcDep) -> Any:
    for item in body.memories:
        check_user(key, item.user_id)
    records = svc.memory.add_many([m.model_dump(exclude_none=True) for m in body.memories])
    return {"memories": [record_json(r) for r in records]}


@router.get("/memories", tags=["memories"])
def list_memories(
    user_id: UserQ, key: LimitedKey, svc: SvcDep,
    kind: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Any:
    check_user(key, user_id)
    filters = Filters(kinds=(kind,)) if kind else None
    records = svc.memory.list(user_id=user_id, filters=filters, limit=limit, offset=offset)
    return {"memories": [record_json(r) for r in records]}


@router.get("/memories/{memory_id}", tags=["memories"])
def get_memory(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    return record_json(svc.memory.get(memory_id, user_id=user_id))


@router.patch("/memories/{memory_id}", tags=["memories"])
def update_memory(memory_id: str, body: MemoryPatch, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, body.user_id)
    changes = body.model_dump(exclude_none=True, exclude={"user_id"})
    return record_json(svc.memory.update(memory_id, user_id=body.user_id, **changes))


@router.delete("/memories/{memory_id}", tags=["memories"])
def delete_memory(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    if not svc.memory.delete(memory_id, user_id=user_id):
        raise MemoryNotFound(f"no memory {memory_id!r} for this user")
    return {"deleted": True, "id": memory_id}


@router.get("/memories/{memory_id}/links", tags=["memories"])
def memory_links(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    return {"links": [record_json(link) for link in svc.memory.links(memory_id, user_id=user_id)]}


@router.get("/memories/{memory_id}/history", tags=["memories"])
def memory_history(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    """One memory with its links, its document's versions and the earlier values of its fact."""
    check_user(key, user_id)
    memory = svc.memory
    record = memory.get(memory_id, user_id=user_id)
    versions: list[Any] = []
    doc_key = record.doc_key or record.metadata.get("doc_key")
    if record.kind == "document" and isinstance(doc_key, str):
        found = memory.list(user_id=user_id, filters=Filters(kinds=("document",), statuses=STATUSES,
                                                             metadata={"doc_key": doc_key}), limit=1000)
        versions = sorted(found, key=lambda r: (r.version or 0, r.recorded_at))
    history: list[Any] = []
    if record.subject and record.predicate:
        found = memory.list(user_id=user_id, filters=Filters(statuses=STATUSES, subject=record.subject,
                                                             predicate=record.predicate), limit=1000)
        history = sorted(found, key=lambda r: r.recorded_at)
    return {
        "memory": record_json(record),
        "links": [record_json(link) for link in memory.links(memory_id, user_id=user_id)],
        "versions": [record_json(r) for r in versions],
        "history": [record_json(r) for r in history],
    }


@router.post("/links", status_code=201, tags=["memories"])
def add_link(body: LinkIn, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, body.user_id)
    link = svc.memory.link(body.from_id, body.to_id, body.type, body.strength, user_id=body.user_id)
    return record_json(link)


@router.post("/entities", status_code=201, tags=["memories"])
def add_entity(body: EntityIn, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, body.user_id)
    entity = svc.memory.add_entity(
        body.entity_id, user_id=body.user_id, type=body.type, name=body.name, aliases=body.aliases
    )
    return record_json(entity)


@router.delete("/users/{user_id}", tags=["memories"])
def forget_user(user_id: str, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    return {"deleted": svc.memory.forget_user(user_id), "userId": user_id}


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
    )
    return filters


@router.post("/retrieve", tags=["retrieval"])
def retrieve(body: RetrieveRequest, key: AuthKey, svc: SvcDep) -> Any:
    """Seed 001: the payload of memories and metadata; ``prompt`` too when ``format`` is given.

    ``sessionId`` names the caller's chat session (logged); ``filters.sessionId`` restricts to one.
    """
    user = check_user(key, body.user_id)
    config = effective_config(svc, body.config, admin=key.admin)
    filters = _filters(body)
    now = to_utc(body.now, "now") if body.now else None
    wait = svc.wait(key)
    if wait > 0:
        # Seed 001 RATE_LIMITED policy: answer from cache when there is one, else a real 429.
        validate_id(user, "userId", svc.memory.limits)
        result = svc.memory.pipeline.retrieve(
            body.message, user_id=user, config=config, now=now, filters=filters, rate_limited=True
        )
        if not result.memories:
            raise rate_limited(wait)
    else:
        result = svc.memory.retrieve(
            body.message, user_id=user, config=config, now=now, filters=filters, use_memory=body.use_memory
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


@router.post("/recall", tags=["retrieval"])
def recall(body: RecallRequest, key: LimitedKey, svc: SvcDep) -> Any:
    """Seed 004 recall in every mode: relevant, recent, important, frequent, temporal, by_kind, linked."""
    user = check_user(key, body.user_id)
    if body.mode == "temporal":
        if not body.start or not body.end:
            raise ValidationError("start" if not body.start else "end", "temporal recall needs start and end")
        result = _require(svc, "recall_temporal")(
            to_utc(body.start, "start"), to_utc(body.end, "end"), user_id=user, topic=body.topic
        )
    elif body.mode == "by_kind":
        if not body.kind:
            raise ValidationError("kind", "by_kind recall needs a kind")
        result = _require(svc, "recall_by_kind")(body.kind, user_id=user, limit=body.max_results)
    elif body.mode == "linked":
        if not body.memory_id:
            raise ValidationError("memoryId", "linked recall needs a memoryId")
        result = _require(svc, "recall_linked")(
            body.memory_id, user_id=user, link_types=body.link_types, depth=body.depth
        )
    else:
        result = _require(svc, "recall")(
            body.query, user_id=user, mode=body.mode, max_results=body.max_results, kind=body.kind,
            min_salience=body.min_salience, project_id=body.project_id, include_archived=body.include_archived,
        )
    data = jsonable(result)
    return data if isinstance(data, dict) else {"memories": [record_json(r) for r in data]}


@router.post("/documents", status_code=201, tags=["documents"])
def ingest(body: IngestRequest, key: LimitedKey, svc: SvcDep) -> Any:
    """Ingest uploaded files as versioned documents; the same name is the same document.

    Each upload is read from the request itself (see ``engram.service.uploads``): no file is
    written, and the report names each upload as the request did, never by a server path.
    """
    user = check_user(key, body.user_id)
    uploads = [Upload(doc.name, doc.content) for doc in body.documents]
    report = ingest_uploads(svc.memory, uploads, user_id=user, tags=tuple(body.tags), topic=body.topic,
                            note=body.note, force=body.force)
    return jsonable(report)


@router.post("/documents/query", tags=["documents"])
def get_document(body: DocumentQuery, key: LimitedKey, svc: SvcDep) -> Any:
    user = check_user(key, body.user_id)
    as_of = to_utc(body.as_of, "asOf") if body.as_of else None
    document = _require(svc, "get_document")(
        body.meta, user_id=user, k=body.k, default_tags=body.default_tags, strategy=body.strategy, as_of=as_of
    )
    return jsonable(document)


@router.post("/feedback", tags=["retrieval"])
def feedback(body: FeedbackRequest, key: LimitedKey, svc: SvcDep) -> Any:
    user = check_user(key, body.user_id)
    result = _require(svc, "feedback")(body.retrieval_id, body.used_ids, user_id=user)
    return {"ok": True, "result": jsonable(result)}
