"""LangGraph's filter and namespace-match semantics as pure functions (no framework import), and
which filter conditions Engram's metadata filter can check inside the store."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from engram.validate import fits_int64

__all__ = ["matches_filter", "namespace_matches", "split_filter"]

_METADATA_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the keys the stores can filter on


def split_filter(conditions: Mapping[str, Any], reserved: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(equality conditions Engram's metadata filter can check in the store, the conditions it cannot).

    The caller checks every condition again in Python (SQL's JSON equality is not Python's ``==`` for
    booleans), so what the store checks only narrows the candidates."""
    pushed: dict[str, Any] = {}
    remaining: dict[str, Any] = {}
    for key, want in conditions.items():
        scalar = want["$eq"] if isinstance(want, Mapping) and set(want) == {"$eq"} else want
        if isinstance(key, str) and key != reserved and _METADATA_KEY.fullmatch(key) and _storable_scalar(scalar):
            pushed[key] = scalar
        else:
            remaining[key] = want
    return pushed, remaining


def _storable_scalar(value: Any) -> bool:
    if value is None or isinstance(value, bool | str):
        return True
    if isinstance(value, int):
        return fits_int64(value)
    return isinstance(value, float) and math.isfinite(value)


def matches_filter(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """LangGraph's filter semantics: equality (nested mappings and lists compared piecewise) and
    the operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``."""
    return all(_compare(value.get(key), want) for key, want in conditions.items())


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_operator(have, op, operand) for op, operand in want.items())
        return isinstance(have, Mapping) and all(_compare(have.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple) and len(have) == len(want)
            and all(_compare(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _operator(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    comparisons = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    if op not in comparisons:
        raise ValueError(f"unsupported filter operator: {op!r}")
    try:
        return bool(comparisons[op](float(have), float(operand)))
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not greater or smaller than anything


def namespace_matches(match_type: str, path: Sequence[str], namespace: Sequence[str]) -> bool:
    """A prefix or suffix condition, ``*`` matching any one label."""
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(want in ("*", label) for want, label in zip(path, labels, strict=True))
