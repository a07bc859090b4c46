"""Questions about the last conversation: recognised only as the whole question, answered by the
newest conversation between the user and the assistant, whatever its words."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.model import MemoryRecord
from engram.retrieve.latest import Asked, asks_for_the_last_conversation, conversation_recency
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("query", [
    "What did we talk about last time?",
    "Hey, what did we discuss last time?",
    "what were we talking about",
    "What were we talking about again?",
    "Where did we leave off?",
    "Where were we?",
    "Let's pick up where we left off.",
    "Let’s continue where we left off",
    "What was the last thing I asked you?",
    "What's the last thing I asked you about?",
    "Remind me what we were working on.",
    "Can you remind me what we talked about?",
    "What was I working on?",
    "What did I ask you last time?",
    "What did you tell me last time?",
    "What did we last talk about?",
    "What did we talk about, last time?",
    "What did we cover last time?",
    "Recap our last conversation",
    "What was our last chat about?",
    "What was the previous conversation about?",
    "Summarize our previous session",
    "What did we talk about most recently?",
    "What did we discuss last?",
    "What did we talk about last again?",
])
def test_questions_about_the_last_conversation(query: str) -> None:
    assert asks_for_the_last_conversation(query)
    assert understand(query, now=NOW).latest


@pytest.mark.parametrize("query", [
    "What did we talk about with Acme?",  # one thing, not the last conversation
    "What did I tell you?",  # what is known of the user as a whole
    "What did I tell you about the budget?",
    "What did Bob ask last week?",
    "What did we decide yesterday?",
    "What did we talk about yesterday?",  # a day: the time scope answers it
    "What was the last thing Bob said?",
    "When did we last talk about the budget?",
    "Where did I leave my keys?",
    "What were we doing in Lisbon?",
    "What did I say about the hotel last time?",
    "What problems came up recently?",
    "What did we talk about last week?",  # "last" only as the question's last word
    "What did we talk about most recently with Acme?",
    # a sentence that ends like one, not a question about the conversation
    "That's not what I said.",
    "Ignore what I said.",
    "Here's what I did.",
    "Guess what I did!",
    "I don't care what we talked about.",
    "What did I do?",
    "Tell me what we do",
    "Do you remember what I do?",
])
def test_other_questions_are_not(query: str) -> None:
    assert not asks_for_the_last_conversation(query)
    assert not understand(query, now=NOW).latest


def test_a_long_text_is_read_in_linear_time() -> None:
    started = time.perf_counter()
    assert not asks_for_the_last_conversation("what did we talk about" + " " * 50_000 + "x")
    assert time.perf_counter() - started < 0.05


def _message(mid: str, session: str | None, role: str, when: datetime, content: str = "words",
             kind: str = "message", user: str = "u") -> MemoryRecord:
    return MemoryRecord(id=mid, user_id=user, content=content, kind=kind, role=role, session_id=session,
                        created_at=when, recorded_at=when, content_hash=mid)


ASKED = Asked("u", "What did we talk about last time?")


def test_recency_by_conversation() -> None:
    day = timedelta(days=1)
    records = [
        _message("old-q", "s1", "user", NOW - 3 * day),
        _message("old-a", "s1", "assistant", NOW - 3 * day + timedelta(minutes=1)),
        _message("team", "t", "bob", NOW - day),  # another speaker's, after s1 and before s2
        _message("summary", None, "", NOW - 2 * day, kind="summary"),
        _message("new-q", "s2", "user", NOW - 60 * timedelta(minutes=1)),
        _message("new-a", "s2", "assistant", NOW - 50 * timedelta(minutes=1)),
        _message("fact", None, "", NOW, kind="fact"),
        _message("no-session", None, "user", NOW - 5 * day),
    ]
    value = dict(zip([r.id for r in records], conversation_recency(records, ASKED, NOW).tolist(), strict=True))
    assert value["new-a"] == 1.0  # where the last conversation was left off
    assert 0.5 < value["new-q"] < value["new-a"]
    assert value["old-a"] == pytest.approx(0.5)  # one conversation begun since
    assert value["summary"] == pytest.approx(0.5)  # one of ours begun since
    assert value["team"] == pytest.approx(0.25)  # one begun since, and not ours
    assert value["no-session"] == pytest.approx(0.25)  # a conversation of its own, two ended since
    assert value["fact"] == 0.0  # holds whenever it was stored


def test_the_question_stored_before_it_was_asked_is_not_part_of_the_answer() -> None:
    day = timedelta(days=1)
    records = [
        _message("old-q", "s1", "user", NOW - 3 * day, "Where did we leave off?"),  # asked before
        _message("lisbon", "s1", "user", NOW - 3 * day + timedelta(minutes=1), "Plan the Lisbon trip."),
        _message("dentist", "s2", "user", NOW - day, "Book the dentist for Friday."),
        _message("asking", "s3", "user", NOW, "Where did we  LEAVE off?"),
    ]
    asked = Asked("u", "where did we leave off?")
    value = conversation_recency(records, asked, NOW).tolist()
    assert value[3] == 0.0 and value[2] == 1.0  # the last conversation is s2, not the question's own
    assert value[1] == pytest.approx(0.5)  # an older asking of it leaves its conversation as it was
    # One session for everything (a chat thread): the turns before the question are the last ones.
    thread = [_message(r.id, "t", r.role or "user", r.created_at, r.content) for r in records]
    value = conversation_recency(thread, asked, NOW).tolist()
    assert value[3] == 0.0 and value[2] == 1.0 and 0.75 <= value[1] < value[2]


def test_conversations_are_the_user_s_own_ordered_by_their_last_turn_and_none_after_now() -> None:
    hour = timedelta(hours=1)
    records = [
        _message("thread-start", "long", "user", NOW - 72 * hour),
        _message("short", "yesterday", "user", NOW - 24 * hour),
        _message("thread-resumed", "long", "assistant", NOW - hour),  # this one ended last
        _message("shared", "long", "user", NOW - hour / 2, user="kb"),  # a shared scope's turn
        _message("future", "later", "user", NOW + hour),  # after ``now`` (a replay)
        _message("run-1", None, "user", NOW - 30 * hour),  # two runs without a session, 3 hours apart
        _message("run-2", None, "assistant", NOW - 30 * hour + timedelta(minutes=90)),
        _message("run-3", None, "user", NOW - 26 * hour),
    ]
    value = dict(zip([r.id for r in records], conversation_recency(records, ASKED, NOW).tolist(), strict=True))
    assert value["thread-resumed"] == 1.0 and value["thread-start"] == pytest.approx(0.75)
    assert value["short"] == pytest.approx(0.5)
    assert value["shared"] == 0.0 and value["future"] == 0.0
    assert value["run-3"] == pytest.approx(0.25)  # its own run, ended after run-1's
    assert value["run-2"] == pytest.approx(0.125) and value["run-1"] == pytest.approx(0.125 * 0.75)


def test_what_the_user_said_reads_the_user_s_turns() -> None:
    records = [
        _message("asked", "s1", "user", NOW - timedelta(minutes=2), "Book Nopa for Friday."),
        _message("answered", "s1", "assistant", NOW - timedelta(minutes=1), "Done."),
    ]
    mine = conversation_recency(records, Asked("u", "What was the last thing I asked you?"), NOW).tolist()
    assert mine == [1.0, 0.0]
    ours = conversation_recency(records, ASKED, NOW).tolist()
    assert ours == [0.75, 1.0]
    # A user who speaks under their own id (Mem0's ``name``) is the user too.
    named = [_message("mine", "s1", "U", NOW - timedelta(minutes=2)), _message("bob", "s2", "bob", NOW)]
    assert conversation_recency(named, Asked("u", "What did I ask you last time?"), NOW).tolist() == [1.0, 0.0]


def test_the_last_conversation_is_found_past_newer_documents(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Book a table at Nopa for Friday.", user_id="u", role="user", session_id="s1",
                   created_at=NOW - timedelta(days=2))
        memory.add_many([{"user_id": "u", "content": f"Manual page {i}.", "kind": "document",
                          "created_at": NOW - timedelta(hours=1)} for i in range(60)])
        found = memory.retrieve("What did we talk about last time?", user_id="u", now=NOW).memories
        assert found and found[0].content == "Book a table at Nopa for Friday."
        only = memory.retrieve("What did we talk about last time?", user_id="u", now=NOW,
                               filters={"kinds": ["document"]}).memories
        assert all(m.signals.get("last_conversation", 0.0) == 0.0 for m in only)


def test_the_last_conversation_answers_whatever_its_words(tmp_path: Path) -> None:
    day = timedelta(days=1)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_many([
            {"user_id": "u", "content": "We should talk about the roadmap soon.", "role": "user",
             "session_id": "a", "created_at": NOW - 9 * day},
            {"user_id": "u", "content": "Did you talk to the landlord last time?", "role": "bob",
             "session_id": "team", "created_at": NOW - 2 * day},
            {"user_id": "u", "content": "Where can I renew my passport?", "role": "user",
             "session_id": "b", "created_at": NOW - 5 * day},
            {"user_id": "u", "content": "Book a table at Nopa for Friday, 7pm.", "role": "user",
             "session_id": "c", "created_at": NOW - 3 * day},
            {"user_id": "u", "content": "Done: Nopa, Friday at 7pm, four people.", "role": "assistant",
             "session_id": "c", "created_at": NOW - 3 * day + timedelta(minutes=1)},
            {"user_id": "u", "content": "I'm vegetarian.", "kind": "fact", "created_at": NOW - day},
        ])
        found = memory.retrieve("What did we talk about last time?", user_id="u", now=NOW).memories
        assert [m.content for m in found[:2]] == ["Done: Nopa, Friday at 7pm, four people.",
                                                   "Book a table at Nopa for Friday, 7pm."]
        assert found[0].signals["last_conversation"] == 1.0
        assert "from the last conversation" in found[0].reasons
        # "I" is the user: the last question the user asked, not another speaker's newer one.
        asked = memory.retrieve("What was the last thing I asked you?", user_id="u", now=NOW).memories
        assert asked[0].content == "Book a table at Nopa for Friday, 7pm."
        assert "Did you talk to the landlord last time?" not in {m.content for m in asked[:2]}
        # Another question reads memories by their words as before.
        other = memory.retrieve("When is the table at Nopa?", user_id="u", now=NOW).memories
        assert all(m.signals.get("last_conversation", 0.0) == 0.0 for m in other)
