"""A batch of new memories indexed once for the batch, not once a row.

Four triggers keep what a new row adds beside it: the keyword index and its per-user statistics,
the substring index, the user's change token and the log of reused rowids (migrations 4-16). Run
a row at a time, FTS5 pays its statement's set-up for every row and the per-user counters are
written once a row; for an ``add_many`` (256 rows a transaction) that was a third of the store's cost. A
batch instead marks itself in ``bulk_writes`` inside its transaction (migration 21 makes the four
triggers stand aside while the mark is there), inserts its rows, writes each index with one
statement over them (:func:`index_batch`) and removes the mark before it commits. The statements are
the triggers' own, over the batch's rows (the keyword functions the triggers call are called on the
values the rows were given, each memory's terms read once): the same terms, the same trigrams, the
same document counts and lengths, the same removals logged. Only the change tokens (``user_versions.version``,
``keyword_stats.version``) step once a batch for each user instead of once a row: they are compared,
never counted.

The mark is a row of the database, not a setting of the connection, so it is seen only by the
transaction that wrote it: another connection, or this one after a rollback, runs the triggers as
before, and a crash leaves nothing marked (the mark was never committed). A mark found committed
(written by hand, say) would silence the triggers for every later insert: the store clears one when
it opens (:func:`clear_stray_marks`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from engram.model import MemoryRecord
from engram.stores.sqlite.dialect import insert_rows
from engram.stores.sqlite.keyword_terms import keyword_entry, user_key
from engram.stores.sqlite.substrings import searched_text

__all__ = ["BULK_MIN", "TERM_COLUMNS", "clear_stray_marks", "defer_row_indexing", "index_batch", "marked"]

#: The columns a memory's keyword terms come from, in engram_keyword_doc's order after user_id.
TERM_COLUMNS = ("content", "role", "subject", "predicate", "object", "trigger_text", "action_text")
#: A batch this size or larger is indexed in bulk: already at 2 rows a memory costs less so (measured
#: at 4, 7, 8 and 256 rows); one row goes through the triggers, which need no extra statement.
BULK_MIN = 2
#: The triggers a marked batch does the work of.
_DEFERRED = ("keyword_insert", "substring_insert", "user_version_memories_insert", "memory_rowid_reused")
_UNMARKED = "WHEN NOT EXISTS (SELECT 1 FROM bulk_writes)"


def defer_row_indexing(conn: sqlite3.Connection) -> None:
    """Migration 21: the mark's table, and the four insert triggers recreated to stand aside while a
    batch is marked (idempotent: a store whose version was set back has them already)."""
    conn.execute("CREATE TABLE IF NOT EXISTS bulk_writes (batch INTEGER NOT NULL)")
    for name in _DEFERRED:
        row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)).fetchone()
        if row is None or _UNMARKED in row[0]:
            continue
        guarded, found = re.subn(r"AFTER\s+INSERT\s+ON\s+memories\s+BEGIN",
                                 f"AFTER INSERT ON memories {_UNMARKED} BEGIN", row[0], count=1, flags=re.IGNORECASE)
        if not found:
            raise sqlite3.DatabaseError(f"trigger {name} is not the one this migration knows")
        conn.execute(f"DROP TRIGGER {name}")
        conn.execute(guarded)


def clear_stray_marks(conn: sqlite3.Connection) -> bool:
    """Remove a committed mark (none is ever committed by a batch); whether there was one. Read
    first, so that opening a store takes no write lock when there is none."""
    if conn.execute("SELECT 1 FROM bulk_writes LIMIT 1").fetchone() is None:
        return False
    conn.execute("DELETE FROM bulk_writes")
    return True


def marked(c: sqlite3.Connection, on: bool) -> None:
    """Mark (or unmark) the open transaction's inserts as a batch the triggers leave to :func:`index_batch`."""
    c.execute("INSERT INTO bulk_writes (batch) VALUES (1)" if on else "DELETE FROM bulk_writes")


def index_batch(c: sqlite3.Connection, rowids: Sequence[int], records: Sequence[MemoryRecord]) -> None:
    """What the four insert triggers would have written for ``records``, stored at ``rowids`` (in the
    same order), in the open transaction."""
    user_ids = [r.user_id for r in records]
    rows = ",".join(str(int(r)) for r in rowids)
    # The change token first: a user's first row creates their counters, as the first trigger would.
    for user_id in dict.fromkeys(user_ids):
        c.execute("INSERT INTO user_versions (user_id, version) VALUES (?, abs(random() / 2)) "
                  "ON CONFLICT (user_id) DO UPDATE SET version = version + 1", (user_id,))
    # The keyword triggers' functions called here on the values just bound (what the triggers read
    # back from the row), each memory's terms read once for its document and its length.
    keys = {user_id: user_key(user_id) for user_id in dict.fromkeys(user_ids)}
    documents: list[tuple[int, str]] = []
    totals: dict[str, list[int]] = {}
    for rowid, r in zip(rowids, records, strict=True):
        document, length = keyword_entry(keys[r.user_id], r.content, r.role, r.subject, r.predicate, r.object,
                                         r.trigger, r.action)
        documents.append((rowid, document))
        total = totals.setdefault(r.user_id, [0, 0])
        total[0] += 1
        total[1] += length
    insert_rows(c, "INSERT INTO keyword_fts (rowid, terms)", sorted(documents))
    for user_id, (docs, terms) in sorted(totals.items()):
        c.execute("INSERT INTO keyword_stats (user_id, docs, terms) VALUES (?, ?, ?) ON CONFLICT (user_id) "
                  "DO UPDATE SET docs = docs + excluded.docs, terms = terms + excluded.terms", (user_id, docs, terms))
    c.execute(f"INSERT INTO substring_fts (rowid, text) SELECT m.rowid, {searched_text('m')} "
              f"FROM memories m WHERE m.rowid IN ({rows}) ORDER BY m.rowid")
    _reused(c, rowids, user_ids)


def _reused(c: sqlite3.Connection, rowids: Sequence[int], user_ids: Sequence[str]) -> None:
    """A row at or below the highest rowid ever given counts as a change of that row (see
    ``versions.log_removals``): counted and logged for its user, in rowid order; then the mark rises."""
    high = int(c.execute("SELECT h FROM memory_rowid_high").fetchone()[0])
    for rowid, user_id in sorted((r, u) for r, u in zip(rowids, user_ids, strict=True) if r <= high):
        c.execute("INSERT INTO user_versions (user_id, version, removed) VALUES (?, abs(random() / 2), 1) "
                  "ON CONFLICT (user_id) DO UPDATE SET removed = removed + 1", (user_id,))
        c.execute("INSERT OR REPLACE INTO memory_removals (user_id, seq, row) "
                  "SELECT user_id, removed, ? FROM user_versions WHERE user_id = ?", (rowid, user_id))
    top = max(rowids)
    c.execute("UPDATE memory_rowid_high SET h = ? WHERE h < ?", (top, top))

