"""SQLite's substring index (migration 10): an FTS5 table with the trigram tokenizer over each
memory's searched text, kept by triggers in the writing transaction and filled once for the rows a
store already holds.

The searched text is what keyword search matches substrings in (:mod:`engram.keyword_search`):
content, subject, predicate, object, trigger and action, each tag and each string value of the
metadata, joined by the unit separator (char 31), which no keyword holds (keywords are split on it as
whitespace), so no match spans two fields. The table is contentless: it holds the trigrams only, and
a row is deleted by giving its text again, which the triggers compute from the old row.

The index is over every user's rows; a search joins the matches to the user's (see
:meth:`~engram.stores.sqlite.dialect.SQLiteDialect.contains_any`). It costs about as much space as
the keyword index.
"""

from __future__ import annotations

import sqlite3

__all__ = ["create_substring_index", "fill_substring_index", "searched_text"]

_FIELDS = ("content", "subject", "predicate", "object", "trigger_text", "action_text")


def searched_text(row: str) -> str:
    """The SQL expression of the searched text of the memory row ``row`` (``new``, ``old``, an alias)."""
    parts = [f"coalesce({row}.{name}, '')" for name in _FIELDS]
    parts.append(f"coalesce((SELECT group_concat(value, char(31)) FROM json_each({row}.tags)), '')")
    parts.append(
        f"coalesce((SELECT group_concat(value, char(31)) FROM json_tree({row}.metadata) WHERE type = 'text'), '')"
    )
    return " || char(31) || ".join(parts)


def create_substring_index(conn: sqlite3.Connection) -> None:
    """The table, its triggers and the rows already stored (idempotent, as migration 9)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS substring_fts USING fts5("
        "text, content = '', tokenize = 'trigram case_sensitive 0')"
    )
    delete = (f"INSERT INTO substring_fts (substring_fts, rowid, text) "
              f"VALUES ('delete', old.rowid, {searched_text('old')});")
    insert = f"INSERT INTO substring_fts (rowid, text) VALUES (new.rowid, {searched_text('new')});"
    columns = ", ".join((*_FIELDS, "tags", "metadata"))
    for name, event, body in (
        ("substring_insert", "INSERT", insert),
        ("substring_delete", "DELETE", delete),
        ("substring_update", f"UPDATE OF {columns}", delete + insert),
    ):
        conn.execute(f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON memories BEGIN {body} END")
    # A store whose version was set back already holds the rows: rebuilt from scratch, not twice.
    fill_substring_index(conn)


def fill_substring_index(conn: sqlite3.Connection) -> None:
    """Empty the index and index every stored row again (its structure written afresh)."""
    conn.execute("INSERT INTO substring_fts (substring_fts) VALUES ('delete-all')")
    conn.execute(f"INSERT INTO substring_fts (rowid, text) SELECT m.rowid, {searched_text('m')} FROM memories m")
