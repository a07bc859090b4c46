"""PostgreSQL's spelling of the shared SQL: ``%s`` parameters, timestamptz, text[] arrays, json.

Ids travel as one ``text[]`` parameter (``= ANY(?::text[])``) however many there are. Nothing here
imports psycopg.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from engram.stores.sql.dialect import Dialect, Tx

__all__ = ["POSTGRES", "day_keys"]


def _time(value: datetime | None) -> datetime | None:
    return value


def _read_time(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def _names(names: Sequence[str]) -> list[str]:
    return list(names)


def _read_names(value: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(value or ())


def day_keys(user_id: str, days: Sequence[int]) -> list[str]:
    """A memory's days as the keys of the ``named_days`` index (engram.days.indexed_days): with the
    user, so that one user's read of a day is answered from that user's entries, not every user's."""
    return [f"{user_id}\x1f{day}" for day in days]


class PostgresDialect(Dialect):
    name = "postgres"
    prefix = "engram_"

    time = staticmethod(_time)
    read_time = staticmethod(_read_time)
    names = staticmethod(_names)
    read_names = staticmethod(_read_names)

    def __init__(self) -> None:
        super().__init__()
        self._texts: dict[str, str] = {}

    def sql(self, text: str) -> str:
        # Shared SQL holds no '?' but its parameters (no jsonb '?' operator), and a literal '%'
        # must be doubled for psycopg.
        done = self._texts.get(text)
        if done is None:
            if len(self._texts) > 4096:
                self._texts.clear()
            done = self._texts[text] = text.replace("%", "%%").replace("?", "%s")
        return done

    def run_many(self, c: Tx, text: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = list(rows)
        if batch:
            with c.cursor() as cur:
                cur.executemany(self.sql(text), batch)

    def insert_ignore(self, table: str, columns: str) -> str:
        marks = ", ".join("?" * (columns.count(",") + 1))
        return f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING"

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in key)
        return (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
        )

    def in_(self, expr: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{expr} = ANY(?::text[])", [list(values)]

    def epoch(self, column: str) -> str:
        return f"EXTRACT(EPOCH FROM {column})::float8"

    def sortable(self, column: str) -> str:
        return self.epoch(column)

    def position(self, column: str) -> str:
        return f"strpos({column}::text, ?)"

    def id_list(self, column: str, rest: str) -> str:
        return f"ARRAY(SELECT {column} {rest})"

    def nocase_eq(self, column: str) -> str:
        return f"lower({column}) = lower(?)"

    def tags_all(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{alias}.tags @> ?::text[]", [list(tags)]

    def tags_any(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{alias}.tags && ?::text[]", [list(tags)]

    def metadata_eq(self, alias: str, key: str, value: str | float | bool | None) -> tuple[str, list[Any]]:
        field = f"({alias}.metadata -> ?::text)"
        if value is None:
            return f"COALESCE(json_typeof{field}, 'null') = 'null'", [key]
        if isinstance(value, bool):
            return f"json_typeof{field} = 'boolean' AND {field}::text = ?", [key, key, "true" if value else "false"]
        if isinstance(value, int | float):
            # SQLite's json_extract gives true/false as 1/0, so numbers match booleans there too.
            cast = "numeric" if isinstance(value, int) else "float8"
            return (
                f"(CASE json_typeof{field} WHEN 'number' THEN ({field}::text)::{cast} "
                f"WHEN 'boolean' THEN ({field}::text = 'true')::int::{cast} END) = ?::{cast}", [key, key, key, value],
            )
        return f"json_typeof{field} = 'string' AND ({alias}.metadata ->> ?::text) = ?", [key, key, value]


    binary = ' COLLATE "C"'
    text_param = "?::text"

    def fold(self, expr: str) -> str:
        # Under the C collation lower() folds ASCII letters only, as SQLite's does.
        return f'lower(({expr}) COLLATE "C")'

    def text_contains(self, expr: str, needle: str) -> str:
        return f"strpos({expr}, {needle}) > 0"

    def metadata_test(self, alias: str, key: str, test: str, operand: Any) -> tuple[str, list[Any]]:
        field = f"({alias}.metadata -> ?::text)"
        kind = f"json_typeof{field}"
        if test in ("null", "present"):
            return f"COALESCE({kind}, 'null') {'=' if test == 'null' else '<>'} 'null'", [key]
        text = f"({alias}.metadata ->> ?::text)"
        if test in ("contains", "icontains"):
            same = self.fold if test == "icontains" else str
            element, wanted = same("e #>> '{}'"), same("?::text")
            return (
                f"CASE {kind} WHEN 'string' THEN strpos({same(text)}, {wanted}) > 0 "
                f"WHEN 'array' THEN EXISTS (SELECT 1 FROM json_array_elements{field} AS e "
                f"WHERE json_typeof(e) = 'string' AND {element} = {wanted}) ELSE FALSE END",
                [key, key, operand, key, operand],
            )
        if isinstance(operand, bool):
            return f"COALESCE({kind} = 'boolean' AND {field}::text = ?, FALSE)", \
                [key, key, "true" if operand else "false"]
        sign = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[test]
        # CASE, not AND: PostgreSQL may evaluate either side of an AND first, and the cast fails on a text.
        if isinstance(operand, str):
            return f"CASE WHEN {kind} = 'string' THEN {text}{self.binary} {sign} ?::text ELSE FALSE END", \
                [key, key, operand]
        return f"CASE WHEN {kind} = 'number' THEN ({field}::text)::float8 {sign} ?::float8 ELSE FALSE END", \
            [key, key, operand]

    def names_days(self, alias: str, user_id: str, days: Sequence[tuple[int, int]],
                   said: tuple[Any, Any]) -> tuple[str, list[Any]]:
        # The GIN index on the row's days, keyed with the user (day_keys),
        # answers an overlap; the time bounds are the filters' own, on the row.
        return f"{alias}.named_days && ?::text[]", [day_keys(user_id, [n for a, b in days for n in range(a, b + 1)])]

    def contains_any(self, alias: str, terms: Sequence[str]) -> tuple[str, list[Any]]:
        # A case-insensitive LIKE, folding as the substring index does (engram_fold, see
        # engram.stores.postgres.substrings): under the C locale ILIKE folds ASCII letters only.
        patterns = ["%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for t in terms]
        like = "LIKE ANY (ARRAY(SELECT engram_fold(p) FROM unnest(?::text[]) AS p))"
        fields = ", ".join(f"{alias}.{name}" for name in _SEARCHED)
        text = f"engram_fold(concat_ws(chr(31), {fields}, array_to_string({alias}.tags, chr(31)))) {like}"
        values = f"engram_fold(engram_metadata_strings({alias}.metadata)) {like}"
        if any(c in '"\\' or c < " " for t in terms for c in t):
            return f"({text} OR {values})", [patterns, patterns]
        # The metadata's JSON text holds every string value as written but for quotes, backslashes
        # and control characters (ensure_ascii=False): a cheap test first, the values read only where it holds.
        raw = f"engram_fold({alias}.metadata::text) {like}"
        return f"({text} OR ({raw} AND {values}))", [patterns, patterns, patterns]


#: The columns of a memory's searched text before its tags and metadata (as SQLite's substring index).
_SEARCHED = ("content", "subject", "predicate", "object", "trigger_text", "action_text")

POSTGRES = PostgresDialect()
