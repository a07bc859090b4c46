"""Engram's values as JSON, both ways: the one place the HTTP service, the client and MCP share.

The wire spells names in camelCase and Python in snake_case; :func:`to_camel` and :func:`to_snake`
are the only conversions. A value goes out with :func:`encode` (``to_dict`` where a type has its
own wire shape, else its fields) and comes back with :func:`decode` into the same type ``Memory``
returns, so a caller cannot tell a remote answer from a local one by its type.

Which wire shape a type has is a compatibility contract, kept as it was: records, links, entities,
feedback and retrievals are camelCase; recall results, documents and ingest reports keep their
fields' snake_case names. Nested ``metadata`` is the caller's own data and is never renamed.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from datetime import date, datetime
from functools import cache
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from engram import errors
from engram.config import RetrievalConfig
from engram.documents import Document
from engram.errors import (
    EmbedderError,
    EmbedderMismatch,
    EngramError,
    Forbidden,
    NotFound,
    RateLimited,
    ServiceError,
    StoreError,
    StoreUnavailable,
    Unauthorized,
    ValidationError,
)
from engram.ingest.files import FileResult, IngestReport
from engram.model import Filters
from engram.recall_types import Recall, RecalledMemory
from engram.retrieve.types import MemoryEntry, Retrieval, RetrievalMetadata

__all__ = [
    "CONFIG_OVERRIDES",
    "HTTP_STATUS",
    "LIST_FILTERS",
    "REQUEST",
    "ConfigOverrides",
    "config_overrides",
    "decode",
    "decode_retrieval",
    "encode",
    "error_from",
    "error_json",
    "http_status",
    "jsonable",
    "list_params",
    "ranged",
    "record_json",
    "retrieve_filters",
    "schema",
    "to_camel",
    "to_snake",
]

T = TypeVar("T")
_UPPER = re.compile(r"(?<=[a-z0-9])([A-Z])")

#: The ``Filters`` fields a list request carries as query parameters (repeatable where a tuple).
LIST_FILTERS = ("kinds", "tags_all", "session_id", "project_id", "agent_id", "statuses", "created_after",
                "created_before", "where")
#: The ``Filters`` fields a retrieve request carries in its body (kinds and tags travel beside them).
RETRIEVE_FILTERS = ("session_id", "project_id", "agent_id", "tags_any", "created_after", "created_before",
                    "metadata", "where")
#: Types whose wire names are their snake_case field names (a compatibility contract; see above).
_SNAKE_TYPES: tuple[type, ...] = (Recall, RecalledMemory, Document, FileResult, IngestReport)
#: Wire names that are not a field's name spelled another way (``RecalledMemory.to_dict``).
_RENAMED: dict[type, dict[str, str]] = {RecalledMemory: {"memory": "record"}}


def to_camel(name: str) -> str:
    """``created_at`` -> ``createdAt``; dotted paths convert each part (``config.top_k``)."""
    return ".".join(_camel_part(part) for part in name.split("."))


def _camel_part(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def to_snake(name: str) -> str:
    """``createdAt`` -> ``created_at``; already snake names are unchanged."""
    return _UPPER.sub(lambda m: "_" + m.group(1).lower(), name)


#: How every request body reads: camelCase names (snake_case accepted too), no unknown fields.
REQUEST = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def schema(**extra: Any) -> Callable[[dict[str, Any]], None]:
    """A field's ``json_schema_extra`` putting ``extra`` (``minimum``, ``enum``...) in /openapi.json on
    its non-null member, so ``null`` stays allowed where the field is optional. Declared, not enforced:
    Engram's own checks refuse a value out of range with the message the Python API gives."""

    def apply(spec: dict[str, Any]) -> None:
        for member in spec.get("anyOf", [spec]):
            if member.get("type") != "null":
                member.update(extra)

    return apply


def ranged(low: float, high: float, **extra: Any) -> Callable[[dict[str, Any]], None]:
    """:func:`schema` with the range ``[low, high]``."""
    return schema(minimum=low, maximum=high, **extra)


_ADMIN_ONLY = "The range shown is an admin key's;"


