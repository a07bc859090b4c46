"""A per-user TTL + LRU cache for retrievals (the retrieval policy: 60 seconds for identical queries).

Keys come from :func:`make_key` over everything a retrieval depends on (query, config, filters, a
caller's explicit ``now``) but never the clock: with the clock's minute in the key, an answer lasted
until the minute turned, not ``cache_ttl``. What the clock changes within a TTL is a query's time
range ("last week" becomes another week at midnight): :func:`scope_key` puts the range the query
resolves to in the key, so a relative query never gets an answer for a range it no longer means.
Recency drifts by at most the TTL while an answer is cached, as the retrieval policy's 60 s allow.
Writes for a user call :meth:`RetrievalCache.invalidate_user` so a stale answer never outlives
the change that made it stale.

The cache is bounded twice: by entries and by an estimate of their bytes (:func:`approx_size`).
A count alone does not bound memory, since one retrieval carries its records' full content (a
few documents make it megabytes), so 1,024 of them could hold gigabytes.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from engram.errors import ConfigError, ValidationError
from engram.timeparse import parse_time_scope

if TYPE_CHECKING:
    from engram.retrieve.types import Retrieval

__all__ = [
    "DEFAULT_MAX_BYTES", "RetrievalCache", "approx_size", "make_key", "now_bucket", "retrieval_bytes", "scope_key",
]

T = TypeVar("T")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Rough sizes of CPython objects that are not strings: enough to keep many small values from
# counting as nothing; strings (and bytes, arrays) dominate any cached retrieval.
_SCALAR_BYTES, _CONTAINER_BYTES = 32, 64
_MAX_NODES = 100_000


def now_bucket(now: datetime, seconds: int = 60) -> int:
    """Which ``seconds``-wide window since the epoch ``now`` falls in (naive means UTC)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
        raise ValidationError("seconds", f"must be a positive integer, got {seconds!r}")
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    # Integer timedelta division: float timestamps could put an instant exactly on a boundary
    # into the previous bucket.
    return (now - _EPOCH) // timedelta(seconds=seconds)


def scope_key(query: str, now: datetime) -> tuple[str, str] | None:
    """The time range ``query`` resolves to at ``now`` (as ISO strings), None when it names none:
    the part of a retrieval that the clock changes, and so the part of its cache key."""
    if not isinstance(query, str):
        return None
    scope = parse_time_scope(query, now)
    return None if scope is None else (scope.start.isoformat(), scope.end.isoformat())


