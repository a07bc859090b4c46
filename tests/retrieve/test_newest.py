"""Questions about the newest of something: recognised by "last", "latest", "newest" or "most
recent" when they do not scope time, answered by the newest of the memories that fit the question."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.model import Entity, MemoryRecord, TimeRange
from engram.retrieve.names import named_in_lowercase
from engram.retrieve.newest import FIT_MEANING, Newest, asks_for_the_newest, newest_first
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("query", "subject"), [
    ("When did Acme last order?", {"order"}),
    ("What was the last thing Bob said?", set()),
    ("What was Tom's last message?", set()),
    ("What's the latest on Pinecrest?", set()),
    ("What’s the latest with Globex?", set()),
    ("What did Jess say most recently?", set()),
    ("Which is the newest invoice?", {"invoic"}),
    ("When was the last time I went to the gym?", {"gym"}),
    ("What was my last trip?", {"trip"}),
    ("What was the most recent order from Acme?", {"order"}),
    ("What's the most-recent order from Acme?", {"order"}),
    ("What were Tom's last two messages?", set()),
    ("What were Acme's last few orders?", {"order"}),
    ("Tom's last message?", set()),  # a name that opens the question is still a name
    ("What's the very latest on Acme?", set()),
    ("Who spoke last?", {"spoke"}),
    ("When did Mark last message the family chat?", set()),  # where it was said, not what about
    ("When did Priya last post in the team chat?", set()),
])
def test_questions_about_the_newest(query: str, subject: set[str]) -> None:
    newest = asks_for_the_newest(query)
    assert newest is not None and newest.subject == subject
    assert understand(query, now=NOW).newest == tuple(sorted(subject))


@pytest.mark.parametrize("query", [
    "What did I do last weekend?",  # a time scope
    "What did Bob ask last week?",
    "Which orders came in over the last two days?",
    "What happened in the last few months?",
    "What did we book for last Christmas?",
    "What is Alice's last name?",
    "It arrived at last.",
    "Send it by Friday at the latest.",
    "What did Melanie paint recently?",  # recent when she spoke of it, not her newest memory
    "What problems came up lately?",
    "What did we talk about last time?",  # the last conversation, answered by its own rule
    "When did Acme order?",
    "What's the last step of the deploy?",  # a place in a sequence
    "How long does the battery last?",  # the verb
    "Did the meeting last long?",
    "What was Acme's second-to-last order?",
    "What did Acme order the week before last?",
    "Who is our last-mile delivery partner?",
    "I need it by Friday at the very latest.",
    "Is Last.fm still running?",
])
def test_other_questions_are_not(query: str) -> None:
    assert understand(query, now=NOW).newest is None


def test_a_long_text_is_not_read() -> None:
    assert asks_for_the_newest("When did Acme last order? " + "x " * 200) is None


def _record(mid: str, content: str, when: datetime) -> MemoryRecord:
    return MemoryRecord(id=mid, user_id="u", content=content, kind="message", created_at=when, recorded_at=when,
                        content_hash=mid)


def test_the_newest_of_what_fits_gains_most() -> None:
    day = timedelta(days=1)
    records = [
        _record("first", "Acme ordered 12 docks.", NOW - 9 * day),
        _record("second", "Acme placed an order for 30 monitors.", NOW - 5 * day),
        _record("words", "Acme called about an invoice.", NOW - 2 * day),  # names Acme, not an order
        _record("other", "Globex ordered 20 docks.", NOW - day),  # an order, not Acme's
        _record("future", "Acme orders 5 tablets.", NOW + day),  # after ``now``
        _record("echo", "When did Acme last order?", NOW - timedelta(minutes=1)),  # the question itself
    ]
    named = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    far = np.zeros(len(records))
    ONE = np.ones(len(records))
    newest = Newest("When did Acme last order?", frozenset({"order"}))
    value = newest_first(records, newest, named=named, meaning=far, keywords=ONE, now=NOW).tolist()
    assert value[1] == 1.0 and value[0] == pytest.approx(0.7)
    assert value[2:] == [0.0, 0.0, 0.0, 0.0]
    # Close enough in meaning, a memory fits without the subject's words.
    close = far.copy()
    close[2] = FIT_MEANING
    assert newest_first(records, newest, named=named, meaning=close, keywords=ONE, now=NOW).tolist()[2] == 1.0


def test_a_speaker_s_own_words_fit_before_others_mentions_of_them() -> None:
    records = [
        _record("own", "Thursday works.", NOW - timedelta(days=3)),
        _record("mention", "Tom finished the drop with a rental.", NOW - timedelta(days=1)),
    ]
    value = newest_first(records, Newest("What was Tom's last message?", frozenset()),
                         named=np.array([1.0, 0.5]), meaning=np.zeros(2), keywords=np.ones(2), now=NOW).tolist()
    assert value == [1.0, 0.0]


def test_the_newest_answer_comes_first(tmp_path: Path) -> None:
    day = timedelta(days=1)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_many([
            {"user_id": "u", "content": "Acme ordered 12 docking stations, their first order.",
             "created_at": NOW - 60 * day},
            {"user_id": "u", "content": "Acme ordered 30 monitors.", "created_at": NOW - 30 * day},
            {"user_id": "u", "content": "Acme asked about their invoice.", "created_at": NOW - 2 * day},
            {"user_id": "u", "content": "Globex ordered 20 docks.", "created_at": NOW - day},
        ])
        found = memory.retrieve("When did Acme last order?", user_id="u", now=NOW).memories
        assert found[0].content == "Acme ordered 30 monitors."
        assert found[0].signals["newest"] == 1.0
        assert "the newest of what the query asks about" in found[0].reasons
        plain = memory.retrieve("When did Acme order?", user_id="u", now=NOW).memories
        assert all(m.signals.get("newest", 0.0) == 0.0 for m in plain)


def test_nothing_named_and_no_subject_fits_only_by_meaning() -> None:
    records = [_record("plants", "Remember to water the plants.", NOW - timedelta(days=1)),
               _record("close", "Tom wrote: see you at the depot.", NOW - timedelta(days=2))]
    newest = Newest("What was Tom's last message?", frozenset())
    gain = newest_first(records, newest, named=np.zeros(2), meaning=np.array([0.1, 0.95]), keywords=np.ones(2),
                        now=NOW, names_someone=True)
    assert gain.tolist() == [0.0, 1.0] and (gain > 0).tolist() == [False, True]


def test_what_repeats_the_question_or_lies_outside_its_time_does_not_fit() -> None:
    day = timedelta(days=1)
    records = [
        _record("again", "When did Acme last order? I need it for the invoice.", NOW - timedelta(minutes=1)),
        _record("order", "Acme ordered 30 monitors.", NOW - 3 * day),
        _record("older", "Acme ordered 12 docks.", NOW - 9 * day),
    ]
    newest = Newest("When did Acme last order?", frozenset({"order"}))
    named, far, one = np.ones(3), np.zeros(3), np.ones(3)
    assert newest_first(records, newest, named=named, meaning=far, keywords=one, now=NOW).tolist() == [
        0.0, 1.0, 0.7]
    week = TimeRange(start=NOW - 10 * day, end=NOW - 5 * day)
    assert newest_first(records, newest, named=named, meaning=far, keywords=one, now=NOW,
                        time_range=week).tolist() == [0.0, 0.0, 1.0]


def test_words_nothing_named_says_leave_nothing_fitting() -> None:
    day = timedelta(days=1)
    records = [_record("ski", "Hit the slopes in Aspen!", NOW - 40 * day),
               _record("lunch", "Anyone up for lunch?", NOW - day)]
    gain = newest_first(records, Newest("When did Mark last go skiing?", frozenset({"ski"})), named=np.ones(2),
                        meaning=np.zeros(2), keywords=np.zeros(2), now=NOW)
    assert gain.tolist() == [0.0, 0.0]  # relevance alone ranks them: the slopes can come first
    assert not (gain > 0).any()


def test_a_known_name_written_in_lowercase_is_no_subject() -> None:
    known = [Entity("customer:acme", "customer", "Acme", ("acme corporation",))]
    upper = understand("When did Acme last order?", now=datetime(2026, 11, 23, tzinfo=UTC), known_entities=known)
    lower = understand("when did acme last order?", now=datetime(2026, 11, 23, tzinfo=UTC), known_entities=known)
    assert "customer:acme" in lower.entities
    assert lower.newest == upper.newest == ("order",)


def test_a_speaker_named_in_lowercase_is_named(tmp_path: Path) -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        for i, (role, text) in enumerate([("Priya", "Can someone send me the delivery note?"),
                                          ("Tom", "Priya, the delivery note is in the shared drive."),
                                          ("Mark", "The van is booked for Friday."),
                                          ("Tom", "Mark the calendar: stock count on Friday.")]):
            memory.add(text, user_id="u", role=role, session_id="team", created_at=now - timedelta(hours=10 - i))
        last = memory.retrieve("when did priya last post?", user_id="u", now=now).memories
        assert last[0].content == "Can someone send me the delivery note?"
        assert last[0].signals["newest"] == 1.0
        # A word that is a speaker's name, where no name stands, names no one.
        mark = memory.retrieve("can you mark friday as busy?", user_id="u", now=now).memories
        assert all(m.signals.get("entity_overlap", 0.0) == 0.0 for m in mark)


@pytest.mark.parametrize(("query", "named"), [
    ("when did priya last post?", ("mention:priya",)),
    ("Did priya go to the gym?", ("mention:priya",)),
    ("what's priya's email?", ("mention:priya",)),
    ("ask jess about it", ("mention:jess",)),
    ("what is art?", ()),
    ("did jack up the price?", ()),
    ("remember to mark friday as busy", ()),
    ("the bill's total?", ()),
    ("what did the bill say about tax?", ()),
])
def test_where_a_lowercase_word_is_a_speaker_s_name(query: str, named: tuple[str, ...]) -> None:
    speakers = [f"mention:{name}" for name in ("priya", "jess", "art", "jack", "mark", "bill")]
    plan = named_in_lowercase(understand(query, now=datetime(2026, 11, 23, tzinfo=UTC)), speakers)
    assert plan.entities == named
