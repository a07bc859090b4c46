"""Between a :class:`MemoryRecord` and a row of ``memories``, and the WHERE clause for :class:`Filters`."""

from __future__ import annotations

import json
import re
from typing import Any

from engram.errors import ValidationError
from engram.model import Filters, MemoryRecord, ReadOnlyDict, read_only
from engram.stores.sql.dialect import JSON_TEXT, Dialect
from engram.stores.sql.where import where_sql

__all__ = ["COLUMNS", "filter_sql", "record_params", "row_to_record"]

COLUMNS = (
    "id, user_id, kind, content, content_hash, agent_id, session_id, project_id, role, subject, "
    "predicate, object, trigger_text, action_text, tags, entities, importance, created_at, recorded_at, "
    "valid_from, valid_to, last_accessed_at, access_count, status, metadata, doc_key, version"
)

_METADATA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


def record_params(d: Dialect, r: MemoryRecord) -> tuple[Any, ...]:
    """The record's values in :data:`COLUMNS` order."""
    return (
        r.id, r.user_id, r.kind, r.content, r.content_hash, r.agent_id, r.session_id, r.project_id,
        r.role, r.subject, r.predicate, r.object, r.trigger, r.action, d.names(r.tags), d.names(r.entities),
        r.importance, d.time(r.created_at), d.time(r.recorded_at), d.time(r.valid_from), d.time(r.valid_to),
        d.time(r.last_accessed_at), r.access_count, r.status,
        JSON_TEXT.encode(dict(r.metadata)) if r.metadata else "{}", r.doc_key, r.version,
    )


_NO_METADATA = ReadOnlyDict()
#: Objects decoded straight into read-only dicts: as fast as plain ones (lists need a walk after).
_DECODER = json.JSONDecoder(object_pairs_hook=ReadOnlyDict)


def _metadata(value: Any) -> ReadOnlyDict:
    """Read-only: records are shared by the store's cache with later questions (and users)."""
    # Most memories carry no metadata: skip the decoder for the empty literal.
    if value in ("[]", "{}"):
        return _NO_METADATA
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):  # a driver's decoded JSON (PostgreSQL)
        decoded: ReadOnlyDict = read_only(value)
        return decoded
    found: ReadOnlyDict = _DECODER.decode(value)
    return read_only(found) if "[" in value else found


def row_to_record(d: Dialect, row: Any) -> MemoryRecord:
    """A row of :data:`COLUMNS`."""
    time = d.read_time
    created, recorded = time(row[17]), time(row[18])
    assert created is not None and recorded is not None
    # Positional, in MemoryRecord's field order: a retrieval builds ~100 records on a user's first
    # question, and 27 keyword arguments cost a third more than the same values by position.
    return MemoryRecord(
        row[0], row[1], row[3], row[2], created, recorded, row[4],  # id, user_id, content, kind, times, hash
        row[5], row[6], row[7], row[8],  # agent_id, session_id, project_id, role
        row[9], row[10], row[11], row[12], row[13],  # subject, predicate, object, trigger, action
        d.read_names(row[14]), d.read_names(row[15]), float(row[16]),  # tags, entities, importance
        time(row[19]), time(row[20]), time(row[21]), int(row[22]),  # valid_from/to, last access, count
        row[23], _metadata(row[24]), row[25], None if row[26] is None else int(row[26]),  # status .. version
    )


def filter_sql(d: Dialect, filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    """AND-ed conditions for one user's rows (the caller adds ``user_id = ?``)."""
    parts: list[str] = []
    params: list[Any] = []

    def add(sql: str, values: list[Any]) -> None:
        parts.append(sql)
        params.extend(values)

    if filters.statuses:
        add(*d.in_(f"{alias}.status", filters.statuses))
    if filters.kinds is not None:
        if not filters.kinds:
            return d.false, []
        add(*d.in_(f"{alias}.kind", filters.kinds))
    for column in ("session_id", "project_id", "agent_id"):
        value = getattr(filters, column)
        if value is not None:
            add(f"{alias}.{column} = ?", [value])
    for column in ("subject", "predicate"):
        value = getattr(filters, column)
        if value is not None:
            add(d.nocase_eq(f"{alias}.{column}"), [value])
    if filters.tags_all:
        add(*d.tags_all(alias, list(dict.fromkeys(filters.tags_all))))
    if filters.tags_any:
        add(*d.tags_any(alias, list(filters.tags_any)))
    for key, value in filters.metadata.items():
        if not _METADATA_KEY.match(key):
            raise ValidationError("filters.metadata", f"key {key!r} must match [A-Za-z0-9_-]{{1,64}}")
        if value is not None and not isinstance(value, bool | int | float | str):
            raise ValidationError("filters.metadata", "values must be strings, numbers, booleans or null")
        add(*d.metadata_eq(alias, key, value))
    if filters.where:
        add(*where_sql(d, alias, filters.where))
    if filters.created_after is not None:
        add(f"{alias}.created_at >= ?", [d.time(filters.created_after)])
    if filters.created_before is not None:
        add(f"{alias}.created_at <= ?", [d.time(filters.created_before)])
    return (" AND ".join(parts) or d.true), params
