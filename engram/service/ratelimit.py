"""Per-key token buckets: ``rate`` tokens a second refill a bucket of ``burst``."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RateLimiter"]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """``rate <= 0`` switches limiting off. Buckets are per key id, created full on first use."""

    def __init__(self, rate: float = 100.0, burst: float = 200.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = float(rate)
        self.burst = max(1.0, float(burst))
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}

    def acquire(self, key: str, rate: float | None = None, burst: float | None = None) -> float:
        """0.0 when the request may go on, else the seconds until a token is back (for Retry-After)."""
        rate = self.rate if rate is None else float(rate)
        if rate <= 0:
            return 0.0
        capacity = self.burst if burst is None else max(1.0, float(burst))
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(capacity, now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / rate

    @staticmethod
    def retry_after(seconds: float) -> str:
        # Retry-After takes whole seconds; rounding down would invite a retry that fails again.
        return str(max(1, math.ceil(seconds)))
