"""Erasing from SQLite's two full-text indexes, and keeping them readable while doing so.

An FTS5 delete does not remove a row's postings: it appends a marker segment that names them. In the
keyword index the marker holds the deleted memory's words; in the substring index (contentless,
trigrams) it holds every trigram of the deleted text with its position, from which the text reads
back whole. Merging the segments into one (``optimize``) drops the postings and the markers, so
every erasure merges both indexes (:func:`merge`) in the deleting transaction.

SQLite before 3.4x adds a level to an index's structure at every merge and never takes one away;
past 2,000 levels FTS5 reads the index as corrupt ("database disk image is malformed") and every
write to the file fails, from about the thousandth delete on. Newer versions stop at 64. So an index
whose structure holds more than :data:`RESET_LEVELS` levels is built afresh (:func:`reset_if_deep`):
after a merge, and when a store opens (a file written by an older Engram may already be past the
bound; the structure is read from the index's own table, which opens where the index cannot). An
index whose structure record is missing or malformed is built afresh at opening too.
Building afresh writes one level: the keyword index from its own stored terms (``rebuild``), the
substring index from the memories (:func:`~.substrings.fill_substring_index`).
"""

from __future__ import annotations

import sqlite3

from engram.stores.sqlite.substrings import fill_substring_index

__all__ = ["RESET_LEVELS", "levels", "merge", "repair", "reset_if_deep"]

#: Levels past which an index is built afresh: above the 64 of newer SQLite (which never reach it),
#: far below the 2,000 at which older SQLite reads the index as corrupt (two levels a merge there:
#: a rebuild every ~100 erasures).
RESET_LEVELS = 200
#: The row of an FTS5 table's ``_data`` shadow table holding its structure record (an empty
#: structure is seven zero bytes: the cookie, no level, no segment, no write).
_STRUCTURE_ROW = 10
#: The marker a version-2 structure record carries after its cookie (SQLite 3.45+, for tables with
#: secure-delete or contentless-delete); neither index here uses them, but the reading allows it.
_V2_MARK = b"\xff\x00\x00\x01"
_INDEXES = ("keyword_fts", "substring_fts")


def levels(conn: sqlite3.Connection, table: str) -> int:
    """How many levels the structure of the FTS5 index ``table`` holds; 0 when it cannot be read."""
    return max(_structure_levels(conn, table) or 0, 0)


#: What :func:`_structure_levels` reads of a structure that is missing or not one.
_UNREADABLE = -1


def _structure_levels(conn: sqlite3.Connection, table: str) -> int | None:
    """The levels of ``table``'s structure; None without such an index (a store before the migration
    that makes it), :data:`_UNREADABLE` when its structure record is missing or malformed."""
    try:
        row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_STRUCTURE_ROW,)).fetchone()
    except sqlite3.OperationalError:
        return None
    if row is None or not isinstance(row[0], bytes) or len(row[0]) < 5:
        return _UNREADABLE
    body = row[0][4:]  # after the cookie
    if body.startswith(_V2_MARK):
        body = body[len(_V2_MARK):]
    value = 0
    for byte in body[:9]:  # an SQLite varint: 7 bits a byte, high bit set until the last
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return _UNREADABLE


def merge(c: sqlite3.Connection) -> None:
    """Merge both indexes' segments into one each, dropping deleted rows' postings and the delete
    markers, then build afresh an index grown too deep (see the module), in the open transaction."""
    for table in _INDEXES:
        c.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    reset_if_deep(c)


def reset_if_deep(c: sqlite3.Connection) -> bool:
    """Build afresh each index holding more than :data:`RESET_LEVELS` levels; whether any was."""
    deep = _deep(c)
    for table in deep:
        _build_afresh(c, table)
    return bool(deep)


def _deep(c: sqlite3.Connection) -> list[str]:
    """The indexes to build afresh: past :data:`RESET_LEVELS` levels, or with a structure that is no
    structure (what FTS5 would refuse to open, failing every write to the file)."""
    return [table for table in _INDEXES
            if (found := _structure_levels(c, table)) is not None and (found == _UNREADABLE or found > RESET_LEVELS)]


def _build_afresh(c: sqlite3.Connection, table: str) -> None:
    """Write ``table``'s index again from what it indexes: one level."""
    if table == "keyword_fts":
        c.execute("INSERT INTO keyword_fts (keyword_fts) VALUES ('rebuild')")
    else:
        fill_substring_index(c)


def repair(conn: sqlite3.Connection) -> bool:
    """At a store's opening: build afresh, in a transaction of its own, an index grown too deep by an
    older Engram's erasures (see the module), or whose structure record is unreadable; whether one
    was. Read first, so that opening a store takes no write lock when none is."""
    deep = _deep(conn)
    if not deep:
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        deep = _deep(conn)  # again under the write lock: another process opening the file may have built it
        for table in deep:
            # Past 2,000 levels a new connection cannot even open the index, so its structure is
            # emptied through its own tables first; building afresh then writes every posting again.
            conn.execute(f"DELETE FROM {table}_idx")
            conn.execute(f"DELETE FROM {table}_data")
            conn.execute(f"INSERT INTO {table}_data (id, block) VALUES (?, zeroblob(7))", (_STRUCTURE_ROW,))
            _build_afresh(conn, table)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return bool(deep)
