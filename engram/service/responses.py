"""The HTTP answers' schemas: one pydantic model per response, so /openapi.json describes them.

Models of Engram's own value types are derived from the dataclasses (their fields, in their wire
spelling from ``engram.wire``), not written out again; only the retrieval payload, whose wire shape
nests provenance and signals, is declared by hand. Times are strings: the wire carries
``datetime.isoformat()`` as it is, which a datetime field would rewrite.

Routes answer with ``response_model_exclude_unset``: keys a value leaves out (``messageId`` of a
memory without one) stay out instead of becoming nulls.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from engram.documents import Document
from engram.feedback import FeedbackResult
from engram.ingest.files import FileResult, IngestReport
from engram.model import Entity, HistoryEvent, Link, MemoryRecord
from engram.retrieve.types import RetrievalMetadata
from engram.service.auth import ApiKey
from engram.wire import to_camel

__all__ = [
    "AdminSettingsOut",
    "DeletedOut",
    "DocumentOut",
    "EntityOut",
    "FeedbackOut",
    "ForgottenOut",
    "HealthOut",
    "HistoryEventOut",
    "HistoryOut",
    "IngestReportOut",
    "KeyOut",
    "LinkOut",
    "LinksOut",
    "MemoriesOut",
    "MemoryOut",
    "RecallOut",
    "ResetOut",
    "RetrievalOut",
    "VersionsOut",
    "model_of",
]

_CAMEL = ConfigDict(alias_generator=to_camel, populate_by_name=True)


def _field_type(hint: Any, camel: bool) -> Any:
    if hint is datetime:
        return str
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_field_type(a, camel) for a in typing.get_args(hint))]  # noqa: UP007
    if origin is tuple:
        (item, *_rest) = typing.get_args(hint)
        return list[_field_type(item, camel)]  # type: ignore[misc]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return model_of(hint, camel=camel)
    if isinstance(hint, type) and issubclass(hint, float):
        return float | None  # NaN goes out as null
    return hint


_MODELS: dict[tuple[type, bool], type[BaseModel]] = {}


def model_of(
    cls: type, *, camel: bool, aliases: dict[str, str] | None = None, name: str | None = None,
    required: tuple[str, ...] = (),
) -> type[BaseModel]:
    """A response model with the fields of the dataclass ``cls`` (camelCase on the wire if ``camel``;
    ``aliases`` for wire names that are not the field's name respelled; ``required`` for fields every
    answer has, which a generated client needs to tell this model from another in a union)."""
    found = _MODELS.get((cls, camel))
    if found is None:
        hints = typing.get_type_hints(cls)
        named = aliases or {}
        definitions: dict[str, Any] = {
            f.name: (_field_type(hints[f.name], camel),
                     Field(... if f.name in required else None, alias=named.get(f.name)))
            for f in dataclasses.fields(cls)
        }
        found = create_model(
            name or cls.__name__ + "Out", __config__=_CAMEL if camel else None, __doc__=cls.__doc__, **definitions
        )
        _MODELS[(cls, camel)] = found
    return found


#: ``POST /v1/memories`` answers one of these or ``MemoriesOut``: the required fields tell them apart.
MemoryOut = model_of(MemoryRecord, camel=True, required=("id", "user_id", "content", "kind", "status", "created_at"))
LinkOut = model_of(Link, camel=True)
EntityOut = model_of(Entity, camel=True)
DocumentOut = model_of(Document, camel=False)
FileResultOut = model_of(FileResult, camel=False)
IngestReportOut = model_of(IngestReport, camel=False)
FeedbackResultOut = model_of(FeedbackResult, camel=True)
HistoryEventOut = model_of(HistoryEvent, camel=True)


class _Out(BaseModel):
    model_config = _CAMEL


class MemoriesOut(_Out):
    memories: list[MemoryOut]  # type: ignore[valid-type]


class LinksOut(_Out):
    links: list[LinkOut]  # type: ignore[valid-type]


class DeletedOut(_Out):
    deleted: bool
    id: str


class ForgottenOut(_Out):
    deleted: int
    user_id: str


class ResetOut(_Out):
    deleted: int


class HistoryOut(_Out):
    """A memory's audit log (``events``, oldest first: what ``history`` returns) and, while the memory
    exists, the memory with its links, its document's versions (oldest first) and its fact's earlier
    values (left out once it is deleted)."""

    events: list[HistoryEventOut]  # type: ignore[valid-type]
    memory: MemoryOut | None = None  # type: ignore[valid-type]
    links: list[LinkOut] = []  # type: ignore[valid-type]
    versions: list[DocumentOut] = []  # type: ignore[valid-type]
    history: list[MemoryOut] = []  # type: ignore[valid-type]


class RecalledOut(BaseModel):
    """A recalled memory: the record (snake_case names) as stored before this recall, a score and why."""

    memory: model_of(MemoryRecord, camel=False, name="RecalledRecordOut")  # type: ignore[valid-type]
    score: float
    reason: str


class RecallOut(BaseModel):
    """A recall's memories, best first; each ``memory`` is the record with snake_case names."""

    mode: str
    count: int
    duration_ms: float
    memories: list[RecalledOut]


