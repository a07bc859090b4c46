"""Mem0's filter language, checked and evaluated in Python over a result's fields and metadata.

``{"category": "movies"}`` is equality; ``{"priority": {"gte": 5}}`` applies an operator (eq,
ne, in, nin, gt, gte, lt, lte, contains, icontains); ``{"AND": [...]}``, ``{"OR": [...]}`` and
``{"NOT": [...]}`` combine conditions; the value ``"*"`` matches any value the key holds. A key
names a field of the Mem0-shaped result (``user_id``, ``agent_id``, ``run_id``, ``role``,
``created_at``, ...) or else a key of its ``metadata``.

The stores filter metadata by equality only, so these are evaluated after the store's own
filters, on the results it returned. A filter is checked whole before any evaluation: an unknown
operator is a ``ValidationError`` naming where it stands, never a silent no-match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engram.errors import ValidationError, short_repr

__all__ = ["COMBINATORS", "OPERATORS", "check", "matches"]

_MISSING = object()


def _compare(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """An ordering test that is simply false across types (a number against a text) or on a missing key."""

    def run(value: Any, operand: Any) -> bool:
        if value is _MISSING or value is None:
            return False
        try:
            return test(value, operand)
        except TypeError:
            return False

    return run


def _contains(value: Any, operand: Any, fold: bool = False) -> bool:
    if isinstance(value, str) and isinstance(operand, str):
        return operand.lower() in value.lower() if fold else operand in value
    if isinstance(value, list | tuple):
        return operand in value
    return False


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda value, operand: value == operand,
    "ne": lambda value, operand: value != operand,
    "in": lambda value, operand: value in operand,
    "nin": lambda value, operand: value not in operand,
    "gt": _compare(lambda value, operand: value > operand),
    "gte": _compare(lambda value, operand: value >= operand),
    "lt": _compare(lambda value, operand: value < operand),
    "lte": _compare(lambda value, operand: value <= operand),
    "contains": _contains,
    "icontains": lambda value, operand: _contains(value, operand, fold=True),
}
COMBINATORS = ("AND", "OR", "NOT")


def check(filters: Any, field: str = "filters") -> Mapping[str, Any]:
    """``filters`` if it is a well-formed filter; else a ValidationError naming the part that is not."""
    if not isinstance(filters, Mapping):
        raise ValidationError(field, f"must be a mapping of key to condition, got {type(filters).__name__}")
    for key, condition in filters.items():
        where = f"{field}.{key}"
        if not isinstance(key, str) or not key:
            raise ValidationError(field, f"keys must be non-empty strings, got {short_repr(key)}")
        if key in COMBINATORS:
            parts = [condition] if key == "NOT" and isinstance(condition, Mapping) else condition
            if isinstance(parts, str) or not isinstance(parts, Sequence) or not parts:
                raise ValidationError(where, "must be a non-empty list of filters")
            for i, part in enumerate(parts):
                check(part, f"{where}[{i}]")
        elif isinstance(condition, Mapping):
            for operator, operand in condition.items():
                if operator not in OPERATORS:
                    raise ValidationError(f"{where}.{operator}", f"unknown operator; allowed: {', '.join(OPERATORS)}")
                if operator in ("in", "nin") and (isinstance(operand, str) or not isinstance(operand, Sequence)):
                    raise ValidationError(f"{where}.{operator}", f"must be a list, got {type(operand).__name__}")
    return filters


def matches(filters: Mapping[str, Any] | None, result: Mapping[str, Any]) -> bool:
    """Whether ``result`` (a Mem0-shaped result with ``metadata``) satisfies a checked filter."""
    if not filters:
        return True
    return all(_holds(key, condition, result) for key, condition in filters.items())


def _holds(key: str, condition: Any, result: Mapping[str, Any]) -> bool:
    if key == "AND":
        return all(matches(part, result) for part in condition)
    if key == "OR":
        return any(matches(part, result) for part in condition)
    if key == "NOT":
        parts = [condition] if isinstance(condition, Mapping) else condition
        return not any(matches(part, result) for part in parts)
    value = _lookup(key, result)
    if isinstance(condition, Mapping):
        return all(OPERATORS[op](value, operand) for op, operand in condition.items())
    if condition == "*":
        return value is not _MISSING and value is not None
    return bool(value == condition)


def _lookup(key: str, result: Mapping[str, Any]) -> Any:
    if key != "metadata" and key in result:
        return result[key]
    metadata = result.get("metadata") or {}
    return metadata.get(key, _MISSING) if isinstance(metadata, Mapping) else _MISSING
