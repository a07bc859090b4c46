"""Every range, choice, id, text and filter check, written once.

Each function returns the checked value (converted where that is the point: ``to_utc`` gives UTC)
or raises ``error`` (ValidationError by default, ConfigError for settings) naming the field and
what it allows, so a caller learns from one message what to send instead. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import zoneinfo
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any, Protocol

from engram.errors import EngramError, ValidationError, short_repr
from engram.model import KINDS, STATUSES, Filters

__all__ = [
    "as_filters",
    "asked_at",
    "aware_time",
    "check_utf8",
    "choice",
    "fits_int64",
    "integer",
    "number",
    "seconds",
    "time_zone",
    "to_utc",
    "top_k_shortcut",
    "unit",
    "user_id",
    "validate_id",
    "validate_strings",
    "validate_text",
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
    return aware_time(value, field).astimezone(UTC)


def aware_time(value: Any, field: str) -> datetime:
    """A timezone-aware datetime (or ISO-8601 string with an offset), checked, in its own zone: a
    question's "today" and "last week" are the days of whoever asks it, in the zone of its ``now``."""
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
        value.astimezone(UTC)
    except OverflowError:
        # 9999-12-31T23:59:59-14:00 is a valid local time whose UTC instant lies past year 9999.
        raise ValidationError(field, f"is out of range in UTC (years 1 to 9999): {value.isoformat()}") from None
    return value


@functools.lru_cache(maxsize=64)
def time_zone(name: str, field: str = "timezone", error: type[EngramError] = ValidationError) -> tzinfo:
    """The IANA time zone ``name`` ("Europe/Paris"), or ``error`` naming ``field``."""
    if not isinstance(name, str) or not 0 < len(name) <= 64:
        raise error(field, f"must be an IANA time zone name such as 'Europe/Paris', got {short_repr(name)}")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise error(field, f"must be an IANA time zone name such as 'Europe/Paris', got {name!r}") from None


def asked_at(now: datetime, zone: str | None) -> datetime:
    """When a question is asked, in the zone whose days its "today" and "last week" are: ``zone``
    when given (``now`` in another zone is the same instant there), else ``now``'s own."""
    now = aware_time(now, "now")
    if zone is None:
        return now
    try:
        return now.astimezone(time_zone(zone))
    except OverflowError:  # the calendar's first or last hours, in a zone that leaves it
        raise ValidationError("now", f"is out of range in {zone} (years 1 to 9999): {now.isoformat()}") from None


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


#: Bounds on what one filter may carry (every value ends up as a bound SQL parameter).
_MAX_FILTER_ITEMS = 1000
_MAX_FILTER_CHARS = 10_000
_INT64 = (-(2**63), 2**63 - 1)


def fits_int64(value: int) -> bool:
    """Whether the integer ``value`` is one SQLite and PostgreSQL bind and compare exactly (signed 64 bits)."""
    return _INT64[0] <= value <= _INT64[1]


def as_filters(value: Filters | Mapping[str, Any] | None) -> Filters:
    """Accept a Filters or a plain mapping of its fields, validated; lists become tuples.

    Every refusal is a ValidationError naming ``filters`` (an unknown key, not a mapping) or
    ``filters.<field>`` (a value of the wrong type or out of range).
    """
    if value is None:
        return Filters()
    if isinstance(value, Filters):
        given = {f.name: getattr(value, f.name) for f in dataclasses.fields(Filters)}
    elif isinstance(value, Mapping):
        given = dict(value)
    else:
        raise ValidationError("filters", f"must be a mapping of filter fields, got {type(value).__name__}")
    allowed = [f.name for f in dataclasses.fields(Filters)]
    for key in given:
        if key not in allowed:
            raise ValidationError("filters", f"unknown filter {short_repr(key)}; allowed: {', '.join(allowed)}")
    return Filters(**{key: _filter_value(key, item) for key, item in given.items()})


def _filter_text(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if len(value) > _MAX_FILTER_CHARS:
        raise ValidationError(field, f"must be at most {_MAX_FILTER_CHARS} characters, got {len(value)}")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters")
    return check_utf8(value, field)


def _filter_value(key: str, value: Any) -> Any:
    """One filter field checked and normalized (lists to tuples, ISO strings to UTC datetimes)."""
    field = f"filters.{key}"
    if key in ("kinds", "statuses", "tags_all", "tags_any"):
        if value is None and key != "statuses":
            return None if key == "kinds" else ()
        if isinstance(value, str | bytes):
            raise ValidationError(field, f"must be a list of strings, not a bare string (write [{short_repr(value)}])")
        if not isinstance(value, Sequence | set | frozenset):
            raise ValidationError(field, f"must be a list of strings, got {type(value).__name__}")
        if len(value) > _MAX_FILTER_ITEMS:
            raise ValidationError(field, f"at most {_MAX_FILTER_ITEMS} items allowed, got {len(value)}")
        items = tuple(_filter_text(field, item) for item in value)
        choices = {"kinds": KINDS, "statuses": STATUSES}.get(key)
        if choices is not None:
            for item in items:
                if item not in choices:
                    raise ValidationError(field, f"unknown value {short_repr(item)}; allowed: {', '.join(choices)}")
        return items
    if key in ("session_id", "project_id", "agent_id", "subject", "predicate"):
        return None if value is None else _filter_text(field, value)
    if key in ("created_after", "created_before"):
        if value is None:
            return None
        return to_utc(value, field)
    if key == "where":  # Mem0's filter language: checked whole where it is compiled (engram.stores.sql.where)
        if value is not None and not isinstance(value, Mapping):
            raise ValidationError(field, f"must be a mapping of key to condition, got {type(value).__name__}")
        return value
    # metadata: {key: scalar}, compared for equality inside the store
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a mapping of key to value, got {type(value).__name__}")
    if len(value) > _MAX_FILTER_ITEMS:
        raise ValidationError(field, f"at most {_MAX_FILTER_ITEMS} keys allowed, got {len(value)}")
    out: dict[str, Any] = {}
    for name, item in value.items():
        _filter_text(field, name)
        if isinstance(item, str):
            _filter_text(field, item)
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if not fits_int64(item):
                raise ValidationError(field, f"integer value of {short_repr(name)} is outside the signed 64-bit range")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValidationError(field, f"value of {short_repr(name)} must be a finite number")
        else:
            allowed = "a string, number, boolean or null"
            raise ValidationError(field, f"value of {short_repr(name)} must be {allowed}, got {type(item).__name__}")
        out[name] = item
    return out


def top_k_shortcut(limit: Any, top_k: Any, config: Any) -> int | None:
    """The ``limit=``/``top_k=`` keyword of ``retrieve`` (the same thing under Mem0's and Engram's
    names): an integer in [1, 1000], or None when neither is given. A ``config`` (an object or a
    mapping) naming another top_k is refused rather than one of them silently winning."""
    given = {name: value for name, value in (("limit", limit), ("top_k", top_k)) if value is not None}
    if not given:
        return None
    values = {integer(name, value, 1, 1000) for name, value in given.items()}
    if len(values) > 1:
        raise ValidationError("top_k", f"limit={limit} and top_k={top_k} disagree; give one of them")
    (k,) = values
    if config is None:
        return k
    theirs = config.get("top_k", config.get("topK")) if isinstance(config, Mapping) else config.top_k
    if theirs is not None and theirs != k:
        name = next(iter(given))
        raise ValidationError(name, f"{name}={k} but config.top_k is {theirs}; set one of them")
    return k
