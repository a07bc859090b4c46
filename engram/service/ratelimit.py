"""Per-key token buckets: ``rate`` tokens a second refill a bucket of ``burst``.

:class:`RateLimiter` keeps its buckets in the process. Several workers of one server (``engram serve
--workers N``) share :class:`SharedRateLimiter`'s instead, in a small SQLite file of their own: one
short write transaction a request (~0.1 ms), so a key's rate is the server's, not N times it. The
file is per host: servers on several hosts behind one balancer each limit on their own.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from engram.stores.sqlite.wal import use_wal

__all__ = ["RateLimiter", "SharedRateLimiter"]


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

    def close(self) -> None:
        pass

    @staticmethod
    def retry_after(seconds: float) -> str:
        # Retry-After takes whole seconds; rounding down would invite a retry that fails again.
        return str(max(1, math.ceil(seconds)))


class SharedRateLimiter(RateLimiter):
    """Buckets in a SQLite file that every process opening the same ``path`` shares.

    Times are wall-clock seconds (a monotonic clock means nothing to another boot), and time going
    backwards refills nothing. The buckets are not durable: losing them on a crash only refills them.
    """

    def __init__(self, path: str, rate: float = 100.0, burst: float = 200.0,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(rate, burst, clock)
        self.path = path
        self._conn = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
        use_wal(self._conn)  # every worker opens the new file at once
        self._conn.execute("PRAGMA synchronous=OFF")
        self._conn.execute("CREATE TABLE IF NOT EXISTS buckets (key TEXT PRIMARY KEY, tokens REAL NOT NULL, "
                           "updated REAL NOT NULL) WITHOUT ROWID")

    def acquire(self, key: str, rate: float | None = None, burst: float | None = None) -> float:
        rate = self.rate if rate is None else float(rate)
        if rate <= 0:
            return 0.0
        capacity = self.burst if burst is None else max(1.0, float(burst))
        with self._lock:
            # IMMEDIATE: read and update under one write lock, or two workers could spend one token.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                now = self._clock()
                row = self._conn.execute("SELECT tokens, updated FROM buckets WHERE key = ?", (key,)).fetchone()
                tokens = capacity if row is None else min(capacity, row[0] + max(0.0, now - row[1]) * rate)
                wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate
                if wait == 0.0:
                    tokens -= 1.0
                self._conn.execute("INSERT OR REPLACE INTO buckets (key, tokens, updated) VALUES (?, ?, ?)",
                                   (key, tokens, now))
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        return wait

    def close(self) -> None:
        with self._lock:
            self._conn.close()
