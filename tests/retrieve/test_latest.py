"""Questions about the last conversation: recognised only as the whole question, answered by the
newest conversation between the user and the assistant, whatever its words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.model import MemoryRecord
from engram.retrieve.latest import asks_for_the_last_conversation, conversation_recency
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("query", [
    "What did we talk about last time?",
    "Hey, what did we discuss last time?",
    "what were we talking about",
    "Where did we leave off?",
    "Let's pick up where we left off.",
    "What was the last thing I asked you?",
    "Remind me what we were working on.",
    "What was I working on?",
    "What have we been working on?",
    "What did I ask you last time?",
    "Recap our last conversation",
    "What was our last chat about?",
    "Summarize our previous session",
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
    "What was the last thing Bob said?",
    "When did we last talk about the budget?",
    "Where did I leave my keys?",
    "What were we doing in Lisbon?",
    "What did I say about the hotel last time?",
    "What problems came up recently?",
])
def test_other_questions_are_not(query: str) -> None:
    assert not asks_for_the_last_conversation(query)
    assert not understand(query, now=NOW).latest


def _message(mid: str, session: str | None, role: str, when: datetime, content: str = "words",
             kind: str = "message") -> MemoryRecord:
    return MemoryRecord(id=mid, user_id="u", content=content, kind=kind, role=role, session_id=session,
                        created_at=when, recorded_at=when, content_hash=mid)


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
    value = dict(zip([r.id for r in records], conversation_recency(records).tolist(), strict=True))
    assert value["new-a"] == 1.0  # where the last conversation was left off
    assert 0.5 < value["new-q"] < value["new-a"]
    assert value["old-a"] == pytest.approx(0.5)  # one conversation begun since
    assert value["summary"] == pytest.approx(0.5)  # one of ours begun since
    assert value["team"] == pytest.approx(0.25)  # one begun since, and not ours
    assert value["no-session"] == pytest.approx(0.25)  # its own day's conversation, two begun since
    assert value["fact"] == 0.0  # holds whenever it was stored


def test_the_conversation_the_question_was_asked_in_is_not_the_last() -> None:
    records = [
        _message("before", "s1", "user", NOW - timedelta(days=1), "Book the dentist for Friday."),
        _message("asking", "s2", "user", NOW, "What did we talk about  LAST time?"),
    ]
    value = conversation_recency(records, "what did we talk about last time?").tolist()
    assert value == [1.0, 0.0]
    assert conversation_recency(records).tolist()[1] == 1.0


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