class ConfigOverrides(BaseModel):
    """The ``RetrievalConfig`` fields a request may override; unset fields keep the service's settings."""

    model_config = REQUEST

    top_k: int | None = Field(default=None, json_schema_extra=ranged(1, 1000),
                              description=f"{_ADMIN_ONLY} 1-20 for other keys.")
    clip_sentences: int | None = Field(default=None, json_schema_extra=ranged(1, 50),
                                       description=f"{_ADMIN_ONLY} 1-5 for other keys.")
    max_tokens: int | None = Field(default=None, json_schema_extra=ranged(1, 1_000_000),
                                   description=f"{_ADMIN_ONLY} 100-3000 for other keys.")
    search_type: Literal["hybrid", "semantic", "keyword"] | None = None
    min_score: float | None = Field(default=None, json_schema_extra=ranged(0.0, 1.0))
    interleave: Literal["alternate", "score_first", "recency_first"] | None = None
    interleave_ratio: float | None = Field(default=None, json_schema_extra=ranged(0.0, 1.0))
    mmr_lambda: float | None = Field(default=None, json_schema_extra=ranged(0.0, 1.0))
    dedup: bool | None = None
    fusion: Literal["signals", "rrf"] | None = None
    weights: dict[str, float] | None = Field(
        default=None, max_length=16, description="Signal weights, each in [0, 1], by signal name."
    )
    candidate_limit: int | None = Field(
        default=None, json_schema_extra=ranged(1, 10_000),
        description=f"{_ADMIN_ONLY} at most 200 (or the service's own, if more) for other keys.",
    )
    keyword_weight: float | None = Field(default=None, json_schema_extra=ranged(0.0, 1.0))
    include_superseded: bool | None = None
    budget_rules: Literal["merged", "policy", "pipeline"] | None = None
    min_similarity: float | None = Field(default=None, json_schema_extra=ranged(-1.0, 1.0))
    timezone: str | None = Field(default=None, max_length=64, description=(
        "The IANA time zone whose days a question's 'today' and 'last week' are (Europe/Paris); "
        "default: the offset of now, or UTC."))


#: The ``RetrievalConfig`` fields a request may override (declared once, by the model above).
CONFIG_OVERRIDES = tuple(ConfigOverrides.model_fields)


# -- out ------------------------------------------------------------------------------------------
def jsonable(value: Any) -> Any:
    """Any Engram value as JSON types: ``to_dict`` where a type has one, else its fields."""
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
    """A record, link or entity with its top-level names in camelCase; nested metadata verbatim."""
    data = jsonable(value)
    if not isinstance(data, dict):
        return data
    return {to_camel(k): v for k, v in data.items()}


def encode(value: Any) -> Any:
    """``value`` in its wire shape (see the module docstring for which types are camelCase)."""
    if isinstance(value, _SNAKE_TYPES) or not dataclasses.is_dataclass(value):
        return jsonable(value)
    return record_json(value)


def config_overrides(config: RetrievalConfig | Mapping[str, Any]) -> dict[str, Any]:
    """A request's ``config`` object: the overridable fields of a config (or a mapping, either spelling)."""
    if isinstance(config, RetrievalConfig):
        values: dict[str, Any] = {name: getattr(config, name) for name in CONFIG_OVERRIDES}
        if config.weights is not None:
            values["weights"] = dict(config.weights)
    else:
        values = {to_snake(k): v for k, v in config.items()}
    return {to_camel(k): v for k, v in values.items() if v is not None}


def _filters(filters: Filters | Mapping[str, Any] | None, allowed: tuple[str, ...], where: str) -> dict[str, Any]:
    """The set fields of ``filters`` that the wire carries; any other set field is refused by name."""
    if filters is None:
        return {}
    if isinstance(filters, Filters):
        default = Filters()
        given = {f.name: getattr(filters, f.name) for f in dataclasses.fields(Filters)
                 if getattr(filters, f.name) != getattr(default, f.name)}
    else:
        given = {to_snake(str(k)): v for k, v in filters.items() if v is not None}
    for name in given:
        if name not in allowed:
            raise ValidationError(f"filters.{name}", f"is not supported over HTTP {where}; "
                                  f"supported: {', '.join(allowed)}")
    return {to_camel(k): jsonable(v) for k, v in given.items()}


def list_params(filters: Filters | Mapping[str, Any] | None) -> dict[str, Any]:
    """Query parameters of ``GET /v1/memories`` for ``filters`` (the plural names go singular)."""
    out = _filters(filters, LIST_FILTERS, "by list")
    if "where" in out:  # a query parameter holds one string: the filter travels as JSON
        out["where"] = json.dumps(out["where"], separators=(",", ":"))
    renamed = {"kinds": "kind", "tagsAll": "tag", "statuses": "status"}
    return {renamed.get(k, k): v for k, v in out.items()}


