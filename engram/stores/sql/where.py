"""``Filters.where`` (Mem0's filter language, engram.metadata_filter) compiled into one SQL condition.

The condition joins the candidate queries' other filters (engram.stores.sql.rows.filter_sql), so
every candidate source (vectors, keywords, substrings, entities, listing) sees only the memories
the filter admits, before anything is ranked. Each test is made never NULL (a missing key reads
false), so ``NOT`` and ``ne`` hold for a missing key as the Python evaluation says they do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram.metadata_filter import COLUMNS, COMBINATORS, as_time, check
from engram.stores.sql.dialect import Dialect

__all__ = ["where_sql"]

_SIGNS = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def where_sql(d: Dialect, alias: str, filters: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """``filters`` (checked first: a malformed one is a ValidationError naming ``filters.where``) as
    a condition on the memory row ``alias``, every key AND-ed."""
    check(filters, "filters.where")
    return _all(d, alias, filters)


def _all(d: Dialect, alias: str, filters: Mapping[str, Any]) -> tuple[str, list[Any]]:
    parts: list[str] = []
    params: list[Any] = []
    for key, condition in filters.items():
        sql, values = _node(d, alias, key, condition)
        parts.append(sql)
        params.extend(values)
    return "(" + (" AND ".join(parts) or d.true) + ")", params


def _node(d: Dialect, alias: str, key: str, condition: Any) -> tuple[str, list[Any]]:
    if key in COMBINATORS:
        parts = [condition] if isinstance(condition, Mapping) else condition
        compiled = [_all(d, alias, part) for part in parts]
        params = [value for _, values in compiled for value in values]
        joined = (" AND " if key == "AND" else " OR ").join(sql for sql, _ in compiled)
        return (f"(NOT ({joined}))" if key == "NOT" else f"({joined})"), params
    if not isinstance(condition, Mapping):
        if condition == "*":
            return _leaf(d, alias, key, "present", None)
        condition = {"eq": condition}
    compiled = [_operator(d, alias, key, operator, operand) for operator, operand in condition.items()]
    return "(" + " AND ".join(sql for sql, _ in compiled) + ")", [v for _, values in compiled for v in values]


def _operator(d: Dialect, alias: str, key: str, operator: str, operand: Any) -> tuple[str, list[Any]]:
    if operator in ("in", "nin"):
        tests = [_operator(d, alias, key, "eq", item) for item in operand]
        found = "(" + (" OR ".join(sql for sql, _ in tests) or d.false) + ")"
        return (found if operator == "in" else f"(NOT {found})"), [v for _, values in tests for v in values]
    if operator == "ne":
        sql, params = _operator(d, alias, key, "eq", operand)
        return f"(NOT {sql})", params
    if operator == "eq" and operand is None:
        return _leaf(d, alias, key, "null", None)
    return _leaf(d, alias, key, operator, operand)


def _leaf(d: Dialect, alias: str, key: str, test: str, operand: Any) -> tuple[str, list[Any]]:
    """One test, never NULL."""
    column = COLUMNS.get(key)
    if column is None:
        sql, params = d.metadata_test(alias, key, test, operand)
    else:
        sql, params = _column_test(d, f"{alias}.{column}", key, test, operand)
    return f"COALESCE({sql}, {d.false})", params


def _column_test(d: Dialect, column: str, key: str, test: str, operand: Any) -> tuple[str, list[Any]]:
    if test in ("null", "present"):
        return f"{column} IS {'' if test == 'null' else 'NOT '}NULL", []
    if key == "created_at":
        if test in ("contains", "icontains"):
            return d.false, []
        return f"{column} {_SIGNS[test]} ?", [d.time(as_time(operand, key))]
    if not isinstance(operand, str):  # a text field never equals or orders with a number or boolean
        return d.false, []
    if test in ("contains", "icontains"):
        fold = d.fold if test == "icontains" else str
        return d.text_contains(fold(column), fold(d.text_param)), [operand]
    return f"{column}{d.binary} {_SIGNS[test]} ?", [operand]
