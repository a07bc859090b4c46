"""Exact BM25 keyword hits read from SQL alone, for a large user whose postings are not in memory yet.

Loading a user's postings reads every term they hold (~1 s at 100k memories); a first search would
wait for it, and a cold retrieval could pass its deadline. While the load runs on a thread of its
own (:mod:`.keyword`), a search reads instead only what it needs: the user's size and total length,
each query term's document frequency among the user's rows, and every row matching one of the
terms (its stored terms, under the filters). The scores are computed with the same operations in
the same order as :meth:`engram.stores.postings.Postings.scores`, so both paths return the same
hits with the same scores (as SQLite's :mod:`engram.stores.sqlite.keyword_scan`).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from engram.model import Filters, Hit
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.sql.rows import filter_sql
from engram.text import K1, B, memory_terms, plan_keywords

__all__ = ["scan_hits"]

_SIZE = "SELECT count(*), coalesce(sum(doc_len), 0) FROM engram_memories WHERE user_id = ?"
# Terms are [^\W_]+ only: as a tsquery each is one plain lexeme.
_DF = (
    "SELECT t, (SELECT count(*) FROM engram_memories m WHERE m.user_id = ? AND m.content_tsv @@ t::tsquery) "
    "FROM unnest(?::text[]) AS t"
)
_TEXTS = "SELECT content, role, subject, predicate, object, trigger_text, action_text FROM engram_memories "


def _frequencies(text: str) -> Counter[str]:
    """A tsvector's text form ('a':1,4 'b':2) as term -> positions."""
    return Counter({term[1:-1]: positions.count(",") + 1
                    for token in text.split(" ") if token for term, positions in [token.rsplit(":", 1)]})


def scan_hits(
    conn: psycopg.Connection[Any], user_id: str, terms: Sequence[str], n: int, filters: Filters, limit: int,
) -> list[Hit] | None:
    """The hits, or None when the terms match more than ``limit`` of the user's rows."""
    docs, total_length = (int(v) for v in POSTGRES.run(conn, _SIZE, (user_id,)).fetchone() or (0, 0))
    if not docs:
        return []
    df = {str(t): int(c) for t, c in POSTGRES.run(conn, _DF, (user_id, list(terms))).fetchall()}
    if sum(df.values()) > limit:
        return None
    plan = plan_keywords(terms, df, docs, budget=sum(df.values()) + 1)
    if plan is None:
        return []
    where, params = filter_sql(POSTGRES, filters)
    rows = POSTGRES.run(
        conn, "SELECT m.id, m.doc_len, m.content_tsv::text FROM engram_memories m "
        f"WHERE m.user_id = ? AND m.content_tsv @@ to_tsquery('simple', ?) AND {where}",
        (user_id, " | ".join(plan.terms), *params),
    ).fetchall()
    if not rows:
        return []
    ids = [str(r[0]) for r in rows]
    lengths = np.fromiter((int(r[1]) for r in rows), dtype=np.int64, count=len(rows))
    counts = [_frequencies(str(r[2])) for r in rows]
    for i, (memory_id, length, _) in enumerate(rows):
        if counts[i].total() != length:  # more positions of a term than a tsvector keeps
            found = POSTGRES.run(conn, _TEXTS + "WHERE user_id = ? AND id = ?", (user_id, memory_id)).fetchone()
            counts[i] = Counter(memory_terms(*found)) if found else counts[i]
    average = max(total_length / docs, 1e-9)
    norms = (K1 * (1.0 - B + B * lengths / average)).astype(np.float64, copy=False)
    scores = np.zeros(len(rows), dtype=np.float64)
    for term in plan.terms:  # the order of Postings.scores: the same sums, bit for bit
        freqs = np.fromiter((c[term] for c in counts), dtype=np.float64, count=len(rows))
        present = np.flatnonzero(freqs)
        scores[present] += plan.idf[term] * (K1 + 1.0) * freqs[present] / (freqs[present] + norms[present])
    scores /= plan.ideal
    best = heapq.nsmallest(n, zip((-scores).tolist(), ids, strict=True))
    return [(memory_id, -negative) for negative, memory_id in best]
