"""A child process for the first-open race: open the same fresh SQLite file as its siblings, at once."""

from __future__ import annotations

from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path


def open_fresh_files(folder: str, rounds: int, start: Barrier, failures: Queue[list[str]]) -> None:
    """Each round every sibling opens ``folder/<round>.db`` (new) as the barrier releases them."""
    from engram.stores.sqlite.store import SQLiteStore  # imported before the first round, not timed by it

    seen: list[str] = []
    for number in range(rounds):
        start.wait(timeout=120)
        try:
            SQLiteStore(Path(folder) / f"{number}.db").close()
        except Exception as exc:  # every failure is the finding: record it, keep racing
            seen.append(f"round {number}: {type(exc).__name__}: {exc}")
    failures.put(seen)
