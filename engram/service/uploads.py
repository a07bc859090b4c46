"""Ingest documents uploaded over HTTP straight from the request, never through the file system.

File ingest (``engram.ingest.files``) keys a document's versions by the file's absolute path. An
upload has no path of its own, and building one from the user id and the name is what let two
users share a folder, one request delete another's file, and two names with one basename collapse
into one. So uploads skip the disk: the text comes from the request body, and the document's
identity is the upload's name within the user's memory (the store scopes every lookup to the user),
so uploading a name again adds that document's next version. The name is kept, as given, in
``metadata.path`` and its last segment in ``metadata.filename``; no server path is ever stored or
returned.

Requests of one user are serialized (striped locks) so two concurrent uploads of one name cannot
both become version 1.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.errors import ValidationError
from engram.ingest.files import (
    FILE_INGEST,
    STATUSES_OF_FILES,
    SUPPORTED,
    FileResult,
    IngestReport,
    _file_items,
    _latest,
    _write_pending,
    html_to_text,
)
from engram.ingest.normalize import content_hash, normalize, validate_id

if TYPE_CHECKING:
    from engram.memory import Memory

__all__ = ["Upload", "check_upload_name", "filename_of", "ingest_uploads", "upload_doc_key"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LOCKS = tuple(threading.Lock() for _ in range(64))


@dataclass(frozen=True, slots=True)
class Upload:
    """One uploaded file: the name the client gave it and its text."""

    name: str
    content: str


class _Failure(Exception):
    """Why one upload cannot be ingested; the others go on."""


def filename_of(name: str) -> str:
    """The last segment of an upload name, whichever separator the client's system uses."""
    return re.split(r"[/\\]", name)[-1]


def check_upload_name(name: str) -> str:
    """``name`` if it can name an upload, else ValueError (pydantic turns it into a 422)."""
    if _CONTROL.search(name):
        raise ValueError("must not contain control characters")
    last = filename_of(name)
    stem, dot, suffix = last.rpartition(".")
    if not dot or not stem.strip(".") or not suffix:
        raise ValueError(f"needs a file name with an extension ({', '.join(sorted(SUPPORTED))})")
    return name


def upload_doc_key(name: str) -> str:
    """A document's identity across uploads of one name (16 hex, like file ingest's doc_key).

    Prefixed so an upload can never take the key of a file ingested from a path.
    """
    return hashlib.sha256(("upload\x00" + name).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _text(name: str, content: str, max_chars: int) -> str:
    """The text to store for one upload, as file ingest would read the same bytes from disk."""
    suffix = "." + filename_of(name).rpartition(".")[2].lower()
    kind = SUPPORTED.get(suffix)
    if kind is None:
        raise _Failure(f"unsupported file type {suffix!r}; supported: {', '.join(SUPPORTED)}")
    if kind == "pdf":
        # The body carries text (a JSON string), so a PDF's bytes cannot arrive intact.
        raise _Failure("PDF cannot be uploaded as text; upload its extracted text as .txt or .md")
    if "\x00" in content:
        raise _Failure("binary content (NUL bytes)")
    text = content.removeprefix("\ufeff")
    if kind == "html":
        text = html_to_text(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise _Failure("no text (empty file)")
    if len(text) > max_chars:
        raise _Failure(f"text is {len(text)} characters; the limit is {max_chars} (Limits.max_content_chars)")
    return text


def _check_labels(tags: Sequence[str], topic: str | None, note: str | None) -> list[str]:
    if isinstance(tags, str) or any(not isinstance(t, str) or not t.strip() for t in tags):
        raise ValidationError("tags", "must be a list of non-empty strings")
    for value, name in ((topic, "topic"), (note, "note")):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValidationError(name, "must be a non-empty string when given")
    return list(dict.fromkeys(t for t in tags if t != FILE_INGEST))


# One upload ready to write: its result, its records, the chunk ids to link to it, the version it replaces.
_Pending = tuple[FileResult, list[dict[str, Any]], list[str], str | None]


def ingest_uploads(
    memory: Memory, uploads: Sequence[Upload], *, user_id: str, tags: Sequence[str] = (),
    topic: str | None = None, note: str | None = None, force: bool = False, now: datetime | None = None,
) -> IngestReport:
    """Ingest ``uploads`` in order as versioned documents; the report has one result per upload.

    One name twice in a request gives two versions, in request order. A failed upload (unsupported
    type, no text, over the size limit) is reported with its reason and the others go on.
    """
    started = time.perf_counter()
    user = validate_id(user_id, "userId", memory.limits) or ""
    user_tags = _check_labels(tags, topic, note)
    when = now if now is not None else datetime.now(UTC)
    lock = _LOCKS[int(hashlib.sha256(user.encode("utf-8", "surrogatepass")).hexdigest()[:8], 16) % len(_LOCKS)]
    with lock:
        results, pending = _prepare(memory, uploads, user, user_tags, topic, note, force, when)
        if pending:
            _write_pending(memory, user, pending, when)
    counts = {s: sum(1 for r in results if r.status == s) for s in STATUSES_OF_FILES}
    return IngestReport(tuple(results), time.perf_counter() - started, counts)


def _prepare(
    memory: Memory, uploads: Sequence[Upload], user: str, tags: list[str], topic: str | None,
    note: str | None, force: bool, when: datetime,
) -> tuple[list[FileResult], list[_Pending]]:
    results: list[FileResult] = []
    pending: list[_Pending] = []
    # (version, content hash, id) of each name's newest version, updated as this request adds one.
    latest: dict[str, tuple[int, str, str] | None] = {}
    for upload in uploads:
        key = upload_doc_key(upload.name)
        if key not in latest:
            latest[key] = _latest(memory, user, key)
        try:
            text = _text(upload.name, upload.content, memory.limits.max_content_chars)
        except _Failure as exc:
            results.append(FileResult(upload.name, "failed", str(exc), key))
            continue
        previous, digest = latest[key], content_hash(text)
        if previous is not None and previous[1] == digest and not force:
            results.append(FileResult(upload.name, "unchanged", None, key, previous[0], previous[2]))
            continue
        status = "new" if previous is None else ("forced" if previous[1] == digest else "changed")
        version = 1 if previous is None else previous[0] + 1
        base = {"filename": filename_of(upload.name), "path": upload.name, "doc_key": key, "version": version,
                "ingested_at": when.isoformat()}
        suffix = "." + filename_of(upload.name).rpartition(".")[2].lower()
        doc_meta = {"topic": topic, "note": note, "provider": None, "format": SUPPORTED.get(suffix)}
        items, chunk_ids = _file_items(text, user, tags, when, base, doc_meta)
        try:
            for item in items:
                normalize(item, limits=memory.limits, now=when)
        except ValidationError as exc:
            results.append(FileResult(upload.name, "failed", str(exc), key))
            continue
        result = FileResult(upload.name, status, None, key, version, items[0]["id"], len(chunk_ids))
        results.append(result)
        pending.append((result, items, chunk_ids, previous[2] if previous is not None else None))
        latest[key] = (version, digest, items[0]["id"])
    return results, pending
