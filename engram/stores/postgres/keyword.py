"""BM25 keyword candidates on PostgreSQL, scored as on SQLite (see engram/stores/sqlite/keyword.py).

The tsvector holds the stemmed terms of :func:`engram.text.memory_terms`, so both backends index and
query the same terms. Okapi BM25 with Lucene's IDF (:func:`engram.text.bm25_idf`) over the user's own
memories: document frequencies, the user's size and average length are the user's alone, and are
cached per user until the user's next write (the store's change token). Terms are taken rarest
first while their postings stay within a budget, so a common word cannot make one query score a
quarter of the user's rows; when even the rarest term exceeds it, its most recent matches are
scored. The score is divided by that of an average-length memory holding each query term once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from engram.model import Filters, Hit
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.sql.rows import filter_sql
from engram.text import K1, B, plan_keywords, query_terms

__all__ = ["KeywordPlanner", "search_sql"]

_SEARCH_SQL = f"""
WITH q AS (SELECT * FROM unnest(?::text[], ?::float8[]) AS q(lexeme, idf)),
hits AS MATERIALIZED (
    SELECT m.id, m.doc_len, m.content_tsv FROM engram_memories m
    WHERE m.user_id = ? AND m.content_tsv @@ to_tsquery('simple', ?) AND {{where}}
    ORDER BY m.created_at DESC LIMIT ?),
scored AS (
    SELECT h.id, SUM(q.idf * cardinality(t.positions) * {K1 + 1.0}
        / (cardinality(t.positions) + {K1} * ({1.0 - B} + {B} * h.doc_len / ?))) AS score
    FROM hits h CROSS JOIN LATERAL unnest(h.content_tsv) t JOIN q ON q.lexeme = t.lexeme
    GROUP BY h.id)
SELECT id, score / ? FROM scored ORDER BY score DESC, id LIMIT ?
"""


def search_sql(where: str) -> str:
    """The scoring query; parameters: the chosen terms, their IDFs, the user, the terms as a tsquery,
    the filters' parameters, the postings budget, the average length, the ideal score and n."""
    return _SEARCH_SQL.format(where=where)


#: Rows of one statement in shared SQL (``?`` parameters): the store's ``_query``.
Read = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


class KeywordPlanner:
    def __init__(self, budget: int, max_entries: int = 100_000) -> None:
        self.budget = budget
        self._max = max_entries
        # (user, change token) -> (docs, avg length, {term: df}); a write changes the token.
        self._cache: dict[str, tuple[str, float, float, dict[str, int]]] = {}
        self._lock = threading.Lock()

    def _statistics(
        self, read: Read, user_id: str, token: str, terms: list[str]
    ) -> tuple[float, float, dict[str, int]]:
        with self._lock:
            hit = self._cache.get(user_id)
        if hit is None or hit[0] != token:
            n, avgdl = read("SELECT count(*), COALESCE(avg(doc_len), 1) FROM engram_memories WHERE user_id = ?",
                            (user_id,))[0]
            hit = (token, float(n), float(avgdl), {})
        df = hit[3]
        for term in terms:
            if term not in df:
                df[term] = int(read(
                    "SELECT count(*) FROM engram_memories WHERE user_id = ? "
                    "AND content_tsv @@ to_tsquery('simple', ?)",
                    (user_id, term),
                )[0][0])
        with self._lock:
            if len(self._cache) > self._max:
                self._cache.clear()
            self._cache[user_id] = hit
        return hit[1], hit[2], df

    def search(self, read: Read, user_id: str, token: str, text: str, n: int, filters: Filters) -> list[Hit]:
        # Terms are [^\W_]+ only, so joined by "|" they are a tsquery with no operator of the user's.
        terms = query_terms(text)
        if not terms or n <= 0:
            return []
        docs, avgdl, df = self._statistics(read, user_id, token, terms)
        plan = plan_keywords(terms, df, docs, self.budget)
        if plan is None:
            return []
        chosen = plan.terms
        where, params = filter_sql(POSTGRES, filters)
        rows = read(
            search_sql(where),
            (chosen, [plan.idf[t] for t in chosen], user_id, " | ".join(chosen), *params, self.budget,
             max(avgdl, 1e-9), plan.ideal, n),
        )
        return [(r[0], float(r[1])) for r in rows]
