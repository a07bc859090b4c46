"""The /v1 memory and document routes over the ``Memory`` facade; each checks the key may touch
the user it names. Retrieval, recall and feedback live in ``engram.service.retrieval``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from typing import Annotated, Any

from fastapi import APIRouter, Query

from engram.errors import MemoryNotFound, ServiceError, ValidationError
from engram.ingest.normalize import to_utc
from engram.metadata_filter import check
from engram.model import STATUSES, Filters, MemoryRecord
from engram.service.contract import ERRORS, errors
from engram.service.deps import LimitedKey, Service, SvcDep, UserParam, UserQ, check_admin, check_user, user_of
from engram.service.responses import (
    DeletedOut,
    DocumentOut,
    EntityOut,
    ForgottenOut,
    HistoryOut,
    IngestReportOut,
    LinkOut,
    LinksOut,
    MemoriesOut,
    MemoryOut,
    ResetOut,
    VersionsOut,
)
from engram.service.schemas import (
    AddRequest,
    DocumentQuery,
    EntityIn,
    IngestRequest,
    LinkIn,
    MemoryBatch,
    MemoryPatch,
)
from engram.service.uploads import Upload, ingest_uploads
from engram.wire import encode, record_json

__all__ = ["require", "router"]

router = APIRouter(prefix="/v1", responses=ERRORS)
#: Routes that look a memory, link or document up by id: a 404 when this user has none.
FOUND = errors(404)
#: Routes over a facade method an older Engram may lack (``require``): also a 501.
FOUND_OR_MISSING = errors(404, 501)
Texts = Annotated[list[str] | None, Query(max_length=100)]
Text = Annotated[str | None, Query(max_length=256)]
#: Answers leave out what a value leaves out (see ``engram.service.responses``).
OUT: dict[str, Any] = {"response_model_exclude_unset": True}
PAGE = 1000
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def require(svc: Service, name: str) -> Any:
    method = getattr(svc.memory, name, None)
    if method is None:
        raise ServiceError(f"this Engram has no Memory.{name}", code="NOT_IMPLEMENTED", status=501)
    return method


@router.post("/memories", status_code=201, tags=["memories"], response_model=MemoryOut | MemoriesOut, **OUT)
def add_memory(body: AddRequest, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    """One memory from ``content`` (answers the record), or one per chat message of ``messages``
    (answers ``{"memories": [...]}`` in the conversation's order)."""
    user = user_of(key, user_id, body.user_id)
    fields = body.model_dump(exclude_none=True, exclude={"user_id", "content", "messages"})
    if (body.content is None) == (body.messages is None):
        raise ValidationError("content", "give either content (one memory) or messages (a conversation)")
    if body.messages is not None:
        messages = [m.model_dump(exclude_none=True) for m in body.messages]
        return {"memories": [record_json(r) for r in svc.memory.add(messages, user_id=user, **fields)]}
    return record_json(svc.memory.add(body.content or "", user_id=user, **fields))


@router.post("/memories/batch", status_code=201, tags=["memories"], response_model=MemoriesOut, **OUT)
def add_memories(body: MemoryBatch, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    """Many memories in one transaction. The ``userId`` query parameter names the user of every item
    that names none; an item's own ``userId`` must then be the same."""
    items = []
    for i, item in enumerate(body.memories):
        user = user_of(key, user_id, item.user_id, field=f"memories[{i}].userId")
        items.append({**item.model_dump(exclude_none=True), "user_id": user})
    # add_many names the item of a refused field itself ("memories[18].content"), as the request does.
    records = svc.memory.add_many(items)
    return {"memories": [record_json(r) for r in records]}


@router.get("/memories", tags=["memories"], response_model=MemoriesOut, **OUT)
def list_memories(
    user_id: UserQ, key: LimitedKey, svc: SvcDep,
    kind: Texts = None, tag: Texts = None, status: Texts = None,
    session_id: Annotated[Text, Query(alias="sessionId")] = None,
    project_id: Annotated[Text, Query(alias="projectId")] = None,
    agent_id: Annotated[Text, Query(alias="agentId")] = None,
    created_after: Annotated[str | None, Query(alias="createdAfter", max_length=64)] = None,
    created_before: Annotated[str | None, Query(alias="createdBefore", max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    where: Annotated[str | None, Query(max_length=20_000, description=(
        "A filter in Mem0's language as JSON, applied in the store's query (as filters.where of "
        "/v1/retrieve)"))] = None,
) -> Any:
    """A page of one user's memories, newest first, with the filters of ``engram list``: repeat ``kind``
    (any of them), ``tag`` (all of them) and ``status`` (``all`` is every status; default active);
    ``createdAfter``/``createdBefore`` take ISO-8601 times with an offset, or a date for a whole UTC day;
    ``where`` a filter in Mem0's language, as JSON."""
    check_user(key, user_id)
    filters: dict[str, Any] = {
        "kinds": kind, "tags_all": tag, "statuses": _statuses(status), "session_id": session_id,
        "project_id": project_id, "agent_id": agent_id,
        "created_after": _bound(created_after, "createdAfter"),
        "created_before": _bound(created_before, "createdBefore", end_of_day=True),
        "where": _where(where),
    }
    given = {k: v for k, v in filters.items() if v is not None}
    records = svc.memory.list(user_id=user_id, filters=given or None, limit=limit, offset=offset)
    return {"memories": [record_json(r) for r in records]}


def _where(value: str | None) -> Mapping[str, Any] | None:
    """The ``where`` query parameter: a Mem0 filter as JSON; a ValidationError naming what is wrong."""
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise ValidationError("where", f"must be a JSON object (a filter in Mem0's language): {exc}") from None
    return check(parsed, "where")


def _bound(value: str | None, field: str, *, end_of_day: bool = False) -> datetime | None:
    """A time bound of the list: ISO-8601 with an offset, or a bare date (``2026-11-10``) naming that
    UTC day, from its start or (``createdBefore``) to its end, so it includes the day as ``engram list
    --until`` does. A server has no local time zone of the caller's to read a date in."""
    if not value:
        return None
    if _DATE.match(value):
        try:
            day = date.fromisoformat(value)
        except ValueError:
            raise ValidationError(field, f"not a date: {value!r}") from None
        return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)
    return to_utc(value, field)


def _statuses(given: list[str] | None) -> tuple[str, ...] | None:
    """``all`` stands for every status, so a browser can show superseded and archived memories too."""
    if given is None:
        return None
    return STATUSES if "all" in given else tuple(given)


@router.get("/memories/{memory_id}", tags=["memories"], response_model=MemoryOut, responses=FOUND, **OUT)
def get_memory(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    return record_json(svc.memory.get(memory_id, user_id=user_id))


@router.patch("/memories/{memory_id}", tags=["memories"], response_model=MemoryOut, responses=FOUND, **OUT)
def update_memory(memory_id: str, body: MemoryPatch, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    """Change the given fields of a memory; the others keep their values."""
    user = user_of(key, user_id, body.user_id)
    changes = body.model_dump(exclude_none=True, exclude={"user_id"})
    return record_json(svc.memory.update(memory_id, user_id=user, **changes))


@router.delete("/memories/{memory_id}", tags=["memories"], response_model=DeletedOut, responses=FOUND)
def delete_memory(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    if not svc.memory.delete(memory_id, user_id=user_id):
        raise MemoryNotFound(f"no memory {memory_id!r} for this user")
    return {"deleted": True, "id": memory_id}


@router.get("/memories/{memory_id}/links", tags=["memories"], response_model=LinksOut, responses=FOUND, **OUT)
def memory_links(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    return {"links": [record_json(link) for link in svc.memory.links(memory_id, user_id=user_id)]}


@router.get("/memories/{memory_id}/history", tags=["memories"], response_model=HistoryOut, responses=FOUND,
            **OUT)
def memory_history(memory_id: str, user_id: UserQ, key: LimitedKey, svc: SvcDep) -> Any:
    """The memory's audit log (404 if there is neither a log nor a memory), and while the memory
    exists, the memory with its links, its document's versions and the earlier values of its fact."""
    check_user(key, user_id)
    memory = svc.memory
    events = {"events": [record_json(e) for e in memory.history(memory_id, user_id=user_id)]}
    try:
        record = memory.get(memory_id, user_id=user_id)
    except MemoryNotFound:
        return events  # deleted: its log stays (without text), the rest is gone
    doc_key = record.doc_key or record.metadata.get("doc_key")
    versions = []
    if record.kind == "document" and isinstance(doc_key, str):
        versions = memory.document_versions(doc_key, user_id=user_id)
    history: list[MemoryRecord] = []
    if record.subject and record.predicate:
        every = Filters(statuses=STATUSES, subject=record.subject, predicate=record.predicate)
        while page := memory.list(user_id=user_id, filters=every, limit=PAGE, offset=len(history)):
            history.extend(page)
        history.sort(key=lambda r: r.recorded_at)
    return {
        **events,
        "memory": record_json(record),
        "links": [record_json(link) for link in memory.links(memory_id, user_id=user_id)],
        "versions": [encode(d) for d in versions],
        "history": [record_json(r) for r in history],
    }


@router.post("/links", status_code=201, tags=["memories"], response_model=LinkOut, responses=FOUND, **OUT)
def add_link(body: LinkIn, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    user = user_of(key, user_id, body.user_id)
    link = svc.memory.link(body.from_id, body.to_id, body.type, body.strength, user_id=user)
    return record_json(link)


@router.post("/entities", status_code=201, tags=["memories"], response_model=EntityOut, **OUT)
def add_entity(body: EntityIn, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    user = user_of(key, user_id, body.user_id)
    entity = svc.memory.add_entity(body.entity_id, user_id=user, type=body.type, name=body.name, aliases=body.aliases)
    return record_json(entity)


@router.delete("/users/{user_id}", tags=["memories"], response_model=ForgottenOut)
def forget_user(user_id: str, key: LimitedKey, svc: SvcDep) -> Any:
    check_user(key, user_id)
    return {"deleted": svc.memory.forget_user(user_id), "userId": user_id}


@router.post("/admin/reset", tags=["admin"], response_model=ResetOut)
def reset(key: LimitedKey, svc: SvcDep) -> Any:
    """DESTRUCTIVE: forget every user of the store (``Memory.reset``); an admin key for every user only.
    API keys stay."""
    check_admin(key, every_user=True)
    return {"deleted": svc.memory.reset()}


@router.post("/documents", status_code=201, tags=["documents"], response_model=IngestReportOut, **OUT)
def ingest(body: IngestRequest, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    """Ingest uploaded files as versioned documents; the same name is the same document.

    Each upload is read from the request itself (see ``engram.service.uploads``): no file is
    written, and the report names each upload as the request did, never by a server path.
    """
    user = user_of(key, user_id, body.user_id)
    uploads = [Upload(doc.name, doc.content) for doc in body.documents]
    report = ingest_uploads(svc.memory, uploads, user_id=user, tags=tuple(body.tags), topic=body.topic,
                            note=body.note, force=body.force)
    return encode(report)


@router.post("/documents/query", tags=["documents"], response_model=DocumentOut, responses=FOUND_OR_MISSING,
             **OUT)
def get_document(body: DocumentQuery, key: LimitedKey, svc: SvcDep, user_id: UserParam = None) -> Any:
    """Exactly one version of one document: latest, earliest, longest or best scored."""
    user = user_of(key, user_id, body.user_id)
    as_of = to_utc(body.as_of, "asOf") if body.as_of else None
    document = require(svc, "get_document")(
        body.meta, user_id=user, k=body.k, default_tags=body.default_tags, strategy=body.strategy, as_of=as_of
    )
    return encode(document)


@router.get("/documents/versions", tags=["documents"], response_model=VersionsOut, **OUT)
def document_versions(
    user_id: UserQ, key: LimitedKey, svc: SvcDep, name: Annotated[str, Query(min_length=1, max_length=256)],
) -> Any:
    """Every stored version of a document (by doc key, else by file name), oldest first."""
    user = check_user(key, user_id)
    return {"versions": [encode(d) for d in svc.memory.document_versions(name, user_id=user)]}
