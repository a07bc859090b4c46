"""Turning a SQLite file to WAL when other processes may open it at the same moment.

``PRAGMA journal_mode=WAL`` needs the file to itself, and SQLite does not run the busy handler
for it: while another connection holds a write lock (another process creating the same new file)
it fails at once with "database is locked", whatever the connection's timeout. WAL is a property
of the file, so once any process has turned it, there is nothing left to do.
"""

from __future__ import annotations

import random
import sqlite3
import time

__all__ = ["use_wal"]


def use_wal(conn: sqlite3.Connection, budget_s: float = 10.0) -> None:
    """Put ``conn``'s file in WAL mode, retrying while another connection holds it locked."""
    deadline = time.monotonic() + budget_s
    delay = 0.005
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            message = str(exc).lower()
            if ("locked" not in message and "busy" not in message) or time.monotonic() > deadline:
                raise
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.2)
