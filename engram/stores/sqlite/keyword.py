"""BM25 keyword candidates from FTS5, with each user's own statistics, bounded in work.

The index holds terms computed in Python (:func:`engram.text.memory_terms`) behind a key of their
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
from dataclasses import dataclass

from engram.model import Filters, Hit
from engram.stores.sql.rows import filter_sql
from engram.stores.sqlite.dialect import SQLITE
from engram.stores.sqlite.schema import user_key
from engram.text import bm25, plan_keywords, query_terms

__all__ = ["DEFAULT_POSTINGS_BUDGET", "RESCORE_POOL", "KeywordCache", "Ranking", "keyword_hits"]

DEFAULT_POSTINGS_BUDGET = 1000
RESCORE_POOL = 100


def _quote(term: str) -> str:
    # Quoted, each term is a plain string to FTS5: operators or column filters in user text are inert.
    return '"' + term.replace('"', '""') + '"'


class KeywordCache:
    """What keyword searches may reuse; used under the store's lock.

    * Each user's document frequencies of the terms queried so far, kept while the user's
      ``keyword_stats.version`` stays (every change to their keyword index moves it, in any
      process): fts5vocab counts a term's documents by reading its whole posting list, about 1 ms a
      search at 100k memories.
    * The last FTS5 ranking, kept while the file is unchanged (``total_changes`` of this connection,
      ``data_version`` for the others): a time-scoped query searches its keywords twice, in and out
      of its range, and both rank the same matches before their filters differ.
    """

    def __init__(self, max_users: int = 256, max_terms: int = 20_000) -> None:
        self._users: dict[str, tuple[int, dict[str, int]]] = {}
        self._max_users = max_users
        self._max_terms = max_terms
        self._ranked: tuple[tuple[object, ...], Ranking] | None = None

    def frequencies(self, conn: sqlite3.Connection, user_id: str, version: int, keyed: list[str]) -> dict[str, int]:
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

    def ranking(self, conn: sqlite3.Connection, match: str, bounded: bool, budget: int, limit: int) -> Ranking:
        state = (conn.total_changes, conn.execute("PRAGMA data_version").fetchone()[0], match, bounded, budget, limit)
        if self._ranked is None or self._ranked[0] != state:
            self._ranked = (state, _ranking(conn, match, bounded, budget, limit))
        return self._ranked[1]


@dataclass(frozen=True)
class Ranking:
    """FTS5's best ``limit`` matches as (rowid, bm25) in its order, and the lowest rowid considered
    (None: all of them)."""

    bound: int | None
    rows: list[tuple[int, float]]


def _ranking(conn: sqlite3.Connection, match: str, bounded: bool, budget: int, limit: int) -> Ranking:
    bound = None
    if bounded:
        # Even the rarest term alone is over budget: score only its most recent matches.
        last = conn.execute(
            "SELECT rowid FROM keyword_fts WHERE keyword_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (match, budget - 1),
        ).fetchone()
        bound = None if last is None else int(last[0])
    rows = conn.execute(
        "SELECT rowid, bm25(keyword_fts) AS s FROM keyword_fts "
        f"WHERE keyword_fts MATCH ? {'' if bound is None else 'AND rowid >= ? '}ORDER BY s LIMIT ?",
        (match, *([] if bound is None else [bound]), limit),
    ).fetchall()
    return Ranking(bound, [(int(r[0]), float(r[1])) for r in rows])


def keyword_hits(
    conn: sqlite3.Connection, user_id: str, text: str, n: int, filters: Filters, budget: int, cache: KeywordCache,
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
    plan = plan_keywords(keyed, cache.frequencies(conn, user_id, int(row[2]), keyed), docs, budget)
    if plan is None:
        return []
    avg_length = total / docs if docs else 1.0
    chosen, idf, ideal, postings = plan.terms, plan.idf, plan.ideal, plan.postings
    match = " OR ".join(_quote(t) for t in chosen)
    where, filter_params = filter_sql(SQLITE, filters)
    pool = max(RESCORE_POOL, n)
    # Every match is this user's (the terms carry the user's key), so FTS5 can rank alone first and
    # the filters join only the best; when they reject too many, rank again with the join.
    ranking = cache.ranking(conn, match, postings > budget, budget, 2 * pool)
    # "+user_id": the planner would rather walk the user's rows by an index on the filters.
    kept = dict(conn.execute(
        f"SELECT m.rowid, m.id FROM memories m WHERE m.rowid IN ({','.join('?' * len(ranking.rows))}) "
        f"AND +m.user_id = ? AND {where}",
        (*(r for r, _ in ranking.rows), user_id, *filter_params),
    ).fetchall()) if ranking.rows else {}
    ordered = sorted((s, str(kept[r]), r) for r, s in ranking.rows if r in kept)
    top = [(memory_id, rowid) for _, memory_id, rowid in ordered[:pool]]
    if len(top) < pool and postings > 2 * pool:
        bound = "" if ranking.bound is None else "AND keyword_fts.rowid >= ? "
        top = conn.execute(
            "SELECT m.id, keyword_fts.rowid FROM keyword_fts JOIN memories m ON m.rowid = keyword_fts.rowid "
            f"WHERE keyword_fts MATCH ? {bound}AND m.user_id = ? AND {where} "
            "ORDER BY bm25(keyword_fts), m.id LIMIT ?",
            (match, *([] if ranking.bound is None else [ranking.bound]), user_id, *filter_params, pool),
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
        counts = Counter(words)  # counted in C; the wanted terms keep their first-occurrence order
        score = bm25(((float(c), idf[t]) for t, c in counts.items() if t in wanted), len(words), avg_length) / ideal
        scored.append((str(memory_id), score))
    scored.sort(key=lambda hit: (-hit[1], hit[0]))
    return scored[:n]
