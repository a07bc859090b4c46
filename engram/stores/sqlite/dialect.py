"""SQLite's spelling of the shared SQL: times as integer microseconds, lists as JSON text and side tables."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.stores.sql.dialect import JSON_TEXT, Dialect, Tx

__all__ = ["SQLITE", "from_us", "insert_rows", "to_us"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_us(value: datetime | None) -> int | None:
    """Integer microseconds since the epoch: exact round-trips and cheap range scans."""
    if value is None:
        return None
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: int | None) -> datetime | None:
    if value is None:
        return None
    return _EPOCH + timedelta(0, 0, value)  # by position: a third quicker than microseconds=value


def insert_rows(c: sqlite3.Connection, head: str, rows: Sequence[Sequence[Any]]) -> None:
    """``head`` (``INSERT ... INTO t (columns)``) over every row of ``rows``, many rows a statement (as
    many as SQLite's bound on parameters lets). A statement a row into a table with triggers (memories)
    kept a statement journal of every page each row touched, spilled to a temporary file: half the
    row insert's cost, and 50 KB written a memory, in a bulk add_many."""
    if not rows:
        return
    width = len(rows[0])
    per = max(1, c.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width)
    row = "(" + _marks(width) + ")"
    for start in range(0, len(rows), per):
        part = rows[start : start + per]
        c.execute(f"{head} VALUES {','.join([row] * len(part))}", [value for one in part for value in one])


def _dumps(names: Sequence[str]) -> str:
    return JSON_TEXT.encode(list(names)) if names else "[]"


@functools.lru_cache(maxsize=4096)
def _names(text: str) -> tuple[str, ...]:
    """A JSON list of tags or entity ids as a tuple: few distinct lists recur across a user's
    memories (the customer a note is about), and decoding was a fifth of a fetch."""
    return () if text == "[]" else tuple(json.loads(text))


class SQLiteDialect(Dialect):
    name = "sqlite"
    true = "1"
    false = "0"
    distinct = "IS NOT"
    row_key = "rowid"
    empty_names = "'[]'"
    # Under SQLite's oldest limit on bound parameters (999), with room for the rest of a statement.
    chunk = 500
    no_limit = "-1"

    time = staticmethod(to_us)
    read_time = staticmethod(from_us)
    names = staticmethod(_dumps)
    read_names = staticmethod(_names)

    def run_many(self, c: Tx, text: str, rows: Iterable[Sequence[Any]]) -> None:
        c.executemany(text, rows)

    def insert_ignore(self, table: str, columns: str) -> str:
        return f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({_marks(columns.count(',') + 1)})"

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        return f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) VALUES ({_marks(len(columns))})"

    def in_(self, expr: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{expr} IN ({_marks(len(values))})", list(values)

    def unindexed(self, expr: str) -> str:
        return "+" + expr

    def through(self, table: str, index: str) -> str:
        return f"{table} INDEXED BY {index}"

    def epoch(self, column: str) -> str:
        return f"{column} / 1e6"

    def greatest(self, a: str, b: str) -> str:
        return f"MAX({a}, {b})"

    def position(self, column: str) -> str:
        return f"instr({column}, ?)"

    def id_list(self, column: str, rest: str) -> str:
        # json_group_array keeps ids intact whatever characters they hold (group_concat would need a separator).
        return f"(SELECT json_group_array({column}) {rest})"

    def nocase_eq(self, column: str) -> str:
        return f"{column} = ? COLLATE NOCASE"

    def tags_all(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return (
            f"(SELECT COUNT(DISTINCT t.tag) FROM memory_tags t WHERE t.memory_rowid = {alias}.rowid "
            f"AND t.tag IN ({_marks(len(tags))})) = ?", [*tags, len(tags)],
        )

    def tags_any(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return (
            f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_rowid = {alias}.rowid "
            f"AND t.tag IN ({_marks(len(tags))}))", list(tags),
        )

    def metadata_eq(self, alias: str, key: str, value: str | float | bool | None) -> tuple[str, list[Any]]:
        path = f'$."{key}"'
        if value is None:
            return f"COALESCE(json_type({alias}.metadata, ?), 'null') = 'null'", [path]
        if isinstance(value, bool):
            return f"json_type({alias}.metadata, ?) = ?", [path, "true" if value else "false"]
        return f"json_extract({alias}.metadata, ?) = ?", [path, value]


    def text_contains(self, expr: str, needle: str) -> str:
        return f"instr({expr}, {needle}) > 0"

    def metadata_test(self, alias: str, key: str, test: str, operand: Any) -> tuple[str, list[Any]]:
        path = f'$."{key}"'
        kind = f"json_type({alias}.metadata, ?)"
        value = f"json_extract({alias}.metadata, ?)"
        if test in ("null", "present"):
            return f"COALESCE({kind}, 'null') {'=' if test == 'null' else '<>'} 'null'", [path]
        if test in ("contains", "icontains"):
            same = self.fold if test == "icontains" else str
            return (
                f"CASE {kind} WHEN 'text' THEN instr({same(value)}, {same('?')}) > 0 "
                f"WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each({alias}.metadata, ?) e "
                f"WHERE e.type = 'text' AND {same('e.value')} = {same('?')}) ELSE 0 END",
                [path, path, operand, path, operand],
            )
        if isinstance(operand, bool):
            return f"{kind} = ?", [path, "true" if operand else "false"]
        sign = _SIGNS[test]
        types = "'text'" if isinstance(operand, str) else "'integer', 'real'"
        return f"CASE WHEN {kind} IN ({types}) THEN {value} {sign} ? ELSE 0 END", [path, path, operand]

    def contains_any(self, alias: str, terms: Sequence[str]) -> tuple[str, list[Any]]:
        # The trigram index (engram.stores.sqlite.substrings): each term a phrase, quotes doubled.
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        return f"{alias}.rowid IN (SELECT rowid FROM substring_fts WHERE substring_fts MATCH ?)", [match]

    def names_days(self, alias: str, user_id: str, days: Sequence[tuple[int, int]],
                   said: tuple[Any, Any]) -> tuple[str, list[Any]]:
        # The side table (engram.stores.sqlite.named_days) is read first, its time bounds checked
        # in its index: few memories name a day, fewer were said when the read asks.
        ranges = " OR ".join("day BETWEEN ? AND ?" for _ in days)
        bounds = "".join(f" AND said {sign} ?" for sign, at in zip((">=", "<="), said, strict=True) if at is not None)
        params = [user_id, *(n for pair in days for n in pair), *(at for at in said if at is not None)]
        rows = f"SELECT memory_rowid FROM memory_days WHERE user_id = ? AND ({ranges}){bounds}"
        return f"{alias}.rowid IN ({rows})", params


_SIGNS = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _marks(n: int) -> str:
    return ",".join("?" * n)


SQLITE = SQLiteDialect()
