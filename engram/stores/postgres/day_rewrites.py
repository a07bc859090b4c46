"""Migrations that read stored memories again in batches: the keyset reader they share, and the
days' index read again for the memories a change of :func:`engram.days.indexed_days` concerns."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from engram.days import indexed_days
from engram.stores.postgres.dialect import day_keys
from engram.timeparts import SHORT_WEEKDAY

__all__ = ["MONTH_NAMES", "QUARTER_NAMES", "SHORTENED_DAYS", "batches", "reindex_days"]

#: What a memory naming a month holds, in SQL (the locale's month names would follow the server's).
MONTH_NAMES = "(january|february|march|april|may|june|july|august|september|october|november|december)"
#: What a memory naming a quarter holds ("Q3", "q3 2026"), in SQL.
QUARTER_NAMES = r"\mq[1-4]\M"
#: What a memory holding a day as chats shorten it holds ("yday", "fri"), in SQL (the same words as
#: engram.days reads, between PostgreSQL's word bounds).
SHORTENED_DAYS = r"\m(yday|" + SHORT_WEEKDAY + r")\M"


def batches(conn: psycopg.Connection[Any], columns: str, only: str = "", batch: int = 1000) -> Iterator[list[Any]]:
    """Every memory's ``user_id, id`` and ``columns``, ``batch`` rows at a time, in key order (for a
    migration that rewrites each row: a keyset read, not one growing offset)."""
    last = ""
    while True:
        rows = conn.execute(
            f"SELECT user_id, id, {columns} FROM engram_memories WHERE (user_id || chr(1) || id) > %s {only}"
            "ORDER BY user_id || chr(1) || id LIMIT %s", (last, batch),
        ).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0] + "\x01" + rows[-1][1]


def reindex_days(conn: psycopg.Connection[Any], which: Callable[[str], bool], pattern: str) -> None:
    """The days of the memories whose content matches ``pattern`` (a first cut in SQL) and ``which``
    read again; only the rows whose days change are written."""
    for rows in batches(conn, "content, created_at, named_days", f"AND content ~* '{pattern}' "):
        changes = [(keys, user_id, memory_id, keys) for user_id, memory_id, content, said, held in rows
                   if which(content) and sorted(keys := day_keys(user_id, indexed_days(content, said)))
                   != sorted(held or [])]
        if changes:
            with conn.cursor() as cur:
                cur.executemany("UPDATE engram_memories SET named_days = %s WHERE user_id = %s AND id = %s "
                                "AND named_days IS DISTINCT FROM %s", changes)
