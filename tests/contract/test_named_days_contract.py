"""The days each memory names, indexed by every store when it is written (engram.days)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta

from engram.ext import Store
from engram.ingest.normalize import content_hash
from engram.model import Filters
from tests.contract.test_store_contract import T0, put, rec

DEC_1 = date(2024, 12, 1)


def _days(store: Store, user: str, first: date, last: date, filters: Filters | None = None, *,
          told: bool = False) -> list[str]:
    return [i for i, _ in store.by_named_days(user, first, last, 10, filters or Filters(), told=told)]


def test_a_memory_is_found_by_the_days_it_names_newest_first(store: Store) -> None:
    said = T0 + timedelta(days=316)  # Nov 12, 2024
    visit = rec("u1", "The dentist appointment is on Dec 1.", created_at=said)
    trip = rec("u1", "We fly out Dec 3-5, back on the 6th.", created_at=said + timedelta(days=1))
    plain = rec("u1", "Nothing dated here.", created_at=said)
    theirs = rec("u2", "My appointment is on Dec 1 too.", created_at=said)
    put(store, visit, trip, plain, theirs)
    assert _days(store, "u1", DEC_1, DEC_1 + timedelta(days=6)) == [trip.id, visit.id]
    assert _days(store, "u1", DEC_1 + timedelta(days=4), DEC_1 + timedelta(days=4)) == [trip.id]  # inside Dec 3-5
    assert _days(store, "u1", DEC_1 + timedelta(days=10), DEC_1 + timedelta(days=20)) == []
    assert _days(store, "u2", DEC_1, DEC_1) == [theirs.id]  # each user reads their own
    # The filters hold as on every candidate read; a span longer than a year and a day reads nothing.
    assert _days(store, "u1", DEC_1, DEC_1, Filters(created_after=said + timedelta(hours=1))) == []
    assert _days(store, "u1", DEC_1 - timedelta(days=400), DEC_1) == []


def test_told_days_are_indexed_against_the_day_they_were_said(store: Store) -> None:
    monday = T0 + timedelta(days=7)  # Monday, Jan 8, 2024
    told = rec("u1", "Leo lost his first tooth yesterday!", created_at=monday)
    planned = rec("u1", "I'm hiking on Saturday.", created_at=monday)
    put(store, told, planned)
    dated = rec("u1", "The plumber came on Jan 7.", created_at=monday + timedelta(hours=1))
    put(store, dated)
    sunday = (monday - timedelta(days=1)).date()
    # What is told of in relative words is read only when asked for (a question about days gone by).
    assert _days(store, "u1", sunday, sunday, told=True) == [dated.id, told.id]
    assert _days(store, "u1", sunday, sunday) == [dated.id]
    # The time it was said bounds the read: said in [after, before], both ends included.
    assert _days(store, "u1", sunday, sunday, Filters(created_before=monday), told=True) == [told.id]
    assert _days(store, "u1", sunday, sunday, Filters(created_after=monday + timedelta(hours=1)), told=True) == [
        dated.id]


def test_the_days_go_and_change_with_their_memory(store: Store) -> None:
    a = rec("u1", "Lunch with Sam on Dec 1.", created_at=T0 + timedelta(days=316))
    b = rec("u1", "The invoice is due Dec 1.", created_at=T0 + timedelta(days=316))
    put(store, a, b)
    store.replace(replace(a, content="Lunch with Sam on Dec 9.", content_hash=content_hash("Lunch with Sam on Dec 9.")),
                  None)
    assert _days(store, "u1", DEC_1, DEC_1) == [b.id]
    assert _days(store, "u1", DEC_1 + timedelta(days=8), DEC_1 + timedelta(days=8)) == [a.id]
    assert store.delete("u1", b.id)
    assert _days(store, "u1", DEC_1, DEC_1) == []
    store.forget_user("u1")
    assert _days(store, "u1", DEC_1, DEC_1 + timedelta(days=10)) == []
