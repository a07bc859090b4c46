"""The store's connection stops mapping the file while other processes commit often, and maps it again after."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

from engram.model import Filters
from engram.stores.sqlite import mapping
from engram.stores.sqlite.store import SQLiteStore


def _map_size(store: SQLiteStore) -> int:
    return int(store._read("PRAGMA mmap_size")[0][0])


def _commit_elsewhere(path: Path, times: int) -> Iterator[None]:
    """Another connection (as another process's) commits, and the store looks each time."""
    with sqlite3.connect(path, isolation_level=None) as other:
        for n in range(times):
            other.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('elsewhere', ?)", (str(n),))
            yield


def test_frequent_foreign_commits_turn_the_map_off_and_quiet_turns_it_on(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    assert store._mapping.mapped and _map_size(store) > 0
    clock = [1000.0]
    store._mapping.clock = lambda: clock[0]
    for _ in _commit_elsewhere(path, mapping.BUSY - 1):
        store.keyword_search("u", "anything", 5, Filters())  # a read looks for other commits first
        clock[0] += 0.01
    assert store._mapping.mapped  # not yet as many as BUSY within the window
    for _ in _commit_elsewhere(path, 1):
        store.keyword_search("u", "anything", 5, Filters())
    assert not store._mapping.mapped and _map_size(store) == 0
    clock[0] += mapping.QUIET_S / 2
    store.keyword_search("u", "anything", 5, Filters())
    assert not store._mapping.mapped  # quiet, but not for long enough
    clock[0] += mapping.QUIET_S
    store.keyword_search("u", "anything", 5, Filters())
    assert store._mapping.mapped and _map_size(store) > 0
    store.close()


def test_commits_spread_out_leave_the_map_on(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    clock = [1000.0]
    store._mapping.clock = lambda: clock[0]
    for _ in _commit_elsewhere(path, 3 * mapping.BUSY):
        store.keyword_search("u", "anything", 5, Filters())
        clock[0] += mapping.WINDOW_S / (mapping.BUSY - 2)  # fewer than BUSY in any window
    assert store._mapping.mapped
    store.close()
