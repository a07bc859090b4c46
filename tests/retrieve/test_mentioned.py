"""Days a memory names besides the day it was said: a time scope that reaches past now points at
what was said before of the days it covers ("What do I have next week?")."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.model import MemoryRecord, TimeRange
from engram.retrieve.mentioned import mentioned_days, mentions_inside

SAID = datetime(2026, 11, 13, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "days"), [
    ("Dana's appointment with Dr. Patel is on Dec 1 at 8:15am.", [(date(2026, 12, 1), date(2026, 12, 1))]),
    ("Booked Casa do Jardim for Dec 22-26.", [(date(2026, 12, 22), date(2026, 12, 26))]),
    ("We close from Dec 24 to Jan 2.", [(date(2026, 12, 24), date(2027, 1, 2))]),
    ("Mum turns 70 on December 12th.", [(date(2026, 12, 12), date(2026, 12, 12))]),
    ("The trip is on 4 December 2027.", [(date(2027, 12, 4), date(2027, 12, 4))]),
    ("Renewal on 2027-01-15.", [(date(2027, 1, 15), date(2027, 1, 15))]),
    ("The conference ran Oct 7-10.", [(date(2026, 10, 7), date(2026, 10, 10))]),  # two months back at most
    ("Anniversary dinner on May 20.", [(date(2027, 5, 20), date(2027, 5, 20))]),  # further back: next year's
    ("Closed Dec 24 to Jan 2, 2027.", [(date(2026, 12, 24), date(2027, 1, 2))]),  # the year is the end's
    ("We may 5 times; troops march 3 miles.", []),  # not "May" or "March"
    ("See v2026-12-01 and ORD-2026-12-03-7781.", []),
    ("Nothing dated here, may be later.", []),
    ("At 10:30 on Feb 30.", []),
])
def test_days_named(text: str, days: list[tuple[date, date]]) -> None:
    assert mentioned_days(text, SAID) == days


def _record(text: str) -> MemoryRecord:
    return MemoryRecord(id="m", user_id="u", content=text, kind="message", created_at=SAID, recorded_at=SAID,
                        content_hash="m")


def test_only_days_to_come_count() -> None:
    december = TimeRange(start=datetime(2026, 12, 1, tzinfo=UTC), end=datetime(2026, 12, 31, tzinfo=UTC))
    october = TimeRange(start=datetime(2026, 10, 1, tzinfo=UTC), end=datetime(2026, 10, 31, tzinfo=UTC))
    assert mentions_inside(_record("The appointment is on Dec 1."), december)
    assert not mentions_inside(_record("The appointment is on Dec 1."), october)
    # Told after the day: its telling is what is dated.
    assert not mentions_inside(_record("I watched the match on Oct 20."), october)


def test_what_is_planned_answers_a_question_about_the_days_to_come(tmp_path: Path) -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Dana's appointment with Dr. Patel is on Dec 1 at 8:15am.", user_id="u",
                   created_at=now - timedelta(days=10))
        memory.add("Leo's field trip to the museum is on Dec 4.", user_id="u", created_at=now - timedelta(days=19))
        memory.add("I have a busy week ahead at work.", user_id="u", created_at=now - timedelta(days=30))
        memory.add("The dentist said Leo has no cavities.", user_id="u", created_at=now - timedelta(days=45))
        found = memory.retrieve("What do I have next week?", user_id="u", now=now).memories
        assert {m.content for m in found[:2]} == {"Dana's appointment with Dr. Patel is on Dec 1 at 8:15am.",
                                                  "Leo's field trip to the museum is on Dec 4."}
        assert found[0].signals["names_day"] == 1.0
        assert any(reason.startswith("names a day in 'next week'") for reason in found[0].reasons)
        # A scope wholly past leaves mentions to their words.
        past = memory.retrieve("What did I have last week?", user_id="u", now=now).memories
        assert all(m.signals.get("names_day", 0.0) == 0.0 for m in past)


def test_a_question_with_its_own_subject_is_not_answered_by_any_day(tmp_path: Path) -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Acme's delivery of 30 monitors is planned for next week.", user_id="u",
                   created_at=now - timedelta(days=3))
        memory.add("Leo's field trip to the museum is on Dec 4.", user_id="u", created_at=now - timedelta(days=19))
        memory.add("Surprise party on Dec 2!", user_id="u", created_at=now + timedelta(days=3))  # after ``now``
        found = memory.retrieve("What's the Acme delivery next week?", user_id="u", now=now).memories
        assert found[0].content.startswith("Acme's delivery")
        days = memory.retrieve("What do I have next week?", user_id="u", now=now).memories
        assert "Surprise party on Dec 2!" not in [m.content for m in days]
