"""Retrieve exactly one ingested document from a description (the document lookup contract).

The pipeline is the contract's: required tags (``file_ingest`` + default tags + ``meta["tags"]``), a query
built from ``meta``, one vector search over ``kind="document"`` memories tagged ``file_ingest``, then
local AND tag filtering, ``as_of`` filtering and a version strategy, each filter falling back to the
full candidate set rather than failing. It runs as a preset of the retrieval engine
(:mod:`engram.retrieve.engine`): the vector search is its one source, the cosine its one signal, and the
version strategy its pick. One refinement: when ``meta`` names a file (``filename``
or ``file_name``, compared by its last path segment) or a ``path``, that is a filter the store
applies before ranking, not a preference among the top ``k``: "latest" means the latest version of
*that* file however many other documents the user has, every version of it is a candidate (the
search is read further until it ends), and a name that matches no document raises
:class:`DocumentNotFound` instead of returning another file.
Earlier versions are ``superseded`` (so general retrieval quotes current text); the search here
includes them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.context import context_of
from engram.errors import DocumentNotFound, ValidationError, short_repr
from engram.ingest.embed import embed_texts
from engram.ingest.files import FILE_INGEST
from engram.ingest.truth import list_all
from engram.model import Filters, MemoryRecord
from engram.retrieve.engine import Evidence, Raw, Source, Strategy, Weighting, run
from engram.retrieve.types import Scored
from engram.validate import check_utf8, choice, integer, to_utc, validate_id

if TYPE_CHECKING:
    from engram.context import ContextSource

__all__ = [
    "DEFAULT_QUERY",
    "STRATEGIES",
    "VERSION_STATUSES",
    "Document",
    "build_query",
    "document_versions",
    "get_default_user_id",
    "get_document",
    "required_tags",
    "select",
]

STRATEGIES = ("latest", "earliest", "longest", "score")
DEFAULT_QUERY = "document relevant to current request"
VERSION_STATUSES = ("active", "superseded")  # archived or deleted versions are withdrawn on purpose
_MIN_TIME = datetime.min.replace(tzinfo=UTC)
_MAX_TIME = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Document:
    """One version of one ingested file. ``score`` is the query's cosine (None when listed)."""

    content: str
    filename: str
    path: str
    version: int | None
    doc_key: str | None
    ingested_at: datetime
    score: float | None
    memory_id: str

    @classmethod
    def from_record(cls, record: MemoryRecord, score: float | None = None) -> Document:
        meta = record.metadata
        return cls(
            content=record.content,
            filename=str(meta.get("filename") or ""),
            path=str(meta.get("path") or ""),
            version=record.version if record.version is not None else _int_or_none(meta.get("version")),
            doc_key=record.doc_key or (str(meta["doc_key"]) if meta.get("doc_key") else None),
            # A document stored without ingested_at (not by ingest) still has a creation time.
            ingested_at=_ingested_at(record) or record.created_at,
            score=score,
            memory_id=record.id,
        )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- defaults -------------------------------------------------------------------------------------

def get_default_user_id() -> str:
    """The user namespace when none is given: ``$ENGRAM_USER``, else ``"default"``."""
    return os.environ.get("ENGRAM_USER") or "default"


# -- the pieces of the pipeline -------------------------------------------------------------------


def required_tags(meta: Mapping[str, Any], default_tags: Sequence[str] | None = None) -> list[str]:
    """``file_ingest``, then ``default_tags``, then ``meta["tags"]``; deduplicated, order kept.

    ``meta["tags"]`` is one tag or a list of tags; anything else (a number, a mapping, a list
    holding non-strings) is a ValidationError naming ``meta.tags``.
    """
    tags: list[str] = [FILE_INGEST, *_tag_list(default_tags, "default_tags")]
    tags.extend(_tag_list(meta.get("tags"), "meta.tags"))
    return list(dict.fromkeys(t for t in tags if t))


def _tag_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        return list(value)
    raise ValidationError(field, f"must be a string or a list of strings, got {short_repr(value)}")


_TEXT_KEYS = ("filename", "file_name", "path", "topic", "note", "provider", "query")


def _check_text(meta: Mapping[str, Any], tags: Sequence[str]) -> None:
    """Refuse text that cannot reach the store or the embedder (a lone surrogate), naming the field."""
    for key in _TEXT_KEYS:
        value = meta.get(key)
        if isinstance(value, str):
            check_utf8(value, f"meta.{key}")
    for tag in tags:
        check_utf8(tag, "meta.tags")


def _filename(meta: Mapping[str, Any]) -> str | None:
    name = meta.get("filename") or meta.get("file_name")
    return str(name) if name else None


def _basename(name: str) -> str:
    # Either separator: an uploaded name may come from a Windows client.
    return re.split(r"[/\\]", name)[-1]


def _file_filter(meta: Mapping[str, Any]) -> dict[str, str]:
    """The metadata equality filter a description's filename and path make (empty when neither)."""
    wanted: dict[str, str] = {}
    name = _filename(meta)
    if name:
        wanted["filename"] = _basename(name)
    path = meta.get("path")
    if path:
        wanted["path"] = str(path)
    return wanted


def build_query(meta: Mapping[str, Any]) -> str:
    """``meta["query"]`` if given, else filename, topic, note and "provided by {provider}"."""
    if meta.get("query"):
        return str(meta["query"])
    pieces = [_filename(meta), meta.get("topic"), meta.get("note")]
    if meta.get("provider"):
        pieces.append(f"provided by {meta['provider']}")
    return " ".join(str(p) for p in pieces if p) or DEFAULT_QUERY