def _canonical(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        # json would write NaN/Infinity, which is not JSON; a tagged string keeps keys distinct.
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, enum.Enum):
        return _canonical(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return {"__bytes__": bytes(value).hex()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Every field, not to_dict(): some to_dict()s (RetrievalConfig's) show only a subset, and
        # two configs differing in a hidden field must not share a key.
        fields = {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__type__": type(value).__qualname__, **fields}
    if isinstance(value, Mapping):
        return {_key_text(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        # Set iteration order varies between processes (hash randomization); sort by encoding.
        items = [_canonical(v) for v in value]
        return {"__set__": sorted(items, key=_dumps)}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _canonical(to_dict())
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return _canonical(tolist())
    # repr() of an arbitrary object usually embeds its address, which would give a key that is
    # never hit again; refusing is better than caching nothing silently.
    raise ValidationError("parts", f"cannot build a cache key from {type(value).__name__}")


def _key_text(key: Any) -> str:
    return key if isinstance(key, str) else _dumps(_canonical(key))


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def make_key(*parts: Any) -> str:
    """A stable hex sha256 of ``parts``: equal parts give equal keys across processes."""
    # surrogatepass: a lone surrogate in a query must reach the query check, not crash the key.
    return hashlib.sha256(_dumps(_canonical(list(parts))).encode("utf-8", "surrogatepass")).hexdigest()


def approx_size(value: Any) -> int:
    """An estimate of the bytes ``value`` holds: exact for strings and bytes (``sys.getsizeof``,
    constant time), a fixed amount per other object, each object counted once.

    Walks dataclasses, mappings and sequences; numpy arrays count their buffer. Past 100,000
    objects the rest is not walked, so the estimate stays cheap for any value.
    """
    total = 0
    seen: set[int] = set()
    stack = [value]
    nodes = 0
    while stack and nodes < _MAX_NODES:
        item = stack.pop()
        nodes += 1
        kind = type(item)
        if kind is str or kind is bytes or kind is bytearray:
            total += sys.getsizeof(item)
        elif item is None or kind is bool or kind is int or kind is float:
            total += _SCALAR_BYTES
        elif id(item) in seen:
            continue
        else:
            seen.add(id(item))
            if isinstance(item, (str, bytes, bytearray)):
                total += sys.getsizeof(item)
            elif isinstance(item, Mapping):
                total += _CONTAINER_BYTES + 16 * len(item)
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, (list, tuple, set, frozenset)):
                total += _CONTAINER_BYTES + 8 * len(item)
                stack.extend(item)
            elif dataclasses.is_dataclass(item) and not isinstance(item, type):
                total += _CONTAINER_BYTES
                stack.extend(getattr(item, name) for name in _field_names(kind))
            else:
                nbytes = getattr(item, "nbytes", None)  # numpy arrays
                total += _CONTAINER_BYTES + (nbytes if isinstance(nbytes, int) else 0)
    return total


#: A returned memory's bytes beyond its texts, signals and reasons, its record's included (what
#: :func:`approx_size` counts for one: ~2 KB).
_ENTRY_BYTES = 2_000
_SIGNAL_BYTES = 120  # a signal's or weight's name and value in a dict


def retrieval_bytes(result: Retrieval) -> int:
    """:func:`approx_size` of a retrieval without walking its memories: their texts, signals,
    reasons and metadata are counted, the rest is a fixed amount each (within 5% of the walk on
    real retrievals; the walk took ~0.15 ms of each retrieval the cache keeps, ~900 objects)."""
    total = approx_size((result.query, result.metadata, result.domain_rows))
    for entry in result.memories:
        total += (
            _ENTRY_BYTES + sys.getsizeof(entry.content) + _SIGNAL_BYTES * (len(entry.signals) + len(entry.weights))
            + sum(sys.getsizeof(reason) for reason in entry.reasons)
        )
        record = entry.record
        if record is not None:  # its whole text (a document's can be 200 KB), where the entry's may be clipped
            total += sys.getsizeof(record.content) + (approx_size(record.metadata) if record.metadata else 0)
        if entry.metadata:
            total += approx_size(entry.metadata)
    return total


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


@dataclasses.dataclass(slots=True)
class _Entry(Generic[T]):
    value: T
    expires_at: float
    generation: int
    size: int


class RetrievalCache(Generic[T]):
    """Thread-safe TTL + LRU cache of values keyed by (user, key).

    ``ttl`` is in seconds of ``clock``; a ``ttl``, ``max_entries`` or ``max_bytes`` of 0 disables
    storing. Least recently used entries leave when either ``max_entries`` or ``max_bytes`` (as
    ``sizeof`` estimates each value, :func:`approx_size` by default) would be exceeded; a value
    bigger than ``max_bytes`` on its own is not stored.
    """

    def __init__(
        self,
        max_entries: int = 1024,
        ttl: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        sizeof: Callable[[T], int] = approx_size,
    ) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0:
            raise ConfigError("max_entries", f"must be a non-negative integer, got {max_entries!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ConfigError("max_bytes", f"must be a non-negative integer, got {max_bytes!r}")
        _check_ttl("ttl", ttl)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._sizeof = sizeof
        self._bytes = 0
        self.ttl = float(ttl)
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], _Entry[T]] = OrderedDict()
        # Invalidating a user bumps a number instead of scanning every entry for theirs: O(1)
        # under the lock that every retrieval also takes. Stale entries can never be served
        # (their generation no longer matches) and leave on lookup or as least recently used.
        # A user keeps their number once bumped: resetting it could revive older entries.
        self._generations: dict[str, int] = {}
        self._next_generation = 1
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._expirations = 0

    def generation(self, user_id: str) -> int:
        """The user's current generation, to pass to :meth:`put` from before a slow computation."""
        with self._lock:
            return self._generations.get(user_id, 0)

    def get(self, user_id: str, key: str) -> T | None:
        with self._lock:
            entry = self._entries.get((user_id, key))
            if entry is None:
                self._misses += 1
                return None
            if entry.generation != self._generations.get(user_id, 0):
                self._drop((user_id, key))
                self._misses += 1
                return None
            if entry.expires_at <= self._clock():
                self._drop((user_id, key))
                self._expirations += 1
                self._misses += 1
                return None
            self._entries.move_to_end((user_id, key))
            self._hits += 1
            return entry.value

    def put(
        self,
        user_id: str,
        key: str,
        value: T,
        ttl: float | None = None,
        *,
        generation: int | None = None,
    ) -> bool:
        """Store ``value``; False when it was not stored.

        Pass ``generation`` (from :meth:`generation`, read before computing ``value``) so a
        result computed across an :meth:`invalidate_user` is dropped instead of cached as fresh.
        """
        if ttl is not None:
            _check_ttl("ttl", ttl)
        lifetime = self.ttl if ttl is None else float(ttl)
        if lifetime <= 0 or self.max_entries == 0 or self.max_bytes == 0:
            return False
        # Sized outside the lock: the walk is the one part of a put that grows with the value.
        size = self._sizeof(value)
        if size > self.max_bytes:
            return False
        with self._lock:
            current = self._generations.get(user_id, 0)
            if generation is not None and generation != current:
                return False
            self._drop((user_id, key))
            self._entries[(user_id, key)] = _Entry(value, self._clock() + lifetime, current, size)
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size
                self._evictions += 1
            return True

    def _drop(self, slot: tuple[str, str]) -> None:
        """Remove one entry if present (the caller holds the lock)."""
        entry = self._entries.pop(slot, None)
        if entry is not None:
            self._bytes -= entry.size

    def invalidate_user(self, user_id: str) -> None:
        with self._lock:
            self._generations[user_id] = self._next_generation
            self._next_generation += 1

    def clear(self) -> None:
        """Drop every entry; counters are kept, since they describe the cache's whole life."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            # Every entry is gone, so no old generation can be revived by forgetting the numbers.
            self._generations.clear()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            lookups = self._hits + self._misses
            return {
                "hits": self._hits,
                "misses": self._misses,
                "size": len(self._entries),
                "max_entries": self.max_entries,
                "bytes": self._bytes,
                "max_bytes": self.max_bytes,
                "evictions": self._evictions,
                "expirations": self._expirations,
                "hit_rate": self._hits / lookups if lookups else 0.0,
            }

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _check_ttl(name: str, ttl: float) -> None:
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl < 0:
        raise ConfigError(name, f"must be a finite number >= 0, got {ttl!r}")
