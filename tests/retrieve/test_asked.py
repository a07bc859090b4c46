"""A query that asks what someone asked is answered by their questions, whatever their words."""

from __future__ import annotations

from datetime import UTC, datetime

from engram.config import RetrievalConfig
from engram.memory import Memory
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def _team(memory: Memory) -> None:
    said = [
        ("Bob", "2026-11-17T10:30:00+00:00", "Has Globex paid INV-1187 yet? They are overdue."),
        ("Bob", "2026-11-20T15:40:00+00:00", "Good. I was not looking forward to telling Acme about the delay."),
        ("Bob", "2026-11-18T11:00:00+00:00", "Lunch order going in, Thai place, last call."),
        ("Lena", "2026-11-18T09:00:00+00:00", "Are we open between Christmas and New Year? Customers are asking."),
        ("assistant", "2026-11-18T09:01:00+00:00", "Would you like me to check the calendar?"),
    ]
    memory.add_many([{"content": text, "user_id": "u", "role": who, "created_at": when} for who, when, text in said])


def test_asking_queries_are_recognised() -> None:
    assert understand("What did Bob ask last week?", now=NOW).asks
    assert understand("Which questions came in yesterday?", now=NOW).asks
    assert not understand("What did Bob say last week?", now=NOW).asks
    assert not understand("I was wondering what Bob said about Acme", now=NOW).asks
    assert understand("What did Grandma ask for on Tuesday?", now=NOW).asks
    # Asking a price or a favour still to come is not a question of what was asked.
    assert not understand("How much should I ask for a little succulent pot?", now=NOW).asks
    assert not understand("Draft an email to ask for a refund", now=NOW).asks
    assert not understand("Draft an email asking for a refund", now=NOW).asks
    assert not understand("Should I ask Bob for a raise?", now=NOW).asks
    assert understand("Can you list the questions Bob asked last week?", now=NOW).asks
    # Why something was asked for wants the reason; who asked why wants the asker.
    assert not understand("Why did Nadia ask to begin the Edinburgh role later than planned?", now=NOW).asks
    assert understand("Who asked why only checkout had a disruption budget?", now=NOW).asks


def test_the_named_askers_question_comes_first(each_backend: Memory) -> None:
    _team(each_backend)
    result = each_backend.retrieve("What did Bob ask last week?", user_id="u", now=NOW,
                                   config=RetrievalConfig(top_k=5))
    top = result.memories[0]
    assert top.content.startswith("Has Globex paid INV-1187 yet?")
    assert top.signals["asked"] == 1.0 and "a question, as asked" in top.reasons
    # Lena asked too, but the query names Bob: her question gains nothing.
    lena = next(m for m in result.memories if m.content.startswith("Are we open"))
    assert lena.signals["asked"] == 0.0


def test_without_a_named_asker_the_assistants_questions_gain_nothing(each_backend: Memory) -> None:
    _team(each_backend)
    result = each_backend.retrieve("Which questions came in last week?", user_id="u", now=NOW,
                                   config=RetrievalConfig(top_k=10, min_score=0.0))
    asked = {m.content.split()[0]: m.signals["asked"] for m in result.memories}
    assert asked["Has"] == 1.0 and asked["Are"] == 1.0
    assert asked["Would"] == 0.0 and asked["Good."] == 0.0
