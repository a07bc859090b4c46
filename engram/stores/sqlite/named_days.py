"""The days each memory names (:func:`engram.days.indexed_days`), one row per (memory, day) with
when it was said, read by the ``mentioned`` source through ``(user_id, day, said)``: the read's
time bounds are checked in the index, not against each memory's row. A memory's rows go with it
(``ON DELETE CASCADE``) and are written again with it when it changes (a change deletes the row
and inserts it anew)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from engram.days import indexed_days, names_a_month, names_a_quarter, shortens_a_day
from engram.model import MemoryRecord
from engram.stores.sqlite.dialect import from_us, to_us

__all__ = ["DAYS_INSERT", "create_named_days", "day_rows", "index_named_days", "reindex_month_names",
           "reindex_quarter_names", "reindex_shortened_days"]

#: The insert of a memory's rows, without its VALUES (a batch writes many rows in one statement).
DAYS_INSERT = "INSERT OR IGNORE INTO memory_days (memory_rowid, user_id, day, said)"
_INSERT = f"{DAYS_INSERT} VALUES (?, ?, ?, ?)"
_BATCH = 1_000


def index_named_days(c: sqlite3.Connection, rowid: int, record: MemoryRecord) -> None:
    """The rows of the days ``record`` names (none for most memories)."""
    rows = day_rows(rowid, record)
    if rows:
        c.executemany(_INSERT, rows)


def day_rows(rowid: int, record: MemoryRecord) -> list[tuple[int, str, int, int | None]]:
    """The ``memory_days`` rows of ``record`` stored at ``rowid``: one per day it names."""
    days = indexed_days(record.content, record.created_at)
    said = to_us(record.created_at) if days else None
    return [(rowid, record.user_id, day, said) for day in days]


def create_named_days(conn: sqlite3.Connection) -> None:
    """The table, its index, and the rows of every memory stored before it (idempotent)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_days ("
        "memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE, "
        "user_id TEXT NOT NULL, day INTEGER NOT NULL, said INTEGER NOT NULL, PRIMARY KEY (memory_rowid, day))"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS memory_days_user_day ON memory_days (user_id, day, said)")
    _index_stored(conn, lambda content: True)


def reindex_month_names(conn: sqlite3.Connection) -> None:
    """The days of the memories that name a month by its whole name read again (the months gone by
    they tell of, :func:`engram.days.indexed_days`): only those, their rows replaced."""
    _index_stored(conn, names_a_month, replace=True)


def reindex_shortened_days(conn: sqlite3.Connection) -> None:
    """The days of the memories that hold a day as chats shorten it ("saw him yday", "went out on
    fri") read again: only those, their rows replaced."""
    _index_stored(conn, shortens_a_day, replace=True)


def reindex_quarter_names(conn: sqlite3.Connection) -> None:
    """The days of the memories that name a quarter ("Q3 churn came out at 5.4%") read again: only
    those, their rows replaced."""
    _index_stored(conn, names_a_quarter, replace=True)


def _index_stored(conn: sqlite3.Connection, which: Callable[[str], bool], *, replace: bool = False) -> None:
    """The rows of the stored memories whose content ``which`` picks (``replace``: instead of theirs),
    read in batches of rowids."""
    last = 0
    while True:
        rows: Sequence[tuple[int, str, str, int]] = conn.execute(
            "SELECT rowid, user_id, content, created_at FROM memories WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (last, _BATCH),
        ).fetchall()
        if not rows:
            return
        for rowid, user_id, content, created in rows:
            said = from_us(created)
            if said is not None and which(content):
                if replace:
                    conn.execute("DELETE FROM memory_days WHERE memory_rowid = ?", (rowid,))
                conn.executemany(_INSERT, [(rowid, user_id, day, created) for day in indexed_days(content, said)])
        last = rows[-1][0]
