"""Exact BM25 keyword hits read from SQL alone, for a large user whose postings are not in memory yet.

Building a user's :class:`~.postings.Postings` reads every term they hold (~10 ms per 1,000 memories
on a busy core); a first search would wait for it. Until the build, done on another thread, is in
memory, a search reads instead only what it needs: every row that FTS5 matches for one of the query
terms (its stored terms, under the filters), the user's document frequencies from ``keyword_vocab``
and their size and total length from ``keyword_stats``, the same statistics the postings hold. The
scores are computed with the same operations in the same order as :meth:`.Postings.scores`, so both
paths return the same hits with the same scores.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engram.model import Filters, Hit
from engram.stores.sql.rows import filter_sql
from engram.stores.sqlite.dialect import SQLITE
from engram.stores.sqlite.schema import user_key
from engram.text import K1, B, plan_keywords

__all__ = ["scan_hits"]

Read = Callable[[str, Sequence[Any]], list[Any]]


def _quote(term: str) -> str:
    # Quoted, each term is a plain string to FTS5: operators or column filters in user text are inert.
    return '"' + term.replace('"', '""') + '"'


def scan_hits(
    read: Read, user_id: str, terms: Sequence[str], n: int, filters: Filters, limit: int | None = None,
) -> list[Hit] | None:
    """The hits, or None when the terms match more than ``limit`` of the user's rows."""
    stats = read("SELECT docs, terms FROM keyword_stats WHERE user_id = ?", (user_id,))
    if not stats or not int(stats[0][0]):
        return []
    docs, total_length = int(stats[0][0]), int(stats[0][1])
    key = user_key(user_id)
    found = dict(read(f"SELECT term, doc FROM keyword_vocab WHERE term IN ({','.join('?' * len(terms))})",
                      [key + t for t in terms]))
    df = {t: int(found.get(key + t, 0)) for t in terms}
    if limit is not None and sum(df.values()) > limit:
        return None
    plan = plan_keywords(terms, df, docs, budget=sum(df.values()) + 1)
    if plan is None:
        return []
    where, params = filter_sql(SQLITE, filters)
    # "+m.user_id": every match is this user's already (the terms carry the key); FTS5 leads.
    rows = read(
        "SELECT m.id, c.c0 FROM keyword_fts f JOIN memories m ON m.rowid = f.rowid "
        "JOIN keyword_fts_content c ON c.id = f.rowid "
        f"WHERE keyword_fts MATCH ? AND +m.user_id = ? AND {where}",
        (" OR ".join(_quote(key + t) for t in plan.terms), user_id, *params),
    )
    if not rows:
        return []
    ids = [str(r[0]) for r in rows]
    # Spaces doubled, so that counting " term " finds adjacent repeats too.
    padded = ["  " + str(r[1]).replace(" ", "  ") + "  " for r in rows]
    lengths = np.fromiter((str(r[1]).count(" ") + 1 for r in rows), dtype=np.int64, count=len(rows))
    average = max(total_length / docs, 1e-9)
    norms = (K1 * (1.0 - B + B * lengths / average)).astype(np.float64, copy=False)
    scores = np.zeros(len(rows), dtype=np.float64)
    for term in plan.terms:  # the order of Postings.scores: the same sums, bit for bit
        needle = " " + key + term + " "
        freqs = np.fromiter((d.count(needle) for d in padded), dtype=np.float64, count=len(rows))
        present = np.flatnonzero(freqs)
        scores[present] += plan.idf[term] * (K1 + 1.0) * freqs[present] / (freqs[present] + norms[present])
    scores /= plan.ideal
    best = heapq.nsmallest(n, zip((-scores).tolist(), ids, strict=True))
    return [(memory_id, -negative) for negative, memory_id in best]