def _ingested_at(record: MemoryRecord) -> datetime | None:
    value = record.metadata.get("ingested_at")
    if not value:
        return None
    try:
        return to_utc(value, "ingested_at")
    except ValidationError:
        return None  # unparsable counts as unknown, as in the spec's parse_iso


def _parse_as_of(as_of: str | datetime | None) -> datetime | None:
    if as_of is None:
        return None
    if isinstance(as_of, str) and not as_of.strip():
        raise ValidationError("as_of", "must be an ISO-8601 datetime with an offset, e.g. 2025-12-04T09:00:00+00:00")
    return to_utc(as_of, "as_of")


Candidate = tuple[MemoryRecord, float]
SIMILARITY = Weighting({"similarity": 1.0})


def _similarity(record: MemoryRecord, raw: Raw) -> Evidence:
    return Evidence({"similarity": raw["semantic"][record.id]})


def _keep_or_all(candidates: list[Candidate], kept: list[Candidate]) -> list[Candidate]:
    return kept or candidates


def select(
    candidates: Sequence[Candidate],
    *,
    tags: Sequence[str],
    filename: str | None = None,
    strategy: str = "latest",
    as_of: datetime | None = None,
) -> Candidate:
    """The spec's local stage: AND tag filter, filename preference, ``as_of``, then the strategy."""
    pool = list(candidates)
    if not pool:
        raise DocumentNotFound("no ingested document matches")
    required = set(tags)
    pool = _keep_or_all(pool, [c for c in pool if required.issubset(c[0].tags)])
    if filename:
        name = _basename(filename)
        pool = _keep_or_all(pool, [c for c in pool if c[0].metadata.get("filename") == name])
    if strategy == "latest" and as_of is not None:
        pool = _keep_or_all(pool, [c for c in pool if (t := _ingested_at(c[0])) is None or t <= as_of])
    # Versions ingested in one call share their time; the version number then orders them.
    if strategy == "latest":
        return max(pool, key=lambda c: (_ingested_at(c[0]) or _MIN_TIME, c[0].version or 0, len(c[0].content), c[1]))
    if strategy == "earliest":
        return min(pool, key=lambda c: (_ingested_at(c[0]) or _MAX_TIME, c[0].version or 0))
    if strategy == "longest":
        return max(pool, key=lambda c: (len(c[0].content), c[1]))
    if strategy == "score":
        return max(pool, key=lambda c: c[1])
    choice("strategy", strategy, STRATEGIES)
    raise AssertionError(f"strategy {strategy!r} is listed but not handled")


# -- the API --------------------------------------------------------------------------------------


def get_document(
    source: ContextSource,
    meta: Mapping[str, Any],
    *,
    user_id: str | None = None,
    k: int = 50,
    default_tags: Sequence[str] | None = None,
    strategy: str = "latest",
    as_of: str | datetime | None = None,
) -> Document:
    """The one document version ``meta`` describes, with its provenance (see the module doc)."""
    if not isinstance(meta, Mapping):
        raise ValidationError("meta", f"must be a mapping, got {type(meta).__name__}")
    choice("strategy", strategy, STRATEGIES)
    integer("k", k, 1, 10_000)
    memory = context_of(source)
    when = _parse_as_of(as_of)
    user = memory.user(user_id if user_id is not None else get_default_user_id())
    tags = required_tags(meta, default_tags)
    _check_text(meta, tags)
    vector = embed_texts(memory.embedder(), [build_query(meta)], as_query=True)[0]
    # The one search: only documents tagged file_ingest can ever be candidates, so a message that
    # merely mentions a filename is never returned as that file. (fetch then reads those hits' rows:
    # the Store protocol's searches return ids and scores only.)
    wanted = _file_filter(meta)
    filters = Filters(kinds=("document",), tags_any=(FILE_INGEST,), statuses=VERSION_STATUSES, metadata=wanted)
    # A named file's versions are all candidates: the search grows until it ends.
    search = Source("semantic", lambda n: memory.store.vector_search(user, vector, n, filters), k, grows=bool(wanted))

    def version(items: list[Scored]) -> list[Scored]:
        if not items:
            return []
        chosen, _ = select([(s.record, s.score) for s in items], tags=tags, filename=_filename(meta),
                           strategy=strategy, as_of=when)
        return [s for s in items if s.record.id == chosen.id]

    found = run(memory.store, user, Strategy(
        "document", (search,), filters, _similarity, SIMILARITY, k, order="source", pick=version,
    ))
    if not found and wanted:
        named = " and ".join(f"{key} {value!r}" for key, value in wanted.items())
        raise DocumentNotFound(f"no ingested document with {named} for this user")
    if not found:
        raise DocumentNotFound(f"no ingested document for user {user!r} (query {build_query(meta)!r})")
    record, score = found[0].record, found[0].score
    if not record.content:
        raise ValueError(f"document memory {record.id} has no content")
    return Document.from_record(record, score)


def document_versions(source: ContextSource, filename_or_doc_key: str, *, user_id: str) -> list[Document]:
    """Every stored version of a file (by doc_key, else by filename), ordered by version then time.

    A bare filename may name files from several directories; their versions are all listed.
    """
    memory = context_of(source)
    user = memory.user(user_id)
    name = validate_id(filename_or_doc_key, "filename_or_doc_key", memory.limits) or ""
    records: list[MemoryRecord] = []
    for key in ("doc_key", "filename"):
        filters = Filters(kinds=("document",), tags_all=(FILE_INGEST,), metadata={key: name}, statuses=VERSION_STATUSES)
        records.extend(list_all(memory.store, user, filters))
        if records:
            break
    documents = [Document.from_record(r) for r in records]
    return sorted(documents, key=lambda d: (d.version or 0, d.ingested_at, d.memory_id))
