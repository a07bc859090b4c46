"""Turn what a caller hands to ``add`` into a validated ``MemoryRecord``; pure, no I/O.

Every refusal is a ``ValidationError`` naming the field, raised before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from engram.attachments import described
from engram.config import Limits
from engram.errors import ValidationError, short_repr
from engram.ingest.triples import format_semantic_triple
from engram.model import KINDS, STATUSES, MemoryRecord, new_id
from engram.validate import (
    check_utf8,
    choice,
    fits_int64,
    integer,
    to_utc,
    unit,
    user_id,
    validate_id,
    validate_strings,
    validate_text,
)

__all__ = [
    "FIELDS", "MAX_VERSION", "check_utf8", "content_hash", "normalize", "short_repr", "to_utc", "validate_id",
    "validate_strings", "validate_text",
]

#: Fields a caller may give to ``add``; anything else is refused by name.
FIELDS = frozenset(
    {
        "content", "user_id", "kind", "agent_id", "session_id", "project_id", "role",
        "subject", "predicate", "object", "trigger", "action", "tags", "entities",
        "importance", "created_at", "valid_from", "valid_to", "status", "metadata",
        "doc_key", "version", "id",
    }
)

#: Versions are stored in a signed 32-bit-safe column range: [1, 2**31 - 1].
MAX_VERSION = 2**31 - 1

#: The default importance gives procedures 0.8 and summaries 0.9 when nothing says otherwise.
DEFAULT_IMPORTANCE = {"procedure": 0.8, "summary": 0.9}


def content_hash(content: str) -> str:
    """Key of the embedding cache: identical text is never embedded twice."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def _optional_text(value: Any, field: str, max_chars: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string when given")
    if len(value) > max_chars:
        raise ValidationError(field, f"must be at most {max_chars} characters")
    return check_utf8(value, field)


def _check_depth(value: Any, depth: int, limit: int) -> None:
    if depth > limit:
        raise ValidationError("metadata", f"nested deeper than {limit} levels")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError("metadata", "keys must be strings")
            _check_depth(item, depth + 1, limit)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_depth(item, depth + 1, limit)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValidationError("metadata", "numbers must be finite")
    elif isinstance(value, int) and not isinstance(value, bool) and not fits_int64(value):
        # what neither store's JSON can compare exactly, so that no filter could find it
        raise ValidationError("metadata", "integers must be within the signed 64-bit range")


def _metadata(value: Any, limits: Limits) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("metadata", "must be a JSON object (a mapping)")
    _check_depth(value, 1, limits.max_metadata_depth)
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError("metadata", f"must be JSON-serializable: {exc}") from exc
    try:
        size = len(encoded.encode())
    except UnicodeEncodeError:
        raise ValidationError("metadata", "keys and strings must be valid Unicode (no lone surrogates)") from None
    if size > limits.max_metadata_bytes:
        raise ValidationError("metadata", f"must be at most {limits.max_metadata_bytes} bytes as JSON")
    result: dict[str, Any] = json.loads(encoded)
    return result


def _importance(value: Any, kind: str) -> float:
    if value is None:
        return DEFAULT_IMPORTANCE.get(kind, 0.5)
    return unit("importance", value)


def _content(item: Mapping[str, Any], kind: str, limits: Limits) -> str:
    content = item.get("content")
    if content is None and kind == "fact" and item.get("subject") and item.get("predicate"):
        # A bare triple still gets searchable text, worded as the augmentation specification words it.
        content = format_semantic_triple(str(item["subject"]), str(item["predicate"]), str(item.get("object") or ""))
    if content is None and kind == "procedure" and item.get("trigger") and item.get("action"):
        content = f"When {item['trigger']}: {item['action']}"
    if not isinstance(content, str):
        raise ValidationError("content", f"must be a string, got {type(content).__name__}")
    content = content.strip()
    if not content:
        raise ValidationError("content", "must not be empty")
    if len(content) > limits.max_content_chars:
        raise ValidationError(
            "content", f"{len(content):,} characters, at most {limits.max_content_chars:,} (Limits.max_content_chars)"
        )
    if "\x00" in content:
        raise ValidationError("content", "must not contain NUL characters")
    return check_utf8(content, "content")


def normalize(item: Mapping[str, Any], *, limits: Limits, now: datetime) -> MemoryRecord:
    """Validate one memory as given to ``add`` and build its record."""
    unknown = set(item) - FIELDS
    if unknown:
        raise ValidationError(sorted(unknown)[0], f"unknown field; allowed: {', '.join(sorted(FIELDS))}")
    user = user_id(item.get("user_id"), limits)
    kind = choice("kind", item.get("kind") or "message", KINDS)
    status = choice("status", item.get("status") or "active", STATUSES)
    metadata = _metadata(item.get("metadata"), limits)
    content = _content(item, kind, limits)
    shown = described(content, metadata)  # an image's caption is searched and shown with what was said
    if len(shown) > limits.max_content_chars:
        raise ValidationError(
            "content", f"{len(shown):,} characters with its attachments, at most {limits.max_content_chars:,} "
            "(Limits.max_content_chars)")
    content = shown
    version = item.get("version")
    if version is not None:
        integer("version", version, 1, MAX_VERSION)
    created = to_utc(item["created_at"], "created_at") if item.get("created_at") is not None else now
    valid_from = to_utc(item["valid_from"], "valid_from") if item.get("valid_from") else None
    valid_to = to_utc(item["valid_to"], "valid_to") if item.get("valid_to") else None
    if valid_from is not None and valid_to is not None and valid_to < valid_from:
        raise ValidationError("valid_to", f"must not be before valid_from ({valid_to.isoformat()} is before "
                                          f"{valid_from.isoformat()})")
    return MemoryRecord(
        id=validate_id(item.get("id"), "id", limits, required=False) or new_id(),
        user_id=user,
        content=content,
        kind=kind,
        created_at=created,
        recorded_at=now,
        content_hash=content_hash(content),
        agent_id=validate_id(item.get("agent_id"), "agent_id", limits, required=False),
        session_id=validate_id(item.get("session_id"), "session_id", limits, required=False),
        project_id=validate_id(item.get("project_id"), "project_id", limits, required=False),
        role=_optional_text(item.get("role"), "role", 64),
        subject=_optional_text(item.get("subject"), "subject", 1000),
        predicate=_optional_text(item.get("predicate"), "predicate", 200),
        object=_optional_text(item.get("object"), "object", 10_000),
        trigger=_optional_text(item.get("trigger"), "trigger", 10_000),
        action=_optional_text(item.get("action"), "action", 10_000),
        tags=validate_strings(item.get("tags"), "tags", limits.max_tags, limits.max_tag_chars),
        entities=validate_strings(item.get("entities"), "entities", limits.max_tags, limits.max_id_chars),
        importance=_importance(item.get("importance"), kind),
        valid_from=valid_from,
        valid_to=valid_to,
        status=status,
        metadata=metadata,
        doc_key=_optional_text(item.get("doc_key"), "doc_key", limits.max_id_chars),
        version=version,
    )
