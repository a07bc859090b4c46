"""PostgreSQL's own candidate primitives: entities from the ``entities`` array, vectors from pgvector,
keywords from postings held in memory (:mod:`.keyword`)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import numpy as np

from engram.ext import Vector
from engram.model import Filters, Hit
from engram.stores.postgres import distributed, keyword, substrings
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.sql import candidates
from engram.stores.sql.rows import filter_sql

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractContextManager

    import psycopg

__all__ = ["FEW_SUBSTRING_MATCHES", "CandidateMixin", "exact_sql", "hnsw_sql"]

#: Up to this many memories (of every user) holding a substring search's trigrams, or twice the
#: memories asked for, are read one by one through the substring index; more are walked newest first.
FEW_SUBSTRING_MATCHES = 2000


def exact_sql(where: str) -> str:
    """A user's nearest vectors by a scan of their rows; parameters: query, user, dimensions, the
    filters' parameters, n."""
    return (
        "SELECT m.id, 1 - (m.embedding <=> ?) AS score FROM engram_memories m "
        "WHERE m.user_id = ? AND m.embedding IS NOT NULL AND vector_dims(m.embedding) = ? "
        f"AND {where} ORDER BY score DESC, m.id LIMIT ?"
    )


def hnsw_sql(dims: int, where: str) -> str:
    """A user's nearest vectors through the HNSW index of their dimension; parameters: query, user,
    the filters' parameters, n."""
    # The dimension is a literal (an int) so the planner can match the partial HNSW index.
    return (
        f"WITH c AS MATERIALIZED (SELECT m.id, m.embedding::vector({dims}) <=> ?::vector({dims}) AS d "
        f"FROM engram_memories m WHERE m.user_id = ? AND vector_dims(m.embedding) = {dims} "
        f"AND {where} ORDER BY d LIMIT ?) SELECT id, 1 - d AS score FROM c ORDER BY score DESC, id"
    )


class CandidateMixin(candidates.CandidateMixin):
    """Methods of :class:`~engram.stores.postgres.store.PostgresStore`, beside the shared ones."""

    exact_limit: int
    ef_search: int
    _citus: bool  # the tables are distributed by Citus
    _keywords: keyword.KeywordIndex
    keyword_build_inline: int

    if TYPE_CHECKING:

        def _tx(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    substring_indexed = True  # the trigram index of engram.stores.postgres.substrings

    def substring_search(self, user_id: str, terms: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]:
        """As SQLite's: few matches read through the substring index and sorted, many found by
        walking the user's memories newest first (where the index would read every match)."""
        wanted = candidates.substring_terms(terms)
        if not wanted or n <= 0:
            return []
        clause, params = POSTGRES.contains_any("m", wanted)
        grams, grams_params = substrings.grams_any("m", wanted)
        epoch = POSTGRES.epoch("m.created_at")
        if not self._few_substring_matches(wanted, n):
            return self._ordered(user_id, filters, f"AND {clause}", params, epoch, "m.created_at DESC", n)
        return self._ordered(
            user_id, filters, f"AND {grams} AND {clause}", [*grams_params, *params], epoch, substrings.NEWEST, n
        )

    def _few_substring_matches(self, params: Sequence[Any], n: int) -> bool:
        """``params``: the terms (those of :func:`.substrings.grams_any`)."""
        few = max(FEW_SUBSTRING_MATCHES, 2 * n)
        grams, grams_params = substrings.grams_any("m", params)
        row = self._query(
            f"SELECT count(*) FROM (SELECT 1 FROM engram_memories m WHERE {grams} LIMIT ?) AS s",
            (*grams_params, few + 1),
        )
        return int(row[0][0]) <= few

    def by_entities(self, user_id: str, entity_ids: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return []
        where, params = filter_sql(POSTGRES, filters)
        rows = self._query(
            "SELECT m.id, (SELECT count(DISTINCT e) FROM unnest(m.entities) e WHERE e = ANY(?::text[])) AS matches "
            f"FROM engram_memories m WHERE m.user_id = ? AND m.entities && ?::text[] AND {where} "
            "ORDER BY matches DESC, m.importance DESC, m.created_at DESC, m.id LIMIT ?",
            (ids, user_id, ids, *params, n),
        )
        return [(r[0], float(r[1])) for r in rows]

    def _entity_share_rows(self, user_id: str, ids: Sequence[str], newest: int) -> builtins.list[Any]:
        return self._query(
            "WITH w AS (SELECT entities FROM engram_memories WHERE user_id = ? AND created_at > coalesce("
            "(SELECT created_at FROM engram_memories WHERE user_id = ? ORDER BY created_at DESC LIMIT 1 OFFSET ?), "
            "'-infinity')) "
            "SELECT NULL::text, (SELECT count(*) FROM w) UNION ALL "
            "SELECT e, (SELECT count(*) FROM w WHERE w.entities @> ARRAY[e]) FROM unnest(?::text[]) AS e",
            (user_id, user_id, newest, list(ids)),
        )

    def entity_counts(self, user_id: str, entity_ids: Sequence[str], cap: int) -> dict[str, int]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or cap <= 0:
            return {e: 0 for e in ids}
        rows = self._query(
            "SELECT e, (SELECT count(*) FROM (SELECT 1 FROM engram_memories m WHERE m.user_id = ? "
            "AND m.entities @> ARRAY[e] LIMIT ?) s) FROM unnest(?::text[]) AS e",
            (user_id, cap, ids),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def vector_search(self, user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]:
        """Exact (a scan of the user's rows) up to ``exact_limit`` memories, else the HNSW index with
        pgvector's iterative scan so that a per-user filter still yields ``n`` rows."""
        if n <= 0:
            return []
        where, params = filter_sql(POSTGRES, filters)
        q = np.asarray(query, dtype=np.float32)
        dims = int(q.shape[0])

        with self._tx() as c:
            size = POSTGRES.run(
                c, "SELECT count(*) FROM (SELECT 1 FROM engram_memories WHERE user_id = ? LIMIT ?) s",
                (user_id, self.exact_limit + 1),
            ).fetchone()
            if size is not None and int(size[0]) <= self.exact_limit:
                rows = POSTGRES.run(c, exact_sql(where), (q, user_id, dims, *params, n)).fetchall()
            else:
                ef_search = str(min(1000, max(self.ef_search, 2 * n)))  # pgvector's own bound on ef_search
                distributed.set_local(
                    c, {"hnsw.ef_search": ef_search, "hnsw.iterative_scan": "relaxed_order"}, citus=self._citus
                )
                rows = POSTGRES.run(c, hnsw_sql(dims, where), (q, user_id, *params, n)).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def keyword_search(self, user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return keyword.search(self._keywords, self._tx, user_id, text, n, filters, self.keyword_build_inline)
