"""Mem0's filter language: checked here, evaluated here in Python and compiled to SQL by the stores.

``{"category": "movies"}`` is equality; ``{"priority": {"gte": 5}}`` applies an operator (eq,
ne, in, nin, gt, gte, lt, lte, contains, icontains); ``{"AND": [...]}``, ``{"OR": [...]}`` and
``{"NOT": [...]}`` combine conditions; the value ``"*"`` matches any value the key holds (not
null). A key names a memory field (:data:`COLUMNS`: ``user_id``, ``agent_id``, ``run_id``,
``role``, ``kind``, ``created_at``) or else a key of its ``metadata``.

A filter travels as ``Filters.where``: the stores compile it into their candidate queries
(engram.stores.sql.where), so it narrows the memories before anything is ranked, and this module
evaluates it again over each record fetched (engram.retrieve.candidates.matches). The two must
agree, so the meaning is kept narrow enough for SQL to say exactly:

- values compare only within one type: a text with a text, a number with a number (never a
  boolean), a boolean with a boolean; across types a comparison is false, never an error;
- ``eq None`` holds for a key that is null or missing; ``ne``/``nin`` hold for a missing key;
- ``contains`` finds a substring in a text or an equal text among a list's items; ``icontains``
  does the same ignoring the case of ASCII letters (what both databases' ``lower`` fold alike);
- ``created_at`` compares as a time: operands are ISO 8601 texts, read as UTC without an offset.

A filter is checked whole before any evaluation: an unknown operator or an operand of the wrong
type is a ``ValidationError`` naming where it stands, never a silent no-match.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from engram.errors import ValidationError, short_repr
from engram.validate import check_utf8, fits_int64

__all__ = ["COLUMNS", "COMBINATORS", "METADATA_KEY", "MISSING", "OPERATORS", "as_time", "check", "evaluate", "fold",
           "matches", "record_value"]

MISSING = object()
#: Filter keys that name a memory field (the record attribute each reads); any other is a metadata key.
COLUMNS = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id", "role": "role", "kind": "kind",
           "created_at": "created_at"}
OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains")
COMBINATORS = ("AND", "OR", "NOT")
#: Bounds on one filter, so a request cannot make the store compile an unbounded query.
MAX_NODES = 200
MAX_DEPTH = 8
_ORDER = {"gt": lambda a, b: a > b, "gte": lambda a, b: a >= b, "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b}
#: What a metadata key may be: what the stores accept in a JSON path without quoting.
METADATA_KEY = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold(text: str) -> str:
    """ASCII letters lowered, as SQLite's and PostgreSQL's (C collation) ``lower`` do."""
    return text.translate(_ASCII_LOWER)


def _type(value: Any) -> str:
    if value is None or value is MISSING:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "num"
    if isinstance(value, str):
        return "str"
    if isinstance(value, datetime):
        return "time"
    return "list" if isinstance(value, list | tuple) else "object"


def as_time(operand: Any, where: str) -> datetime:
    """A ``created_at`` operand as an aware UTC time."""
    parsed: datetime | None = operand if isinstance(operand, datetime) else None
    if parsed is None:
        try:
            parsed = datetime.fromisoformat(operand) if isinstance(operand, str) else None
        except ValueError:
            parsed = None
        if parsed is None:
            raise ValidationError(where, f"created_at compares with an ISO 8601 time, got {short_repr(operand)}")
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def check(filters: Any, field: str = "filters") -> Mapping[str, Any]:
    """``filters`` if it is a well-formed filter; else a ValidationError naming the part that is not."""
    nodes = [0]
    _check(filters, field, 0, nodes)
    return filters  # type: ignore[no-any-return]  # _check proved it a mapping


def _check(filters: Any, field: str, depth: int, nodes: list[int]) -> None:
    if not isinstance(filters, Mapping):
        raise ValidationError(field, f"must be a mapping of key to condition, got {type(filters).__name__}")
    if depth > MAX_DEPTH:
        raise ValidationError(field, f"nests deeper than {MAX_DEPTH} levels")
    for key, condition in filters.items():
        nodes[0] += 1
        if nodes[0] > MAX_NODES:
            raise ValidationError(field, f"has more than {MAX_NODES} conditions")
        where = f"{field}.{key}"
        if not isinstance(key, str) or not (key in COMBINATORS or key in COLUMNS or METADATA_KEY.match(key)):
            raise ValidationError(field, f"key {short_repr(key)} must match [A-Za-z0-9_-]{{1,64}}")
        if key in COMBINATORS:
            parts = [condition] if key == "NOT" and isinstance(condition, Mapping) else condition
            if isinstance(parts, str) or not isinstance(parts, Sequence) or not parts:
                raise ValidationError(where, "must be a non-empty list of filters")
            for i, part in enumerate(parts):
                _check(part, f"{where}[{i}]", depth + 1, nodes)
        elif isinstance(condition, Mapping):
            if not condition:
                raise ValidationError(where, "must name at least one operator")
            for operator, operand in condition.items():
                _check_operand(key, operator, operand, f"{where}.{operator}")
        else:
            _check_operand(key, "eq", condition, where)


def _check_operand(key: str, operator: Any, operand: Any, where: str) -> None:
    if operator not in OPERATORS:
        raise ValidationError(where, f"unknown operator; allowed: {', '.join(OPERATORS)}")
    if operator in ("in", "nin"):
        if isinstance(operand, str) or not isinstance(operand, Sequence) or len(operand) > 100:
            raise ValidationError(where, f"must be a list of at most 100 values, got {type(operand).__name__}")
        for item in operand:
            _check_operand(key, "eq", item, where)
        return
    kind = _type(operand)
    _check_value(operand, kind, where)
    if operator in ("contains", "icontains"):
        if kind != "str":
            raise ValidationError(where, f"must be a text, got {type(operand).__name__}")
    elif operator in _ORDER and kind not in ("str", "num", "time"):
        raise ValidationError(where, f"must be a number or a text, got {type(operand).__name__}")
    elif kind not in ("str", "num", "bool", "null", "time"):
        raise ValidationError(where, f"must be a text, number, boolean or null, got {type(operand).__name__}")
    if key == "created_at" and operand != "*" and operator not in ("contains", "icontains") and operand is not None:
        as_time(operand, where)


def _check_value(operand: Any, kind: str, where: str) -> None:
    """What the stores cannot bind or compare: a text that is no UTF-8 (a lone surrogate), an
    integer outside SQLite's and PostgreSQL's 64 bits, a number that is not finite."""
    if kind == "str":
        check_utf8(operand, where)
    elif kind == "num":
        if isinstance(operand, int) and not fits_int64(operand):
            raise ValidationError(where, "an integer must be within the signed 64-bit range")
        if isinstance(operand, float) and not math.isfinite(operand):
            raise ValidationError(where, "must be a finite number")


def record_value(record: Any, key: str) -> Any:
    """What filter ``key`` reads from a MemoryRecord: a field (:data:`COLUMNS`) or a metadata value."""
    column = COLUMNS.get(key)
    if column is not None:
        value = getattr(record, column)
        return MISSING if value is None else value
    return record.metadata.get(key, MISSING)


def matches(filters: Mapping[str, Any] | None, result: Mapping[str, Any]) -> bool:
    """Whether a Mem0-shaped result (fields at the top, the rest in ``metadata``) satisfies a checked filter."""

    def lookup(key: str) -> Any:
        if key in COLUMNS and key in result:
            value = result[key]
            return MISSING if value is None else value
        metadata = result.get("metadata") or {}
        return metadata.get(key, MISSING) if isinstance(metadata, Mapping) else MISSING

    return evaluate(filters, lookup)


def evaluate(filters: Mapping[str, Any] | None, lookup: Callable[[str], Any]) -> bool:
    """Whether the memory ``lookup`` reads from satisfies a checked filter (every key AND-ed)."""
    if not filters:
        return True
    return all(_holds(key, condition, lookup) for key, condition in filters.items())


def _holds(key: str, condition: Any, lookup: Callable[[str], Any]) -> bool:
    if key in COMBINATORS:
        parts = [condition] if isinstance(condition, Mapping) else condition
        if key == "AND":
            return all(evaluate(part, lookup) for part in parts)
        found = any(evaluate(part, lookup) for part in parts)
        return found if key == "OR" else not found
    value = lookup(key)
    if key == "created_at" and isinstance(value, str):
        value = as_time(value, key)
    if not isinstance(condition, Mapping):
        if condition == "*":
            return value is not MISSING and value is not None
        condition = {"eq": condition}
    return all(_apply(key, operator, value, operand) for operator, operand in condition.items())


def _apply(key: str, operator: str, value: Any, operand: Any) -> bool:
    if operator in ("in", "nin"):
        found = any(_apply(key, "eq", value, item) for item in operand)
        return found if operator == "in" else not found
    if operator == "ne":
        return not _apply(key, "eq", value, operand)
    if key == "created_at" and operand is not None and operator not in ("contains", "icontains"):
        operand = as_time(operand, key)
    if operator == "eq":
        if operand is None:
            return value is MISSING or value is None
        return _type(value) == _type(operand) and bool(value == operand)
    if operator in _ORDER:
        return _type(value) == _type(operand) and bool(_ORDER[operator](value, operand))
    # contains / icontains
    same: Callable[[str], str] = fold if operator == "icontains" else str
    if isinstance(value, str):
        return same(operand) in same(value)
    if isinstance(value, list | tuple):
        return any(isinstance(item, str) and same(item) == same(operand) for item in value)
    return False
