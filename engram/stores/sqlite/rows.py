"""Mapping between MemoryRecord and the SQLite row, and the WHERE clause for Filters."""

from __future__ import annotations

import functools
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.errors import ValidationError
from engram.model import Filters, MemoryRecord

__all__ = ["COLUMNS", "filter_sql", "from_us", "record_params", "row_to_record", "to_us"]

COLUMNS = (
    "id, user_id, kind, content, content_hash, agent_id, session_id, project_id, role, subject, "
    "predicate, object, trigger_text, action_text, tags, entities, importance, created_at, recorded_at, "
    "valid_from, valid_to, last_accessed_at, access_count, status, metadata, doc_key, version"
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


def to_us(value: datetime | None) -> int | None:
    if value is None:
        return None
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: int | None) -> datetime | None:
    if value is None:
        return None
    return _EPOCH + timedelta(microseconds=value)


def _metadata(text: str) -> dict[str, Any]:
    # Most memories carry no metadata: skip the decoder for the empty literal.
    if text in ("[]", "{}"):
        return {}
    decoded: dict[str, Any] = json.loads(text)
    return decoded


@functools.lru_cache(maxsize=4096)
def _names(text: str) -> tuple[str, ...]:
    """A JSON list of tags or entity ids as a tuple: few distinct lists recur across a user's
    memories (the customer a note is about), and decoding was a fifth of a fetch."""
    return () if text == "[]" else tuple(json.loads(text))


def record_params(r: MemoryRecord) -> tuple[Any, ...]:
    return (
        r.id, r.user_id, r.kind, r.content, r.content_hash, r.agent_id, r.session_id, r.project_id,
        r.role, r.subject, r.predicate, r.object, r.trigger, r.action,
        json.dumps(list(r.tags), ensure_ascii=False), json.dumps(list(r.entities), ensure_ascii=False),
        r.importance, to_us(r.created_at), to_us(r.recorded_at), to_us(r.valid_from), to_us(r.valid_to),
        to_us(r.last_accessed_at), r.access_count, r.status,
        json.dumps(dict(r.metadata), ensure_ascii=False), r.doc_key, r.version,
    )


def row_to_record(row: Any) -> MemoryRecord:
    created = from_us(row[17])
    recorded = from_us(row[18])
    assert created is not None and recorded is not None
    return MemoryRecord(
        id=row[0], user_id=row[1], kind=row[2], content=row[3], content_hash=row[4],
        agent_id=row[5], session_id=row[6], project_id=row[7], role=row[8], subject=row[9],
        predicate=row[10], object=row[11], trigger=row[12], action=row[13],
        tags=_names(row[14]), entities=_names(row[15]),
        importance=float(row[16]), created_at=created, recorded_at=recorded,
        valid_from=from_us(row[19]), valid_to=from_us(row[20]), last_accessed_at=from_us(row[21]),
        access_count=int(row[22]), status=row[23], metadata=_metadata(row[24]),
        doc_key=row[25], version=row[26],
    )


def filter_sql(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """AND-ed conditions for one user's rows (the caller adds ``user_id = ?``)."""
    parts: list[str] = []
    params: list[Any] = []
    if filters.statuses:
        parts.append(f"{alias}.status IN ({','.join('?' * len(filters.statuses))})")
        params.extend(filters.statuses)
    if filters.kinds is not None:
        if not filters.kinds:
            return "0", []
        parts.append(f"{alias}.kind IN ({','.join('?' * len(filters.kinds))})")
        params.extend(filters.kinds)
    for column in ("session_id", "project_id", "agent_id"):
        value = getattr(filters, column)
        if value is not None:
            parts.append(f"{alias}.{column} = ?")
            params.append(value)
    for column in ("subject", "predicate"):
        value = getattr(filters, column)
        if value is not None:
            parts.append(f"{alias}.{column} = ? COLLATE NOCASE")
            params.append(value)
    if filters.tags_all:
        tags = list(dict.fromkeys(filters.tags_all))
        parts.append(
            f"(SELECT COUNT(DISTINCT t.tag) FROM memory_tags t WHERE t.memory_rowid = {alias}.rowid "
            f"AND t.tag IN ({','.join('?' * len(tags))})) = ?"
        )
        params.extend(tags)
        params.append(len(tags))
    if filters.tags_any:
        parts.append(
            f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_rowid = {alias}.rowid "
            f"AND t.tag IN ({','.join('?' * len(filters.tags_any))}))"
        )
        params.extend(filters.tags_any)
    for key, value in filters.metadata.items():
        if not _METADATA_KEY.match(key):
            raise ValidationError("filters.metadata", f"key {key!r} must match [A-Za-z0-9_-]{{1,64}}")
        path = f'$."{key}"'
        if value is None:
            parts.append(f"COALESCE(json_type({alias}.metadata, ?), 'null') = 'null'")
            params.append(path)
        elif isinstance(value, bool):
            parts.append(f"json_type({alias}.metadata, ?) = ?")
            params.extend([path, "true" if value else "false"])
        elif isinstance(value, int | float | str):
            parts.append(f"json_extract({alias}.metadata, ?) = ?")
            params.extend([path, value])
        else:
            raise ValidationError("filters.metadata", "values must be strings, numbers, booleans or null")
    if filters.created_after is not None:
        parts.append(f"{alias}.created_at >= ?")
        params.append(to_us(filters.created_after))
    if filters.created_before is not None:
        parts.append(f"{alias}.created_at <= ?")
        params.append(to_us(filters.created_before))
    return (" AND ".join(parts) or "1"), params
