"""PostgreSQL's substring index (migration 10): a GIN index over the trigrams of each memory's
searched text, from core PostgreSQL only (no pg_trgm: builds without contrib, as the test
server's, lack it); on Citus it is created on every shard, its functions on every node.

The searched text is what :meth:`~engram.stores.postgres.dialect.PostgresDialect.contains_any`
matches: content, subject, predicate, object, trigger, action, each tag and each string value of the
metadata, joined by the unit separator (char 31). The migration creates these functions:

* ``engram_fold(text)``: ``lower()`` under a collation that folds every letter ("ÉCOLE" to "école"),
  the database's own when it does, else the first such of ``C.utf8`` and ICU's root; a database in
  the C locale whose server has neither folds ASCII letters only. Both the index and the match
  fold with it, so they agree whatever it does.
* ``engram_trigrams(text)``: every 3-character substring (GIN keeps each key once per row): the
  text cut in threes from each of its first three characters by ``regexp_replace``, a quarter of
  the cost of a loop (~30 against ~120 us for 150 characters), which remains for a text holding
  char 1 (the cut's mark).
* ``engram_metadata_strings(json)``: the metadata's string values, as the match reads them.
* ``engram_searched_grams(...)``: the trigrams of the folded searched text of a row's columns; the
  index is over it, and a term's rows are those whose trigrams contain all of the term's. In
  PL/pgSQL: PostgreSQL runs it as an SQL function without inlining it, at 160 us a row against 45.

A search takes the rows the index gives (a bitmap OR over the terms) and checks each with the
fold-and-LIKE match; the index only narrows, so the answer is the match's. Function bodies name
their schema: PostgreSQL 17 runs index expressions with only ``pg_catalog`` on the search path
during maintenance. ANALYZE skips the index's expression (statistics target 0): computing it for
every sampled row cost seconds, and the store chooses the plan itself (:data:`NEWEST`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

__all__ = ["INDEX", "NEWEST", "create_substring_index", "grams_any"]

INDEX = "engram_memories_substrings"
#: The order of a search through the index. Newest first as ``created_at DESC``, but not by the
#: (user, created_at) index: walked newest first, a rare term's search read every row of the user.
NEWEST = "(m.created_at + interval '0') DESC"

_COLUMNS = "content, subject, predicate, object, trigger_text, action_text, tags, metadata"

#: Tried in turn for ``engram_fold`` when the database's own collation does not fold "É".
_COLLATIONS = ("C.utf8", "C.UTF-8", "und-x-icu")

_FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION {schema}.engram_fold(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT lower($1{collate}) $$;
CREATE OR REPLACE FUNCTION {schema}.engram_trigrams_loop(t text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    grams text[] := '{{}}';
BEGIN
    FOR i IN 1 .. length(t) - 2 LOOP
        grams := array_append(grams, substr(t, i, 3));
    END LOOP;
    RETURN grams;
END $$;
CREATE OR REPLACE FUNCTION {schema}.engram_trigrams(t text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(t, chr(1)) > 0 THEN {schema}.engram_trigrams_loop(t) ELSE
        (string_to_array(regexp_replace(t, '(...)', '\1' || chr(1), 'g'), chr(1)))[1:length(t) / 3]
        || (string_to_array(regexp_replace(substr(t, 2), '(...)', '\1' || chr(1), 'g'), chr(1)))[1:(length(t) - 1) / 3]
        || (string_to_array(regexp_replace(substr(t, 3), '(...)', '\1' || chr(1), 'g'), chr(1)))[1:(length(t) - 2) / 3]
    END
$$;
CREATE OR REPLACE FUNCTION {schema}.engram_metadata_strings(json) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT string_agg(v #>> '{{}}', chr(31)) FROM jsonb_path_query($1::jsonb, 'strict $.**') AS v
    WHERE jsonb_typeof(v) = 'string' $$;
CREATE OR REPLACE FUNCTION {schema}.engram_searched_grams(
    content text, subject text, predicate text, object text, trigger_text text, action_text text,
    tags text[], metadata json
) RETURNS text[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 1000 AS $$
BEGIN
    RETURN {schema}.engram_trigrams({schema}.engram_fold(concat_ws(chr(31), content, subject, predicate, object,
        trigger_text, action_text, array_to_string(tags, chr(31)), {schema}.engram_metadata_strings(metadata))));
END $$;
"""


def _collation(conn: psycopg.Connection[Any]) -> str | None:
    """The collation ``engram_fold`` lowers under: None for the database's own."""
    for name in (None, *_COLLATIONS):
        collate = sql.SQL("") if name is None else sql.SQL(" COLLATE {}").format(sql.Identifier(name))
        try:
            with conn.transaction():  # a savepoint: a collation this server cannot use raises
                row = conn.execute(sql.SQL("SELECT lower('ÉΣ'{})").format(collate)).fetchone()
        except psycopg.Error:
            continue
        if row is not None and row[0] == "éσ":
            return name
    return None


def create_substring_index(conn: psycopg.Connection[Any]) -> None:
    """The functions and the index (idempotent, as migrations from 6 on), in the caller's transaction."""
    row = conn.execute("SELECT current_schema()").fetchone()
    schema = sql.Identifier(str(row[0]) if row else "public")
    name = _collation(conn)
    collate = sql.SQL("") if name is None else sql.SQL(" COLLATE {}").format(sql.Identifier(name))
    conn.execute(sql.SQL(_FUNCTIONS).format(schema=schema, collate=collate))
    conn.execute("SET LOCAL maintenance_work_mem = '256MB'")  # the GIN build sorts its keys in memory
    conn.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON engram_memories USING gin (engram_searched_grams({_COLUMNS}))")
    conn.execute(f"ALTER INDEX {INDEX} ALTER COLUMN 1 SET STATISTICS 0")


def grams_any(alias: str, terms: Sequence[str]) -> tuple[str, list[Any]]:
    """The rows whose trigrams hold every trigram of one of ``terms`` at least (a superset of the
    rows whose searched text contains one): a clause the index answers, and its parameters."""
    row = f"engram_searched_grams({', '.join(f'{alias}.{c}' for c in _COLUMNS.split(', '))})"
    clause = " OR ".join([f"{row} @> engram_trigrams(engram_fold(?))"] * len(terms))
    return f"({clause})", list(terms)
