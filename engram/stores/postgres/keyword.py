"""BM25 keyword candidates on PostgreSQL, planned like SQLite's (see engram/stores/sqlite/keyword.py).

Okapi BM25 with FTS5's constants (k1 = 1.2, b = 0.75, IDF floored at 1e-6) over the user's own
memories. Document frequencies and the user's size and average length are cached for a few minutes:
counting them per query cost more than the search. Terms are taken rarest first while their postings
stay within a budget, so a common word cannot make one query score a quarter of the user's rows;
when even the rarest term exceeds it, its most recent matches are scored.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from engram.model import Filters, Hit
from engram.stores.postgres import schema
from engram.text import keyword_terms

__all__ = ["KeywordPlanner"]

_SEARCH_SQL = """
WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[]) AS q(lexeme, idf)),
hits AS MATERIALIZED (
    SELECT m.id, m.doc_len, m.content_tsv FROM engram_memories m
    WHERE m.user_id = %s AND m.content_tsv @@ to_tsquery('simple', %s) AND {where}
    ORDER BY m.created_at DESC LIMIT %s),
scored AS (
    SELECT h.id, SUM(q.idf * cardinality(t.positions) * 2.2
        / (cardinality(t.positions) + 1.2 * (0.25 + 0.75 * h.doc_len / %s))) AS score
    FROM hits h CROSS JOIN LATERAL unnest(h.content_tsv) t JOIN q ON q.lexeme = t.lexeme
    GROUP BY h.id)
SELECT id, score FROM scored ORDER BY score DESC, id LIMIT %s
"""

Read = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


class KeywordPlanner:
    def __init__(self, budget: int, ttl: float = 300.0, max_entries: int = 100_000) -> None:
        self.budget = budget
        self._ttl = ttl
        self._max = max_entries
        self._df: dict[tuple[str, str], tuple[float, int]] = {}
        self._stats: dict[str, tuple[float, float, float]] = {}
        self._lock = threading.Lock()

    def _fresh(self, entry: tuple[float, Any] | None, now: float) -> bool:
        return entry is not None and now - entry[0] < self._ttl

    def _user_stats(self, read: Read, user_id: str, now: float) -> tuple[float, float]:
        with self._lock:
            hit = self._stats.get(user_id)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1], hit[2]
        n, avgdl = read("SELECT count(*), COALESCE(avg(doc_len), 1) FROM engram_memories WHERE user_id = %s",
                        (user_id,))[0]
        with self._lock:
            self._stats[user_id] = (now, float(n), float(avgdl))
        return float(n), float(avgdl)

    def _frequencies(self, read: Read, user_id: str, terms: list[str], now: float) -> dict[str, int]:
        out: dict[str, int] = {}
        for term in terms:
            with self._lock:
                hit = self._df.get((user_id, term))
            if hit is not None and now - hit[0] < self._ttl:
                out[term] = hit[1]
                continue
            count = int(read(
                "SELECT count(*) FROM engram_memories WHERE user_id = %s AND content_tsv @@ to_tsquery('simple', %s)",
                (user_id, term),
            )[0][0])
            with self._lock:
                if len(self._df) > self._max:
                    self._df.clear()
                self._df[(user_id, term)] = (now, count)
            out[term] = count
        return out

    def search(self, read: Read, user_id: str, text: str, n: int, filters: Filters) -> list[Hit]:
        terms = keyword_terms(text)
        if not terms or n <= 0:
            return []
        now = time.monotonic()
        df = self._frequencies(read, user_id, terms, now)
        # Cached counts may be stale; a term counted 0 stays in the query (it costs nothing if still
        # absent) so memories written since are found. The hits LIMIT bounds the work either way.
        present = sorted(terms, key=lambda t: (df[t], t))
        chosen: list[str] = []
        total = 0
        for term in present:
            if chosen and total + df[term] > self.budget:
                break
            chosen.append(term)
            total += df[term]
        users_n, avgdl = self._user_stats(read, user_id, now)
        idf = [max(math.log((max(users_n, df[t]) - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in chosen]
        where, params = schema.filter_sql(filters)
        # Terms are \w+ only, so joined by "|" they are a tsquery with no operator of the user's.
        rows = read(
            _SEARCH_SQL.format(where=where),
            (chosen, idf, user_id, " | ".join(chosen), *params, self.budget, max(avgdl, 1e-9), n),
        )
        return [(r[0], float(r[1])) for r in rows]
