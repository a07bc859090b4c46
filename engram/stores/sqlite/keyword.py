"""BM25 keyword candidates from FTS5, bounded so one common word cannot scan the whole index.

FTS5 computes bm25() for every row that matches, about a microsecond each: a query word found in a
quarter of 100k memories would cost tens of milliseconds. So terms are taken rarest first (their
document frequency read from an fts5vocab table) while the postings to score stay within a budget.
Rare terms carry almost all of BM25's weight (IDF), so the top of the ranking barely moves; when even
the rarest term alone exceeds the budget, only its most recent matches are scored.
"""

from __future__ import annotations

import sqlite3
import time

from engram.model import Filters, Hit
from engram.stores.sqlite.rows import filter_sql
from engram.text import keyword_terms

__all__ = ["DEFAULT_POSTINGS_BUDGET", "DocFrequencies", "keyword_hits"]

DEFAULT_POSTINGS_BUDGET = 2000


def _quote(term: str) -> str:
    # Quoted, each term is a plain string to FTS5: operators or column filters in user text are inert.
    return '"' + term.replace('"', '""') + '"'


class DocFrequencies:
    """Cached document frequencies: a vocabulary look-up costs about as much as the search it plans,
    and the plan only needs them roughly, so each is kept for a few minutes."""

    def __init__(self, ttl: float = 300.0, max_terms: int = 100_000) -> None:
        self._ttl = ttl
        self._max = max_terms
        self._cache: dict[str, tuple[float, int]] = {}

    def get(self, conn: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
        now = time.monotonic()
        out: dict[str, int] = {}
        missing = []
        for term in terms:
            hit = self._cache.get(term)
            if hit is not None and now - hit[0] < self._ttl:
                out[term] = hit[1]
            else:
                missing.append(term)
        if missing:
            marks = ",".join("?" * len(missing))
            found = dict(
                conn.execute(f"SELECT term, doc FROM memories_fts_vocab WHERE term IN ({marks})", missing).fetchall()
            )
            if len(self._cache) > self._max:
                self._cache.clear()
            for term in missing:
                out[term] = int(found.get(term, 0))
                self._cache[term] = (now, out[term])
        return out


def _plan(
    conn: sqlite3.Connection, terms: list[str], budget: int, frequencies: DocFrequencies
) -> tuple[list[str], int]:
    """The terms to match, rarest first within the budget, and the postings they cover."""
    df = frequencies.get(conn, terms)
    # A term the vocabulary does not list verbatim (diacritics fold in FTS5) counts as rare.
    ordered = sorted(terms, key=lambda t: (int(df.get(t, 0)), t))
    chosen: list[str] = []
    total = 0
    for term in ordered:
        cost = int(df.get(term, 0))
        if chosen and total + cost > budget:
            break
        chosen.append(term)
        total += cost
    return chosen, total


def keyword_hits(
    conn: sqlite3.Connection,
    user_id: str,
    text: str,
    n: int,
    filters: Filters,
    budget: int,
    frequencies: DocFrequencies,
) -> list[Hit]:
    terms = keyword_terms(text)
    if not terms or n <= 0:
        return []
    chosen, postings = _plan(conn, terms, budget, frequencies)
    match = " OR ".join(_quote(t) for t in chosen)
    bound = ""
    params: list[object] = [match]
    if postings > budget:
        row = conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (match, budget - 1),
        ).fetchone()
        if row is not None:
            bound = "AND memories_fts.rowid >= ? "
            params.append(row[0])
    where, filter_params = filter_sql(filters)
    rows = conn.execute(
        "SELECT m.id, -bm25(memories_fts) AS score FROM memories_fts "
        "JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? {bound}AND m.user_id = ? AND {where} "
        "ORDER BY score DESC, m.id LIMIT ?",
        (*params, user_id, *filter_params, n),
    ).fetchall()
    return [(r[0], float(r[1])) for r in rows]
