"""Ingest files as versioned document memories plus retrievable chunks (the document lookup's ``memory_ingest``).

Each ingest of a changed file stores one ``document`` memory holding the full text (tagged
``file_ingest``, the invariant document retrieval relies on) and its ``chunk`` memories linked
``part_of`` it, so the general ``retrieve()`` finds passages while ``get_document`` finds whole files.
Earlier versions are all kept, marked ``superseded`` (documents and chunks, ``valid_to`` set, the new
document ``supersedes`` the old) so general retrieval quotes current text unless asked for history
(``include_superseded`` or ``as_of``); document retrieval still sees every version.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.context import context_of
from engram.errors import ValidationError
from engram.ingest import truth, writer
from engram.ingest.normalize import content_hash, normalize, to_utc
from engram.ingest.sources import (
    CHUNK_MAX,
    CHUNK_MIN,
    FILE_INGEST,
    STATUSES_OF_FILES,
    SUPPORTED,
    FileFailure,
    FileResult,
    chunk_spans,
    discover,
    doc_key_for,
    html_to_text,
    read_document,
)
from engram.model import STATUSES, Filters, Link, new_id

if TYPE_CHECKING:
    from engram.context import ContextSource

# Finding, reading and chunking live in engram.ingest.sources; their names stay importable from here.
__all__ = [
    "CHUNK_MAX", "CHUNK_MIN", "FILE_INGEST", "STATUSES_OF_FILES", "SUPPORTED", "FileResult", "IngestReport",
    "chunk_spans", "discover", "doc_key_for", "html_to_text", "ingest", "read_document",
]

# Flushing many files' records in one add_many lets the embedder sort and batch across files, which
# is where ingest throughput comes from; the character bound keeps memory use flat for big files.
FLUSH_RECORDS, FLUSH_CHARS = 1024, 4_000_000


@dataclass(frozen=True, slots=True)
class IngestReport:
    files: tuple[FileResult, ...] = ()
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    @property
    def documents_added(self) -> int:
        return sum(1 for f in self.files if f.status in ("new", "changed", "forced"))

    @property
    def chunks_added(self) -> int:
        return sum(f.chunks for f in self.files if f.status in ("new", "changed", "forced"))


# -- ingest ---------------------------------------------------------------------------------------


# One file waiting for its batch: its result, its records, the chunk ids to link part_of it, and the
# id of the version it replaces.
_Pending = tuple[FileResult, list[dict[str, Any]], list[str], str | None]


def _write_pending(source: ContextSource, user: str, pending: Sequence[_Pending], when: datetime) -> None:
    """Store a batch of files: their records, each chunk linked part_of its document, and each new
    version superseding the one before (directory ingest and HTTP uploads both end here).

    The links go straight to the store: both ends were inserted just above, so the existence checks
    of ``Memory.link`` (two reads per link) would only cost time; the caches are invalidated once."""
    context = context_of(source)
    writer.add_many(context, [item for _, items, _, _ in pending for item in items])
    store = context.store
    for result, _, chunk_ids, previous_id in pending:
        document_id = result.memory_id or ""
        for chunk_id in chunk_ids:
            store.add_link(user, Link(chunk_id, document_id, "part_of", 1.0))
        if previous_id is not None:
            truth.supersede_document(
                store, user, document_id=document_id, doc_key=result.doc_key or "", version=result.version or 0,
                previous_id=previous_id, when=when,
            )
    context.wrote(user)


def _latest(source: ContextSource, user_id: str, doc_key: str) -> tuple[int, str, str] | None:
    """(version, content hash, id) of a file's newest version, whatever its status."""
    context = context_of(source)
    filters = Filters(kinds=("document",), statuses=STATUSES, metadata={"doc_key": doc_key})
    versions = truth.list_all(context.store, user_id, filters)
    best = max(versions, key=lambda r: r.version or 0, default=None)
    return (best.version or 0, best.content_hash, best.id) if best is not None else None


