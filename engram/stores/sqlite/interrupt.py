"""SQLite statements cut at the retrieval's deadline (:mod:`engram.deadline`).

The connection's progress handler runs every ``PROGRESS_STEPS`` virtual-machine steps of a
statement and interrupts it once the deadline has passed; SQLite then stops with "interrupted",
which becomes DeadlineExceeded. The handler is set only for the statement and only when a deadline
applies: it takes the interpreter lock each time it runs, which SQLite otherwise releases while it
steps.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from engram.deadline import check, read_deadline
from engram.errors import DeadlineExceeded

__all__ = ["PROGRESS_STEPS", "fetch_all"]

#: Steps between two looks at the clock: ~0.1-1 ms of a statement's work, so a cut statement ends
#: within about a millisecond of the deadline while the look costs well under 1% of its time.
PROGRESS_STEPS = 10_000


def fetch_all(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """Every row of one statement, or DeadlineExceeded if the thread's read deadline passes first."""
    deadline = read_deadline()
    if deadline is None:
        return conn.execute(sql, params).fetchall()
    check(deadline, "before a store read")
    conn.set_progress_handler(lambda: time.perf_counter() >= deadline, PROGRESS_STEPS)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc).lower() and time.perf_counter() >= deadline:
            raise DeadlineExceeded("retrieval passed its deadline during a store read (interrupted)") from None
        raise
    finally:
        conn.set_progress_handler(None, 0)