def retrieve_filters(filters: Filters | Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``filters`` object of ``POST /v1/retrieve``, plus ``kinds``/``tags`` when set."""
    out = _filters(filters, (*RETRIEVE_FILTERS, "kinds", "tags_all"), "by retrieve")
    if "tagsAll" in out:
        out["tags"] = out.pop("tagsAll")
    return out


# -- in -------------------------------------------------------------------------------------------
def decode(cls: type[T], data: Mapping[str, Any]) -> T:
    """An instance of the dataclass ``cls`` from its wire shape (camelCase or snake_case names).

    Times come back as aware datetimes, lists as tuples and nested dataclasses as themselves;
    names the type does not know (``prompt``, ``ok``) are left out.
    """
    hints = _hints(typing.cast(type, cls))
    renamed = _RENAMED.get(cls, {})
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = renamed.get(key) or to_snake(key)
        if name in hints:
            values[name] = _value(hints[name], value)
    return cls(**values)


@cache
def _hints(cls: type) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in typing.get_type_hints(cls).items() if k in names}


def _value(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _value(options[0], value) if len(options) == 1 else value
    if hint is datetime and isinstance(value, str):
        return datetime.fromisoformat(value)
    if origin is tuple and isinstance(value, list):
        (item, *_rest) = typing.get_args(hint) or (Any,)
        return tuple(_value(item, v) for v in value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
        return decode(hint, value)
    return value


def decode_retrieval(data: Mapping[str, Any], query: str, now: datetime | None = None) -> Retrieval:
    """A ``Retrieval`` from the retrieve payload (``MemoryEntry.to_dict`` nests provenance and signals)."""
    entries = []
    for m in data.get("memories", ()):
        provenance = m.get("provenance") or {}
        signals = m.get("signals") or {}
        entries.append(MemoryEntry(
            id=m["id"], content=m["content"], score=float(m["score"]), timestamp=m["timestamp"],
            session_id=m.get("sessionId"), message_id=m.get("messageId"), type=m["type"], role=m.get("role"),
            collection=provenance.get("collection", ""), search_type=provenance.get("searchType", ""),
            original_length=int(provenance.get("originalLength", 0)),
            was_redacted=bool(provenance.get("wasRedacted", False)),
            signals={k: float(v["value"]) for k, v in signals.items()},
            weights={k: float(v["weight"]) for k, v in signals.items()},
            reasons=tuple(m.get("reasons") or ()), metadata=dict(m.get("metadata") or {}), agent_id=m.get("agentId"),
        ))
    meta = dict(data["metadata"])
    meta["query_time_ms"] = meta.pop("queryTime", 0.0)
    return Retrieval(query=query, memories=tuple(entries), metadata=decode(RetrievalMetadata, meta), now=now)


# -- errors ---------------------------------------------------------------------------------------
#: The HTTP status of each error, most specific class first: the service answers with it and the
#: client, for a code it does not know, falls back on it.
HTTP_STATUS: tuple[tuple[type[EngramError], int], ...] = (
    (ValidationError, 422),
    (NotFound, 404),
    (RateLimited, 429),
    (Unauthorized, 401),
    (Forbidden, 403),
    (EmbedderMismatch, 409),
    (StoreUnavailable, 503),
    (EmbedderError, 503),
    (StoreError, 500),
)


def http_status(exc: EngramError) -> int:
    if isinstance(exc, ServiceError):
        return exc.status
    return next((status for cls, status in HTTP_STATUS if isinstance(exc, cls)), 400)


def error_json(exc: EngramError) -> dict[str, Any]:
    """``exc.to_dict()`` with its field (and the message's leading field) as the request spelled it."""
    error = exc.to_dict()
    field = error.get("field")
    if isinstance(field, str):
        wire = to_camel(field)
        message = str(error.get("message", ""))
        if message.startswith(field + ":"):
            message = wire + message[len(field):]
        error = {**error, "field": wire, "message": message}
    return error


@cache
def _by_code() -> dict[str, type[EngramError]]:
    found: dict[str, type[EngramError]] = {}
    for name in errors.__all__:
        cls = getattr(errors, name)
        found.setdefault(cls.code, cls)
    return found


def error_from(status: int, error: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> EngramError:
    """The ``engram.errors`` exception an error answer stands for (``{"code", "message", "field"?}``)."""
    code = str(error.get("code", f"HTTP_{status}"))
    message = str(error.get("message", ""))
    cls = _by_code().get(code)
    if cls is not None and issubclass(cls, ValidationError):
        name = str(error.get("field", "input"))
        # The service's message starts with the field, or with its position ("body.memories[0].content: ...").
        heads = (f"{name}: ", f"{error.get('location')}.{name}: ")
        head = next((h for h in heads if message.startswith(h)), "")
        return cls(name, message[len(head):])
    if cls is RateLimited:
        retry = (headers or {}).get("retry-after", "0")
        return RateLimited(message, retry_after=float(retry) if retry.isdigit() else 0.0)
    if cls is not None and cls is not ServiceError:
        return cls(message)
    fallback = {401: Unauthorized, 403: Forbidden}.get(status)
    if fallback is not None and code in ("HTTP_401", "HTTP_403"):
        return fallback(message)
    return ServiceError(message, code=code, status=status)
