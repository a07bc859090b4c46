"""The days a store indexes for a memory (engram.days.indexed_days)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from engram.days import MAX_INDEXED_DAYS, indexed_days, told_days

SAID = datetime(2026, 11, 13, 9, 0, tzinfo=UTC)


def _days(first: date, last: date) -> list[int]:
    return list(range(first.toordinal(), last.toordinal() + 1))


def test_every_day_of_each_span_named_or_told_is_indexed() -> None:
    """Dates named as their ordinals, days told of in relative words as their negatives."""
    text = "Booked the cabin for Dec 22-24. Yesterday we signed the lease, on Nov 12."
    assert indexed_days(text, SAID) == [*_days(date(2026, 11, 12), date(2026, 11, 12)),
                                         *_days(date(2026, 12, 22), date(2026, 12, 24)),
                                         -date(2026, 11, 12).toordinal()]
    assert indexed_days("Nothing dated here.", SAID) == []
    assert indexed_days("Tom asked for a quote by Friday.", SAID) == []  # a deadline, not a day gone by


def test_a_day_told_of_as_chats_shorten_it_is_indexed() -> None:
    # SAID is Friday 13 November 2026.
    told = [-date(2026, 11, 12).toordinal()]
    assert indexed_days("saw him yday, he was fine", SAID) == told
    assert indexed_days("went to the pub on thurs", SAID) == told
    assert indexed_days("last sat was fun", SAID) == [-date(2026, 11, 7).toordinal()]
    assert indexed_days("I sat down with Tom and talked", SAID) == []


def test_a_quarter_gone_by_is_told_of_whole() -> None:
    # SAID is 13 November 2026: "Q3" is July to September 2026, the last Q3 that ended; a sentence
    # that tells of nothing past names no quarter gone by; "Q1 2026" gives its year.
    q3 = [-day for day in reversed(_days(date(2026, 7, 1), date(2026, 9, 30)))]
    assert sorted(indexed_days("ran it: Q3 churn comes out at 5.4% under the new rule", SAID)) == q3
    assert sorted(indexed_days("q3 numbers came in low", SAID)) == q3
    assert indexed_days("Q4 planning starts now", SAID) == []  # nothing past: a quarter to come, or now
    assert indexed_days("We're aiming to ship in Q1", SAID) == []
    assert indexed_days("IQR = Q3 - Q1", SAID) == []
    assert sorted(indexed_days("Q1 2026 was flat", SAID)) == [-day for day in reversed(
        _days(date(2026, 1, 1), date(2026, 3, 31)))]
    assert told_days("Q3 2026 was flat", SAID) == [(date(2026, 7, 1), date(2026, 9, 30))]
    assert indexed_days("Q35 and Q3-style notes", SAID) == []
    assert indexed_days("We closed Q3 FY27 above plan.", SAID) == []  # a fiscal quarter: not the calendar's
    assert indexed_days("We sold our Audi Q3, it had done 90k miles.", SAID) == []


def test_long_spans_are_left_out_and_the_days_are_capped() -> None:
    assert indexed_days("Last month was busy.", SAID) == [-day for day in _days(date(2026, 10, 1), date(2026, 10, 31))]
    assert len(indexed_days("We close from Nov 20 to Jan 5.", SAID)) == 47
    assert indexed_days("We close from Nov 20 to Mar 5.", SAID) == []  # longer than INDEXED_SPAN
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct")
    year = ", ".join(f"{month} 1-28" for month in months)
    days = indexed_days(f"Office hours: {year}.", SAID)  # 280 days named
    assert len(days) == MAX_INDEXED_DAYS and days == sorted(days)


def test_days_are_read_in_utc_as_retrieval_reads_them() -> None:
    late = datetime(2026, 11, 13, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # Nov 14, 04:00 UTC
    assert indexed_days("Yesterday was long.", late) == [-date(2026, 11, 13).toordinal()]


@pytest.mark.parametrize("said", [
    datetime(1, 1, 1, tzinfo=UTC), datetime(1, 1, 1, 5, tzinfo=timezone(timedelta(hours=3))),
    datetime(9999, 12, 31, 23, tzinfo=UTC), datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-3))),
])
def test_the_ends_of_the_calendar_index_what_they_can_and_never_fail(said: datetime) -> None:
    for text in ("on Dec 31 and Jan 1", "yesterday we went, three days ago", "Dec 24 to Jan 2", "9999-12-31"):
        assert all(1 <= abs(day) <= date.max.toordinal() for day in indexed_days(text, said))
