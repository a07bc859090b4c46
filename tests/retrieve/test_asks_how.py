"""A question of how something is or was done is answered by the assistant's reply to the user's turn
that asked it: the turn matches the question's words, the reply holds the how."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram import Memory, MemoryEntry, RetrievalConfig
from engram.ext import Embedder
from engram.retrieve.episodes import HOW_REPLY_SHARE, REPLY_SHARE
from engram.retrieve.understand import understand
from engram.retrieve.your_words import asks_how

NOW = datetime(2026, 11, 28, tzinfo=UTC)


@pytest.mark.parametrize(("query", "how"), [
    ("How was I supposed to switch my sleep from nights back to days before the new job?", True),
    ("What's the stretching and icing routine for my heel, step by step?", True),
    ("How did we fix the 502s on deploy?", True),
    ("How should we check a new test set for overlap with the training data?", True),
    ("how do we rotate the API keys", True),
    ("Add logging to the PDF render step.", False),  # work the user's rules govern, not a question
    ("Write the steps to deploy the app", False),
    ("How many night shifts did I work in June?", False),
    ("When did I ask about switching back to days?", False),
    ("Why did the build fail?", False),
])
def test_questions_of_how(query: str, how: bool) -> None:
    assert asks_how(query, understand(query, now=NOW).procedural) is how
    assert understand(query, now=NOW).how is how


PLAN = ("Four days is enough if you're deliberate about it. The plan:\n\n"
        "Thursday, after your last shift ends at 7:30 a.m.: don't sleep all day. Take a short nap of 90 minutes "
        "at most, then stay up and get outside in daylight. Go to bed around 10 p.m. even if you're wired.\n"
        "Friday: up by 8 a.m. no matter what. Bright light first thing, caffeine only before noon.\n"
        "Saturday and Sunday: same wake time, exercise in the morning, dim screens after 9 p.m.\n"
        "Expect Friday to feel rough; by Monday your body will mostly be on days.")


def _chat(memory: Memory) -> None:
    start = NOW - timedelta(days=60)
    turns = [
        ("user", "Two months of nights. I'm sleeping maybe 5 hours a day and the neighbours are renovating."),
        ("assistant", "That's a lot of sleep debt. Blackout curtains and earplugs are worth trying first."),
        ("user", "I did nights for 2 years before my daughter was born, I know the drill."),
        ("user", "last night shift is Wednesday into Thursday morning, so I have Thursday to Sunday to turn back "
                 "into a day person. how do I flip my sleep from nights to days before the new job?"),
        ("assistant", PLAN),
        ("user", "vitamin C tablet, done. going to sleep. good night. good day. whatever it is"),
    ]
    memory.add_many([
        {"content": text, "user_id": "u", "role": role, "session_id": f"s{at // 3}",
         "created_at": start + timedelta(days=at // 3 * 20, minutes=at)}
        for at, (role, text) in enumerate(turns)
    ])


def _text(entry: MemoryEntry) -> str:  # whole: an entry's content may be clipped
    assert entry.record is not None
    return entry.record.content


def _ask(embedder: Embedder, *queries: str) -> list[tuple[MemoryEntry, ...]]:
    """The top 3 for each query over the chat, in one store."""
    config = RetrievalConfig(top_k=3, min_score=0.0, cache_ttl=0)
    with Memory(":memory:", embedder=embedder) as memory:
        _chat(memory)
        return [memory.retrieve(query, user_id="u", config=config, now=NOW).memories for query in queries]


def test_the_reply_to_the_turn_that_asked_how_comes_first(embedder: Embedder) -> None:
    # The other question asks neither when (what tells a day gains on top of its relevance) nor how it turned out.
    how, when = _ask(embedder, "How was I supposed to switch my sleep from nights back to days before the new job?",
                     "Which shift ended my run of nights before the new job?")
    assert _text(how[0]) == PLAN  # the user's turn that asked it ranked first before
    signals = {_text(m): m.signals or {} for m in how}
    asked = next(_text(m) for m in how if _text(m).startswith("last night shift"))
    assert signals[PLAN]["conversation_context"] == pytest.approx(signals[asked]["relevance"] * HOW_REPLY_SHARE,
                                                                  rel=0.05)
    assert _text(when[0]).startswith("last night shift")  # other questions: the turn that says it
    lent = {_text(m): m.signals or {} for m in when}
    assert lent[PLAN]["conversation_context"] == pytest.approx(lent[_text(when[0])]["relevance"] * REPLY_SHARE,
                                                               rel=0.05)


def test_the_reply_is_the_answer_to_a_question_of_what_the_assistant_said(embedder: Embedder) -> None:
    [found] = _ask(embedder, "What did you tell me to do to flip my sleep from nights to days before the new job?")
    assert _text(found[0]) == PLAN  # the user's turn that asked for it ranked first before