def _file_items(text: str, user: str, tags: list[str], when: datetime, base: dict[str, Any],
                doc_meta: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The document record and its chunk records (with ids, so links can follow the insert)."""
    doc_id, spans = new_id(), chunk_spans(text)
    common = {"user_id": user, "created_at": when, "doc_key": base["doc_key"], "version": base["version"]}
    items: list[dict[str, Any]] = [{
        **common, "id": doc_id, "content": text, "kind": "document", "tags": [FILE_INGEST, *tags],
        "metadata": {"kind": FILE_INGEST, **base, **doc_meta, "chunks": len(spans)},
    }]
    for index, (start, end) in enumerate(spans):
        items.append({
            **common, "id": new_id(), "content": text[start:end], "kind": "chunk", "tags": tags,
            "metadata": {"kind": "file_chunk", **base, "chunk": index, "chunks": len(spans), "start": start,
                         "end": end, "document_id": doc_id},
        })
    return items, [i["id"] for i in items[1:]]


def ingest(
    source: ContextSource, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, user_id: str,
    tags: Sequence[str] = (), topic: str | None = None, note: str | None = None, provider: str | None = None,
    force: bool = False, now: datetime | None = None, progress: Callable[[FileResult, int, int], None] | None = None,
    follow_symlinks: bool = False,
) -> IngestReport:
    """Ingest files, directories (recursively) and glob patterns as versioned documents.

    ``now`` fixes ``ingested_at`` (tests and imports of history); ``progress(result, done, total)``
    is called as each file's outcome is final. Symlinks found inside a directory or by a pattern
    are followed only where they stay inside it, unless ``follow_symlinks`` (see ``discover``).
    """
    started = time.perf_counter()
    context = context_of(source)
    user = context.user(user_id)
    if isinstance(tags, str) or any(not isinstance(t, str) or not t.strip() for t in tags):
        raise ValidationError("tags", "must be a list of non-empty strings")
    for value, name in ((topic, "topic"), (note, "note"), (provider, "provider")):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValidationError(name, "must be a non-empty string when given")
    when = to_utc(now, "now") if now is not None else datetime.now(UTC)
    stamp = when.isoformat()
    user_tags = list(dict.fromkeys(t for t in tags if t != FILE_INGEST))
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files, results = discover(paths, follow_symlinks=follow_symlinks)
    total = len(files) + len(results)
    done: list[FileResult] = []

    def finish(result: FileResult) -> None:
        done.append(result)
        if progress is not None:
            progress(result, len(done), total)

    for result in results:
        finish(result)
    # Look every file's previous version up before writing anything, so lookups never scan this
    # call's own inserts.
    keys = {path: doc_key_for(path) for path in files}
    latest = {path: _latest(context, user, keys[path]) for path in files}
    pending: list[_Pending] = []
    size = [0, 0]

    def flush() -> None:
        if not pending:
            return
        _write_pending(context, user, pending, when)
        for result, _, _, _ in pending:
            finish(result)
        pending.clear()
        size[0] = size[1] = 0

    for path in files:
        key = keys[path]
        try:
            text = read_document(path, context.limits.max_content_chars)
        except FileFailure as exc:
            finish(FileResult(str(path), "failed", str(exc), key))
            continue
        previous = latest[path]
        if previous is not None and previous[1] == content_hash(text) and not force:
            finish(FileResult(str(path), "unchanged", None, key, previous[0], previous[2]))
            continue
        status = "new" if previous is None else ("forced" if previous[1] == content_hash(text) else "changed")
        version = 1 if previous is None else previous[0] + 1
        base = {"filename": path.name, "path": str(path), "doc_key": key, "version": version, "ingested_at": stamp}
        doc_meta = {"topic": topic, "note": note, "provider": provider, "format": SUPPORTED.get(path.suffix.lower())}
        items, chunk_ids = _file_items(text, user, user_tags, when, base, doc_meta)
        try:
            # Validate here, per file, so one bad file fails alone instead of its whole batch.
            for item in items:
                normalize(item, limits=context.limits, now=when)
        except ValidationError as exc:
            finish(FileResult(str(path), "failed", str(exc), key))
            continue
        pending.append((FileResult(str(path), status, None, key, version, items[0]["id"], len(chunk_ids)), items,
                        chunk_ids, previous[2] if previous else None))
        size[0] += len(items)
        size[1] += sum(len(i["content"]) for i in items)
        if size[0] >= FLUSH_RECORDS or size[1] >= FLUSH_CHARS:
            flush()
    flush()
    order = {str(p): i for i, p in enumerate(files)}
    ordered = sorted(done, key=lambda r: order.get(r.path, -1))
    counts = {s: sum(1 for r in ordered if r.status == s) for s in STATUSES_OF_FILES}
    return IngestReport(tuple(ordered), time.perf_counter() - started, counts)
