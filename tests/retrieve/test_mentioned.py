"""Days a memory names besides the day it was said: a time scope that reaches past now points at
what was said before of the days it covers ("What do I have next week?"), and a past scope at what
was told of its days after it ("What happened on Sunday?" and "yesterday", said on Monday)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from engram.config import RetrievalConfig
from engram.days import mentioned_days, told_days
from engram.embedders.fake import FakeEmbedder
from engram.ingest.normalize import content_hash
from engram.memory import Memory
from engram.model import MemoryRecord, TimeRange
from engram.retrieve.mentioned import mentions_inside

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


def _record(text: str, said: datetime = SAID) -> MemoryRecord:
    return MemoryRecord(id="m", user_id="u", content=text, kind="message", created_at=said, recorded_at=said,
                        content_hash=content_hash(text))


def _days(first: date, last: date) -> TimeRange:
    return TimeRange(start=datetime.combine(first, datetime.min.time(), UTC),
                     end=datetime.combine(last, datetime.max.time(), UTC))


def test_days_to_come_count_for_a_scope_reaching_past_now() -> None:
    december = _days(date(2026, 12, 1), date(2026, 12, 31))
    october = _days(date(2026, 10, 1), date(2026, 10, 31))
    assert mentions_inside(_record("The appointment is on Dec 1."), december, SAID)
    assert not mentions_inside(_record("The appointment is on Dec 1."), october, SAID)
    # A scope wholly past: what was said before of its days is dated by its saying.
    assert not mentions_inside(_record("The appointment is on Dec 1."), december, datetime(2027, 1, 5, tzinfo=UTC))
    # Said inside the scope of a day before in it: its saying is what is dated.
    assert not mentions_inside(_record("I watched the match on Oct 20.", datetime(2026, 10, 25, tzinfo=UTC)), october,
                               SAID)


MONDAY = datetime(2026, 11, 23, 8, 10, tzinfo=UTC)


@pytest.mark.parametrize(("text", "days"), [
    ("Leo lost his first tooth yesterday, he's so proud.", [(date(2026, 11, 22), date(2026, 11, 22))]),
    ("Friday's install at Brightwater went fine.", [(date(2026, 11, 20), date(2026, 11, 20))]),
    ("Last weekend we took the kids apple picking.", [(date(2026, 11, 21), date(2026, 11, 22))]),
    ("We got the keys three days ago!", [(date(2026, 11, 20), date(2026, 11, 20))]),
    ("I watched the match on Nov 7.", [(date(2026, 11, 7), date(2026, 11, 7))]),
    ("I'm hiking on Saturday.", []),  # not in the past: no day gone by
    ("I booked a table at Nopa for Friday.", []),  # named, not gone by
    ("I'm so excited for Saturday's party!", []),
    ("Black Friday deals were disappointing.", []),
    ("We always went hiking on Saturday mornings.", []),  # a habit, no one day
    ("The last week of the trip was the best part.", []),
    ("We will meet next Friday.", []),
    ("The appointment is on Dec 1.", []),  # a day to come is not told of
    ("Nothing dated here, last of the milk.", []),
    # A whole month gone by, named in a past sentence: the last of its name, begun at most 100 days before.
    ("Finance flagged our spend: October was 4,120 credits.", [(date(2026, 10, 1), date(2026, 10, 31))]),
    ("We spent a week there in May 2025.", [(date(2025, 5, 1), date(2025, 5, 31))]),
    ("We're going back in October.", []),  # not in the past
    ("In July we hiked every weekend.", []),  # too long ago to say which July without a year
    ("we may hike it again, it was fun", []),  # "may" is no month
    ("April said she was tired.", []),  # a name, not a month: nothing of time before or after it
    ("My daughter June turned six.", []),
    ("The end of October was rough.", [(date(2026, 10, 1), date(2026, 10, 31))]),
    ("The 4th of October was the day we met.", [(date(2026, 10, 4), date(2026, 10, 4))]),  # a day of it
])
def test_days_told_of(text: str, days: list[tuple[date, date]]) -> None:
    assert told_days(text, MONDAY) == days


def test_what_is_told_in_the_week_after_a_past_scope_counts() -> None:
    sunday = _days(date(2026, 11, 22), date(2026, 11, 22))
    now = datetime(2026, 11, 28, tzinfo=UTC)
    assert mentions_inside(_record("Leo lost his first tooth yesterday.", MONDAY), sunday, now)
    assert not mentions_inside(_record("Leo lost his first tooth on Sunday.", MONDAY), _days(
        date(2026, 11, 15), date(2026, 11, 15)), now)  # another Sunday
    # Told later still: it counts too ("We got the keys on Nov 22", said in December).
    assert mentions_inside(_record("We got the keys on Nov 22.", datetime(2026, 12, 1, tzinfo=UTC)), sunday, now)
    # An open scope ("before today") holds every day gone by and points at none.
    before = TimeRange(start=datetime.min.replace(tzinfo=UTC), end=datetime(2026, 11, 22, 23, 59, tzinfo=UTC))
    assert not mentions_inside(_record("Leo lost his first tooth yesterday.", MONDAY), before, now)
    # A month told of ("last month") is no particular day of it; a week is.
    november_2 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    halloween = _days(date(2026, 10, 31), date(2026, 10, 31))
    assert not mentions_inside(_record("Last month we moved house.", november_2), halloween, now)
    assert mentions_inside(_record("Last weekend we moved house.", november_2), halloween, now)
    assert mentions_inside(_record("Last month we moved house.", november_2), _days(date(2026, 10, 1),
                                                                                   date(2026, 10, 31)), now)


def test_a_report_of_a_month_gone_by_answers_a_question_about_it_first(tmp_path: Path) -> None:
    """Said after the month, a report of it comes before what was said in it of other things, when
    it matches the question at least as well as the best of those. A request for work lifts nothing
    by its time (the data's October, not October's messages): the best match comes first there too."""
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        report = memory.add("Finance flagged our Snowflake spend: October was 4,120 credits, budget 3,000.",
                            user_id="u", created_at=datetime(2026, 11, 10, 9, 0, tzinfo=UTC))
        for day, text in enumerate(("The orders load missed an hour after the clocks went back.",
                                    "Snowflake merge of fct_orders is faster now.", "We moved the dbt runs to 02:30.")):
            memory.add(text, user_id="u", created_at=datetime(2026, 10, 20 + day, 9, 0, tzinfo=UTC))
        asked = memory.retrieve("How many Snowflake credits did we use in October?", user_id="u", now=now)
        assert asked.memories[0].id == report.id
        assert "names a day in 'in October'" in asked.memories[0].reasons
        request = memory.retrieve("Write me a query of the Snowflake credits used in October.", user_id="u", now=now)
        assert request.memories[0].id == report.id
        assert "names a day in 'in October'" not in request.memories[0].reasons


def test_what_was_told_the_next_day_answers_a_question_about_the_day(tmp_path: Path) -> None:
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    sunday = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        told = memory.add("Leo lost his first tooth yesterday, he's so proud.", user_id="u", created_at=MONDAY)
        memory.add("The plumber fixed the kitchen sink.", user_id="u", created_at=sunday)
        memory.add("Leo's piano lesson moved to Thursdays.", user_id="u", created_at=sunday - timedelta(days=20))
        memory.add("Leo has a cold and stays home today.", user_id="u", created_at=now)  # said long after Sunday
        memory.add("Leo starts swimming lessons in January.", user_id="u", created_at=MONDAY)  # tells of no day gone
        answer = memory.retrieve("What happened with Leo on Sunday?", user_id="u", now=now).memories
        found = {m.content: m for m in answer}
        assert found[told.content].signals["names_day"] > 0
        assert "names a day in 'on Sunday'" in found[told.content].reasons
        assert all(m.signals.get("names_day", 0.0) == 0.0 for c, m in found.items() if c != told.content)


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


def test_a_local_day_is_told_of_the_next_local_morning() -> None:
    from zoneinfo import ZoneInfo

    from engram.timeparse import parse_time_scope

    la = ZoneInfo("America/Los_Angeles")
    sunday = parse_time_scope("What happened on Sunday?", datetime(2026, 11, 24, 12, 0, tzinfo=la))
    assert sunday is not None  # Sunday in Los Angeles: Sunday 08:00 to Monday 07:59 UTC
    monday_morning = datetime(2026, 11, 23, 8, 0, tzinfo=la).astimezone(UTC)  # 16:00 UTC, as stored
    told = _record("Leo lost his first tooth yesterday.", monday_morning)
    assert mentions_inside(told, sunday, datetime(2026, 11, 24, 20, 0, tzinfo=UTC))


def test_days_to_come_are_found_behind_many_newer_memories(tmp_path: Path) -> None:
    """The stores index the days each memory names: a plan said before a busy week is still found."""
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Dentist appointment on Dec 1 at 9am.", user_id="u", created_at=now - timedelta(days=10))
        memory.add_many({"content": f"Shipped build {i} to the staging server.", "user_id": "u",
                         "created_at": now - timedelta(hours=i + 1)} for i in range(150))
        found = memory.retrieve("What do I have next week?", user_id="u", now=now).memories
        assert found[0].content == "Dentist appointment on Dec 1 at 9am."
        assert found[0].signals["names_day"] == 1.0


def test_a_day_told_of_behind_many_newer_memories_is_found(tmp_path: Path) -> None:
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        told = memory.add("Our first snow day was on November 22, the kids built a fort.", user_id="u",
                          created_at=datetime(2026, 11, 23, 9, 0, tzinfo=UTC))
        memory.add_many({"content": f"What happened on build {i}: it shipped to staging.", "user_id": "u",
                         "created_at": datetime(2026, 11, 23, 10, tzinfo=UTC) + timedelta(minutes=5 * i)}
                        for i in range(400))  # more than any source reads
        found = memory.retrieve("What happened on Sunday?", user_id="u", now=now).memories
        assert found and found[0].id == told.id
        assert found[0].signals["names_day"] > 0


def test_what_is_told_of_days_gone_does_not_crowd_out_plans(tmp_path: Path) -> None:
    """A question about days to come reads only dates named: newer remarks on days gone by
    ("yesterday ...") do not fill its read."""
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)  # a Friday
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Dentist appointment on Nov 28.", user_id="u", created_at=datetime(2026, 11, 10, tzinfo=UTC))
        memory.add_many({"content": f"Yesterday we shipped build {i} to staging.", "user_id": "u",
                         "created_at": datetime(2026, 11, 24, tzinfo=UTC) + timedelta(minutes=30 * i)}
                        for i in range(125))
        found = memory.retrieve("What's happening this week?", user_id="u", now=now).memories
        assert found[0].content == "Dentist appointment on Nov 28."


def test_a_questions_calendar_is_the_zone_of_its_now(tmp_path: Path) -> None:
    """"Today" at 7pm in Los Angeles is the Los Angeles day, which began in UTC's yesterday: the
    zone of ``now`` is kept, not read as UTC."""
    from zoneinfo import ZoneInfo

    la = ZoneInfo("America/Los_Angeles")
    evening = datetime(2026, 11, 24, 19, 0, tzinfo=la)  # Nov 25, 03:00 UTC
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        morning = memory.add("Went for a run by the river.", user_id="u",
                             created_at=datetime(2026, 11, 24, 9, 0, tzinfo=la))  # Nov 24, 17:00 UTC
        memory.add("Cleaned the garage.", user_id="u", created_at=datetime(2026, 11, 23, 9, 0, tzinfo=la))
        every = RetrievalConfig(min_score=0.0)  # the fake embedder gives these no meaning to match
        result = memory.retrieve("What did I do today?", user_id="u", now=evening, config=every)
        assert result.metadata.time_range is not None
        assert result.metadata.time_range.start == datetime(2026, 11, 24, tzinfo=la).astimezone(UTC)
        assert result.memories[0].id == morning.id
        # The same instant in UTC asks about the UTC day, which holds nothing yet.
        in_utc = memory.retrieve("What did I do today?", user_id="u", now=evening.astimezone(UTC), config=every)
        assert in_utc.metadata.time_range is not None
        assert in_utc.metadata.time_range.start == datetime(2026, 11, 25, tzinfo=UTC)


def test_the_days_a_memory_names_are_read_in_the_askers_zone(tmp_path: Path) -> None:
    """"Tomorrow" asked at 10am in Los Angeles on Nov 24 is Nov 25 there: a plan for Nov 26 is not
    in it, though Nov 25 in Los Angeles reaches into Nov 26 in UTC."""
    from zoneinfo import ZoneInfo

    la = ZoneInfo("America/Los_Angeles")
    morning = datetime(2026, 11, 24, 10, 0, tzinfo=la)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        soon = memory.add("Dentist appointment on Nov 25.", user_id="u", created_at=morning - timedelta(days=9))
        later = memory.add("Haircut on Nov 26.", user_id="u", created_at=morning - timedelta(days=9))
        found = {m.id: m for m in memory.retrieve("What do I have tomorrow?", user_id="u", now=morning,
                                                   config=RetrievalConfig(min_score=0.0)).memories}
        assert found[soon.id].signals["names_day"] > 0
        assert found.get(later.id) is None or found[later.id].signals.get("names_day", 0.0) == 0.0


def test_a_configured_time_zone_is_the_questions_calendar(tmp_path: Path) -> None:
    """``RetrievalConfig(timezone=...)``: a ``now`` given in UTC (or none) is read in that zone."""
    from zoneinfo import ZoneInfo

    import pytest

    from engram.errors import ConfigError

    la = ZoneInfo("America/Los_Angeles")
    evening_utc = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)  # Nov 24, 19:00 in Los Angeles
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Went for a run by the river.", user_id="u", created_at=datetime(2026, 11, 24, 9, 0, tzinfo=la))
        there = RetrievalConfig(min_score=0.0, timezone="America/Los_Angeles")
        scope = memory.retrieve("What did I do today?", user_id="u", now=evening_utc, config=there).metadata.time_range
        assert scope is not None and scope.start == datetime(2026, 11, 24, tzinfo=la).astimezone(UTC)
        clock = memory.retrieve("What did I do today?", user_id="u", config=there).metadata.time_range
        assert clock is not None and clock.start == datetime.now(la).replace(
            hour=0, minute=0, second=0, microsecond=0).astimezone(UTC)
    with pytest.raises(ConfigError, match="timezone"):
        RetrievalConfig(timezone="Mars/Olympus_Mons")
