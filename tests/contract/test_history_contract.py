"""What every store's audit log (``Store.history``) must do; runs on each backend like the contract suite."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engram.errors import ValidationError
from engram.ext import Store
from engram.ingest.normalize import content_hash
from engram.model import Link
from tests.contract.test_store_contract import T0, put, rec, unit


def test_every_change_leaves_its_row_in_order(store: Store) -> None:
    old = rec("u1", "Acme uses Stripe", kind="fact", subject="acme", predicate="uses", object="Stripe")
    put(store, old)
    edited = replace(old, content="Acme uses Stripe Billing", content_hash=content_hash("Acme uses Stripe Billing"))
    store.replace(edited, unit(5))
    newer = rec("u1", "Acme uses Adyen", kind="fact", subject="acme", predicate="uses", object="Adyen")
    put(store, newer, seeds=[7])
    store.replace(replace(edited, status="superseded", valid_to=T0), None)
    store.add_link("u1", Link(newer.id, old.id, "supersedes"))
    assert store.delete("u1", newer.id)

    events = store.history("u1", old.id)
    assert [e.event for e in events] == ["add", "update", "supersede", "restore"]
    billing = "Acme uses Stripe Billing"
    # The edit erased the replaced text: the earlier row lost it, and the edit's row holds the new text only.
    assert [(e.before, e.after) for e in events] == [
        (None, None), (None, billing), (billing, billing), (billing, billing),
    ]
    assert events[1].fields == ("content", "content_hash")
    assert events[2].fields == ("status", "valid_to") and events[3].fields == ("status", "valid_to")
    assert all(e.memory_id == old.id for e in events)
    times = [e.at for e in events]
    assert times == sorted(times) and all(t.tzinfo is not None for t in times)
    # The deleted version keeps that it was added and deleted, but none of its text.
    gone = store.history("u1", newer.id)
    assert [(e.event, e.before, e.after) for e in gone] == [("add", None, None), ("delete", None, None)]
    assert gone[0].at <= gone[1].at and "content" in gone[1].fields


def test_history_is_scoped_to_the_user_and_empty_for_the_unknown(store: Store) -> None:
    mine = rec("u1", "private note")
    put(store, mine)
    assert [e.event for e in store.history("u1", mine.id)] == ["add"]
    assert store.history("u2", mine.id) == []
    assert store.history("u1", "no-such-id") == []


def test_a_failed_write_leaves_no_row(store: Store) -> None:
    first = rec("u1", "first")
    put(store, first)
    second = rec("u1", "second")
    with pytest.raises(ValidationError):
        put(store, second, replace(first, content="duplicate id"))  # one transaction: all or nothing
    assert store.history("u1", second.id) == []
    assert [e.event for e in store.history("u1", first.id)] == ["add"]
    # A replace of a memory that is not there changes nothing, so it logs nothing.
    ghost = rec("u1", "never stored")
    store.replace(ghost, None)
    assert store.history("u1", ghost.id) == []


def test_forget_user_removes_their_rows_only(store: Store) -> None:
    mine, theirs = rec("u1", "one"), rec("u2", "two")
    put(store, mine, theirs)
    store.replace(replace(mine, importance=0.9), None)
    store.forget_user("u1")
    assert store.history("u1", mine.id) == []
    assert [e.event for e in store.history("u2", theirs.id)] == ["add"]
