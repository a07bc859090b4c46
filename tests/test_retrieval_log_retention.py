"""The retrieval log is bounded: each user's newest retrievals (and their feedback) are kept, on both backends."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.errors import ConfigError
from engram.ext import Store
from engram.model import LoggedItem, LoggedRetrieval, new_id
from engram.stores.sql.knowledge import LOG_RETENTION, PRUNE_EVERY
from engram.stores.sqlite.store import SQLiteStore

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def logged(minute: int) -> LoggedRetrieval:
    return LoggedRetrieval(
        id=new_id(), query=f"query {minute}", category="factual", strategy="factual_entity_focused",
        created_at=T0 + timedelta(minutes=minute), items=(LoggedItem("m1", "fact", {"semantic_similarity": 0.5}),),
        settings={"searchType": "hybrid"},
    )


def feedback_rows(store: Store, user_id: str) -> int:
    table = "retrieval_feedback" if isinstance(store, SQLiteStore) else "engram_retrieval_feedback"
    placeholder = "?" if isinstance(store, SQLiteStore) else "%s"
    rows = store._read(f"SELECT count(*) FROM {table} WHERE user_id = {placeholder}", (user_id,))  # type: ignore[attr-defined]
    return int(rows[0][0])


def test_retrieval_log_grows_without_bound_no_more(store: Store) -> None:
    assert store.log_retention == LOG_RETENTION  # type: ignore[attr-defined]  # bounded by default
    store.log_retention = 5  # type: ignore[attr-defined]
    theirs = logged(0)
    store.log_retrieval("u2", theirs)
    store.record_feedback("u2", theirs.id, ["m1"], T0)
    # Written out of order, so "newest" must mean created_at, not insertion order.
    entries = [logged(minute) for minute in range(PRUNE_EVERY + 1)]
    order = [*entries[1:-1][::-1], entries[0], entries[-1]]
    for number, entry in enumerate(order, start=1):
        store.log_retrieval("u1", entry)
        store.record_feedback("u1", entry.id, ["m1"], entry.created_at)
        kept = sum(store.get_retrieval("u1", e.id) is not None for e in entries)
        assert kept <= 5 + PRUNE_EVERY - 1, number
    # The first write pruned (nothing to drop), the (PRUNE_EVERY + 1)-th dropped all but the newest 5.
    assert [e.id for e in entries if store.get_retrieval("u1", e.id) is not None] == [e.id for e in entries[-5:]]
    assert [e.id for e in store.feedback_log("u1", 1000)] == [e.id for e in entries[-5:]]
    assert feedback_rows(store, "u1") == 5  # feedback of dropped retrievals went with them
    got = store.get_retrieval("u2", theirs.id)  # another user's log is theirs to bound
    assert got is not None and got.used == ("m1",)


def test_retrievals_logged_in_the_same_microsecond_are_kept_by_id(store: Store) -> None:
    store.log_retention = 3  # type: ignore[attr-defined]
    tied = [replace(logged(0), id=f"r{n}") for n in (4, 1, 3, 0, 2)]
    for entry in tied[:4]:
        store.log_retrieval("u1", entry)
    store._log_writes.clear()  # type: ignore[attr-defined]  # as a new process would: its first write prunes
    store.log_retrieval("u1", tied[4])
    assert sorted(e.id for e in tied if store.get_retrieval("u1", e.id) is not None) == ["r2", "r3", "r4"]


def test_a_short_lived_process_prunes_on_its_first_log_write(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    entries = [logged(minute) for minute in range(20)]
    unbounded = SQLiteStore(path, log_retention=None)
    for entry in entries:
        unbounded.log_retrieval("u1", entry)
    unbounded.close()
    bounded = SQLiteStore(path, log_retention=5)  # e.g. one `engram search`
    bounded.log_retrieval("u1", newest := logged(60))
    kept = [e.id for e in [*entries, newest] if bounded.get_retrieval("u1", e.id) is not None]
    bounded.close()
    assert kept == [e.id for e in [*entries[-4:], newest]]


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "10"])
def test_log_retention_out_of_range_is_a_config_error(tmp_path: Path, value: object) -> None:
    with pytest.raises(ConfigError, match="log_retention"):
        SQLiteStore(tmp_path / "x.db", log_retention=value)  # type: ignore[arg-type]
