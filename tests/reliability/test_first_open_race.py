"""Several processes creating the same new SQLite file at once: every one opens it, none migrates twice."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from engram.stores.sqlite.schema import MIGRATIONS
from tests.reliability._first_open import open_fresh_files
from tests.reliability._workers import scale

PROCESSES = 4


def test_processes_creating_one_new_sqlite_file_at_once_all_open_it(tmp_path: Path) -> None:
    # Before migrate() re-read user_version under the write lock, two processes could both see
    # version 0 and both run migration 1: "table meta already exists".
    rounds = scale(25, 200)
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(PROCESSES)
    failures = context.Queue()
    children = [context.Process(target=open_fresh_files, args=(str(tmp_path), rounds, start, failures))
                for _ in range(PROCESSES)]
    for child in children:
        child.start()
    seen = [failure for _ in children for failure in failures.get(timeout=600)]
    for child in children:
        child.join(timeout=60)
    assert [child.exitcode for child in children] == [0] * PROCESSES
    assert seen == []
    for number in range(rounds):
        with sqlite3.connect(tmp_path / f"{number}.db") as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
