"""Every range, choice, id and text check, written once.

Each function returns the checked value (converted where that is the point: ``to_utc`` gives UTC)
or raises ``error`` (ValidationError by default, ConfigError for settings) naming the field and
what it allows, so a caller learns from one message what to send instead. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from engram.errors import ValidationError, short_repr

__all__ = [
    "check_utf8", "choice", "integer", "number", "seconds", "to_utc", "unit", "user_id", "validate_id",
    "validate_strings", "validate_text",
]


class IdLimits(Protocol):
    """What an id check needs of ``engram.config.Limits`` (named structurally: config checks with this module)."""

    @property
    def max_id_chars(self) -> int: ...


def integer(field: str, value: Any, low: int, high: int, error: type[ValidationError] = ValidationError) -> int:
    """An int (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise error(field, f"must be an integer in [{low}, {high}], got {short_repr(value)}")
    return value


def number(
    field: str, value: Any, low: float, high: float, error: type[ValidationError] = ValidationError
) -> float:
    """A finite int or float (not a bool) in [low, high], as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise error(field, f"must be a number in [{_bound(low)}, {_bound(high)}], got {type(value).__name__}")
    # math.isfinite only on floats: on a huge int (10**400) it raises OverflowError, while the
    # int/float comparison below is exact for any int.
    if (isinstance(value, float) and not math.isfinite(value)) or not low <= value <= high:
        raise error(field, f"must be in [{_bound(low)}, {_bound(high)}], got {short_repr(value)}")
    return float(value)


def _bound(value: float) -> str:
    """0.0 as 0 and 86400.0 as 86400: a bound reads as the caller would write it."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def unit(field: str, value: Any, error: type[ValidationError] = ValidationError) -> float:
    """A weight, share or salience: a number in [0, 1]."""
    return number(field, value, 0.0, 1.0, error)


def seconds(field: str, value: Any, error: type[ValidationError] = ValidationError) -> float:
    """A duration: a finite number of seconds >= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise error(field, f"must be a finite number of seconds >= 0, got {short_repr(value)}")
    return float(value)


def choice(field: str, value: Any, allowed: Sequence[str], error: type[ValidationError] = ValidationError) -> str:
    """One of ``allowed`` (exact spelling)."""
    if not isinstance(value, str) or value not in allowed:
        raise error(field, f"must be one of {', '.join(allowed)}; got {short_repr(value)}")
    return value


def to_utc(value: Any, field: str) -> datetime:
    """A timezone-aware datetime (or ISO-8601 string with an offset) as UTC."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValidationError(field, f"not an ISO-8601 datetime: {short_repr(value)}") from exc
    if not isinstance(value, datetime):
        raise ValidationError(field, f"must be a datetime or ISO-8601 string, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(field, "must be timezone-aware (naive datetimes are ambiguous)")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # 9999-12-31T23:59:59-14:00 is a valid local time whose UTC instant lies past year 9999.
        raise ValidationError(field, f"is out of range in UTC (years 1 to 9999): {value.isoformat()}") from None


def check_utf8(value: str, field: str) -> str:
    """Refuse text that cannot be encoded as UTF-8 (a lone surrogate such as ``"\\ud800"``)."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(
                field, f"must be valid Unicode text; lone surrogate at position {exc.start}"
            ) from None
    return value


def validate_id(value: Any, field: str, limits: IdLimits, *, required: bool = True) -> str | None:
    """An id: a non-empty string within ``limits.max_id_chars``, without NUL; None only if not required."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    if len(value) > limits.max_id_chars:
        raise ValidationError(field, f"must be at most {limits.max_id_chars} characters")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters")
    return check_utf8(value, field)


def user_id(value: Any, limits: IdLimits) -> str:
    """The user every call is scoped to: always required, so a missing one is an error, never "everyone"."""
    checked = validate_id(value, "user_id", limits)
    assert checked is not None  # required=True never returns None
    return checked


def validate_text(value: Any, field: str, max_chars: int) -> str:
    """A non-empty string of at most ``max_chars`` characters, without NUL, encodable as UTF-8."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    if len(value) > max_chars:
        raise ValidationError(field, f"must be at most {max_chars} characters, got {len(value)}")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters")
    return check_utf8(value, field)


def validate_strings(value: Any, field: str, max_items: int, max_chars: int) -> tuple[str, ...]:
    """A list of non-empty strings, duplicates dropped (first kept), at most ``max_items`` distinct ones.

    Linear: duplicates are found with a dict, and the refusal comes as soon as the count exceeds
    ``max_items`` rather than after the whole list was read.
    """
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence | set | frozenset):
        raise ValidationError(field, f"must be a list of strings, got {type(value).__name__}")
    out: dict[str, None] = {}
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValidationError(field, "every item must be a non-empty string")
        if len(item) > max_chars:
            raise ValidationError(field, f"every item must be at most {max_chars} characters")
        if "\x00" in item:
            raise ValidationError(field, "items must not contain NUL characters")
        if item not in out:
            check_utf8(item, field)
            out[item] = None
            if len(out) > max_items:
                raise ValidationError(field, f"at most {max_items} distinct items allowed")
    return tuple(out)
