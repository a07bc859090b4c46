"""BM25 keyword candidates from FTS5, with each user's own statistics, bounded in work.

The index holds terms computed in Python (:func:`engram.text.index_terms`) behind a key of their
user (:func:`.schema.user_key`), so a query reads only its user's postings, and the vocabulary gives
that user's document frequencies; ``keyword_stats`` gives their document count and total length.
BM25 is then computed here, in Python, with the shared formula of :mod:`engram.text`: another
user's memories change neither which memories match nor their scores.

FTS5 still does the matching and a first ordering: scoring every row that matches a common word
would cost tens of milliseconds at 100k memories, so terms are taken rarest first (rare terms carry
almost all of BM25's weight) while their postings stay within a budget, and only the best
:data:`RESCORE_POOL` rows by FTS5's own bm25() are scored exactly.

A score is BM25 divided by the score of a memory of average length holding each query term once:
1.0 means "all of the query's words", about 0.5 "the rarer half of them"; more occurrences can take
it a little above 1.
"""

from __future__ import annotations

import sqlite3
from collections import Counter

from engram.model import Filters, Hit
from engram.stores.sqlite.rows import filter_sql
from engram.stores.sqlite.schema import user_key
from engram.text import bm25, plan_keywords, query_terms

__all__ = ["DEFAULT_POSTINGS_BUDGET", "RESCORE_POOL", "DocumentFrequencies", "keyword_hits"]

DEFAULT_POSTINGS_BUDGET = 1000
RESCORE_POOL = 100


def _quote(term: str) -> str:
    # Quoted, each term is a plain string to FTS5: operators or column filters in user text are inert.
    return '"' + term.replace('"', '""') + '"'


class DocumentFrequencies:
    """Each user's document frequencies of the terms queried so far, kept while the user's
    ``keyword_stats.version`` stays (every change to their keyword index moves it, in any process).
    Used under the store's lock.

    fts5vocab counts a term's documents by reading its whole posting list: about 1 ms a query at
    100k memories, for numbers that change only when the user's memories do.
    """

    def __init__(self, max_users: int = 256, max_terms: int = 20_000) -> None:
        self._users: dict[str, tuple[int, dict[str, int]]] = {}
        self._max_users = max_users
        self._max_terms = max_terms

    def get(self, conn: sqlite3.Connection, user_id: str, version: int, keyed: list[str]) -> dict[str, int]:
        entry = self._users.get(user_id)
        if entry is None or entry[0] != version:
            if len(self._users) >= self._max_users:
                self._users.clear()
            entry = self._users[user_id] = (version, {})
        known = entry[1]
        missing = [t for t in keyed if t not in known]
        if missing:
            if len(known) + len(missing) > self._max_terms:
                known.clear()
            found = dict(conn.execute(
                f"SELECT term, doc FROM keyword_vocab WHERE term IN ({','.join('?' * len(missing))})", missing
            ).fetchall())
            known.update((t, int(found.get(t, 0))) for t in missing)
        return {t: known[t] for t in keyed}


def keyword_hits(
    conn: sqlite3.Connection, user_id: str, text: str, n: int, filters: Filters, budget: int,
    frequencies: DocumentFrequencies,
) -> list[Hit]:
    terms = query_terms(text)
    if not terms or n <= 0:
        return []
    key = user_key(user_id)
    keyed = [key + t for t in terms]
    row = conn.execute("SELECT docs, terms, version FROM keyword_stats WHERE user_id = ?", (user_id,)).fetchone()
    if row is None:
        return []  # no memory of this user was ever indexed
    docs, total = int(row[0]), int(row[1])
    plan = plan_keywords(keyed, frequencies.get(conn, user_id, int(row[2]), keyed), docs, budget)
    if plan is None:
        return []
    avg_length = total / docs if docs else 1.0
    chosen, idf, ideal, postings = plan.terms, plan.idf, plan.ideal, plan.postings
    match = " OR ".join(_quote(t) for t in chosen)
    bound = ""
    params: list[object] = [match]
    if postings > budget:
        # Even the rarest term alone is over budget: score only its most recent matches.
        last = conn.execute(
            "SELECT rowid FROM keyword_fts WHERE keyword_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (match, budget - 1),
        ).fetchone()
        if last is not None:
            bound = "AND keyword_fts.rowid >= ? "
            params.append(last[0])
    where, filter_params = filter_sql(filters)
    pool = max(RESCORE_POOL, n)
    # Every match is this user's (the terms carry the user's key), so FTS5 can rank alone first and
    # the filters join only the best; when they reject too many, rank again with the join.
    top = conn.execute(
        "SELECT m.id, t.rowid FROM (SELECT rowid, bm25(keyword_fts) AS s FROM keyword_fts "
        f"WHERE keyword_fts MATCH ? {bound}ORDER BY s LIMIT ?) AS t JOIN memories m ON m.rowid = t.rowid "
        f"WHERE m.user_id = ? AND {where} ORDER BY t.s, m.id",
        (*params, 2 * pool, user_id, *filter_params),
    ).fetchall()[:pool]
    if len(top) < pool and postings > 2 * pool:
        top = conn.execute(
            "SELECT m.id, keyword_fts.rowid FROM keyword_fts JOIN memories m ON m.rowid = keyword_fts.rowid "
            f"WHERE keyword_fts MATCH ? {bound}AND m.user_id = ? AND {where} "
            "ORDER BY bm25(keyword_fts), m.id LIMIT ?",
            (*params, user_id, *filter_params, pool),
        ).fetchall()
    # The indexed terms are read only for the pool: reading them for every match costs more than
    # the search itself.
    marks = ",".join("?" * len(top))
    documents = dict(conn.execute(f"SELECT rowid, terms FROM keyword_fts WHERE rowid IN ({marks})",
                                  [r[1] for r in top]).fetchall()) if top else {}
    rows = [(memory_id, documents.get(rowid, "")) for memory_id, rowid in top]
    wanted = set(chosen)
    scored: list[Hit] = []
    for memory_id, document in rows:
        words = str(document).split()
        counts = Counter(w for w in words if w in wanted)
        score = bm25(((float(c), idf[t]) for t, c in counts.items()), len(words), avg_length) / ideal
        scored.append((str(memory_id), score))
    scored.sort(key=lambda hit: (-hit[1], hit[0]))
    return scored[:n]
