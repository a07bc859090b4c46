"""What differs between the SQL of the two backends, so that everything else is written once.

Shared SQL spells every parameter ``?`` and names tables through the dialect (``d.memories``);
:meth:`Dialect.sql` turns it into the backend's text. A backend subclasses :class:`Dialect` with
its time and list encodings and the few expressions whose spelling differs (upserts, JSON, arrays).
Nothing here imports a database driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

__all__ = ["JSON_TEXT", "Dialect", "Tx"]

#: ``json.dumps(value, ensure_ascii=False)``, built once: ``json.dumps`` with an argument builds an
#: encoder a call, and every memory written encodes its tags, entities and metadata.
JSON_TEXT = json.JSONEncoder(ensure_ascii=False)

#: A connection inside a transaction: sqlite3's and psycopg's both ``execute`` and return a cursor
#: with ``fetchone``, ``fetchall`` and ``rowcount``.
Tx = Any


class Dialect:
    """Defaults are standard SQL as PostgreSQL spells it; SQLite's dialect overrides where it differs.
    A method that raises NotImplementedError has no common spelling: each backend gives its own."""

    name: str = ""
    prefix: str = ""  # of every table name
    true: str = "TRUE"
    false: str = "FALSE"
    distinct: str = "IS DISTINCT FROM"  # NULL-safe inequality
    row_key: str = "id"  # the column a write returns to name a row to the backend's own caches
    empty_names: str = "'{}'"  # the stored literal of an empty alias or tag list
    chunk: int = 10_000  # ids per statement when a list of ids is sent
    no_limit: str = "ALL"  # a LIMIT that keeps every row (an OFFSET needs one on SQLite)

    def __init__(self) -> None:
        p = self.prefix
        self.memories, self.links, self.entities, self.meta = p + "memories", p + "links", p + "entities", p + "meta"
        self.ontology, self.relations = p + "entity_ontology", p + "entity_relations"
        self.log, self.feedback, self.weights = p + "retrieval_log", p + "retrieval_feedback", p + "tuned_weights"
        self.history = p + "memory_history"  # the audit log (engram.stores.sql.history)
        #: Every per-user table beyond memories, links and entities (what forget_user also empties).
        self.knowledge = (self.ontology, self.relations, self.log, self.feedback, self.weights, self.history)

    # -- statements -----------------------------------------------------------------------------------
    def sql(self, text: str) -> str:
        """Shared SQL (``?`` parameters) as this backend's text."""
        return text

    def run(self, c: Tx, text: str, params: Sequence[Any] = ()) -> Any:
        return c.execute(self.sql(text), params)

    def run_many(self, c: Tx, text: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def insert_ignore(self, table: str, columns: str) -> str:
        """An INSERT of one row that does nothing when a key is already taken."""
        raise NotImplementedError

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        """An INSERT of one row that overwrites the other columns of the row with the same key."""
        raise NotImplementedError

    # -- values ---------------------------------------------------------------------------------------
    time: Callable[[datetime | None], Any]  # a datetime as a parameter
    read_time: Callable[[Any], datetime | None]  # a stored time as an aware UTC datetime
    names: Callable[[Sequence[str]], Any]  # tags, entity ids or aliases as a parameter
    read_names: Callable[[Any], tuple[str, ...]]

    @staticmethod
    def read_json(value: Any) -> Any:
        """A stored JSON value: text on SQLite, already decoded by psycopg for ``json`` columns."""
        return json.loads(value) if isinstance(value, str | bytes) else value

    def in_(self, expr: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``expr`` is one of ``values`` (not empty), and the parameters that says it with."""
        raise NotImplementedError

    # -- expressions ----------------------------------------------------------------------------------
    def unindexed(self, expr: str) -> str:
        """``expr`` such that the planner uses no index on it (only SQLite takes the hint)."""
        return expr

    def through(self, table: str, index: str) -> str:
        """``table`` (with its alias) read through ``index`` (only SQLite takes the hint: without statistics its
        planner may prefer an index that matches a filter and walk all of a user's rows)."""
        return table

    def epoch(self, column: str) -> str:
        """A time column as float seconds since the epoch (a candidate's raw score)."""
        raise NotImplementedError

    def sortable(self, column: str) -> str:
        """A time column as a value that sorts as the time does."""
        return column

    def greatest(self, a: str, b: str) -> str:
        return f"GREATEST({a}, {b})"

    def position(self, column: str) -> str:
        """Where the parameter first occurs in a text or JSON column, 0 if nowhere."""
        raise NotImplementedError

    def id_list(self, column: str, rest: str) -> str:
        """A subquery ``SELECT column rest`` as one value that :meth:`read_names` decodes."""
        raise NotImplementedError

    def nocase_eq(self, column: str) -> str:
        """``column`` equals the parameter, ignoring case."""
        raise NotImplementedError

    def tags_all(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def tags_any(self, alias: str, tags: Sequence[str]) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def metadata_eq(self, alias: str, key: str, value: str | float | bool | None) -> tuple[str, list[Any]]:
        """The memory's metadata holds ``value`` under ``key`` (null: holds null or nothing)."""
        raise NotImplementedError

    #: What makes a text comparison order by code point (byte order in UTF-8), as Python's does.
    binary: str = ""
    #: A parameter that is a text, typed where the database cannot tell (``strpos(x, ?)``).
    text_param: str = "?"

    def fold(self, expr: str) -> str:
        """``expr`` with ASCII letters lowered (engram.metadata_filter.fold)."""
        return f"lower({expr})"

    def text_contains(self, expr: str, needle: str) -> str:
        """The text ``expr`` contains the text ``needle`` (a substring test, not a pattern)."""
        raise NotImplementedError

    def metadata_test(self, alias: str, key: str, test: str, operand: Any) -> tuple[str, list[Any]]:
        """One filter test on a metadata value (engram.stores.sql.where): ``test`` is ``eq`` (a text,
        number or boolean, of the same JSON type), ``null`` (null or missing), ``present``, one of
        ``gt gte lt lte`` (a text or a number), or ``contains``/``icontains`` (a text)."""
        raise NotImplementedError

    def contains_any(self, alias: str, terms: Sequence[str]) -> tuple[str, list[Any]]:
        """The memory's searched text contains one of ``terms`` (each of at least three characters),
        ignoring case (see :meth:`~engram.stores.sql.candidates.CandidateMixin.substring_search`)."""
        raise NotImplementedError

    def names_days(self, alias: str, user_id: str, days: Sequence[tuple[int, int]],
                   said: tuple[Any, Any]) -> tuple[str, list[Any]]:
        """The memory indexes a day in one of the ranges ``days`` (:func:`engram.days.indexed_days`);
        ``said`` is the filters' (created_after, created_before), each a :meth:`time` or None."""
        raise NotImplementedError