class VersionsOut(_Out):
    """Every stored version of one document, oldest first, a page at a time."""

    versions: list[DocumentOut]  # type: ignore[valid-type]


class FeedbackOut(_Out):
    ok: bool
    result: FeedbackResultOut  # type: ignore[valid-type]


class SignalOut(_Out):
    value: float
    weight: float


class ProvenanceOut(_Out):
    collection: str
    search_type: str
    original_length: int
    was_redacted: bool


class MemoryEntryOut(_Out):
    """One retrieved memory: its text as it goes into the prompt, its score and why it was chosen."""

    id: str
    content: str
    score: float
    timestamp: str
    session_id: str | None = None
    message_id: str | None = None
    type: str
    role: str | None = None
    provenance: ProvenanceOut
    signals: dict[str, SignalOut]
    reasons: list[str]
    metadata: dict[str, Any] = Field(default_factory=dict, description="The memory's own metadata, verbatim.")
    agent_id: str | None = None


#: ``RetrievalMetadata.to_dict`` spells ``query_time_ms`` as ``queryTime``.
RetrievalMetadataOut = model_of(RetrievalMetadata, camel=True, aliases={"query_time_ms": "queryTime"})


class RetrievalOut(_Out):
    """The retrieval payload; ``prompt`` when the request asked for a ``format``."""

    memories: list[MemoryEntryOut]
    metadata: RetrievalMetadataOut  # type: ignore[valid-type]
    presentation_order: list[str] = Field(
        default_factory=list,
        description="The memories' ids in the order the interleave setting presents them, as the prompt lists them; "
                    "memories stay in rank order.",
    )
    prompt: str | None = None


class HealthOut(_Out):
    status: str


KeyOut = model_of(ApiKey, camel=True)


class AdminRetrievalOut(_Out):
    top_k: int
    clip_sentences: int
    max_tokens: int
    search_type: str
    min_score: float
    enable_redaction: bool
    custom_redaction_patterns: list[str]


class AdminInterleavingOut(_Out):
    strategy: str
    ratio: float | None


class AdminSettingsOut(_Out):
    retrieval: AdminRetrievalOut
    interleaving: AdminInterleavingOut


class StatsOut(BaseModel):
    """Store-wide counts (``Memory.stats``), snake_case as the store gives them."""

    backend: str = Field(json_schema_extra={"enum": ["sqlite", "postgres"]})
    path: str | None = Field(default=None, description="The SQLite file (sqlite).")
    url: str | None = Field(default=None, description="The server's URL without its password (postgres).")
    memories: int
    users: int
    by_kind: dict[str, int]
    model_id: str | None = None
    bytes: int | None = None
