"""A question about what the assistant said reads the assistant's long replies as its own words: the
one reply that holds what was asked is not buried for its length under the user's short turns."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from engram import Memory, MemoryEntry, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.ext import Embedder
from engram.model import MemoryRecord
from engram.retrieve.episodes import CAUSE_REPLY_SHARE, REPLY_SHARE, YOURS_REPLY_SHARE, lending
from engram.retrieve.keyword_evidence import length_discount
from engram.retrieve.turn_roles import said_by_the_assistant
from engram.retrieve.understand import understand
from engram.retrieve.your_words import asks_for_a_cause, asks_what_you_said

NOW = datetime(2026, 11, 28, tzinfo=UTC)
_STEPS = ("Here is how I would structure the handler. First validate the payload, then open a transaction, "
          "then write the ledger rows and the outbox event in that transaction, and only then acknowledge. ") * 6
REPLY = (_STEPS + "For posting a payment keep the isolation level at REPEATABLE READ, not SERIALIZABLE: retries on "
         "serialization failures would double the load at month end. " + _STEPS)
YOURS = "For posting a payment, which isolation level did you tell me to stick with?"
NEUTRAL = "For posting a payment, which isolation level should I stick with?"


@pytest.mark.parametrize("query", [
    YOURS,
    "There was an env var you mentioned to keep glibc from bloating the worker's memory",
    "Remind me what you said about polars",
    "What was your advice on the backfill?",
    "What did you put together for me on the first Sunday?",
    "What did the assistant recommend for the read timeout?",
    "What have you already told me about Kafka?",
    "What did you end up recommending?",
    "Can you remind me what you suggested for the timeout?",  # told again: no work its rules govern
    "Could you repeat the command you gave me for the backup?",
])
def test_questions_about_what_the_assistant_said(query: str) -> None:
    plan = understand(query, now=NOW)
    assert asks_what_you_said(query) and plan.yours and not plan.governed


@pytest.mark.parametrize("query", [
    NEUTRAL,
    "Can you suggest a dumbbell session for Monday?",  # a request now, not a question of what was said
    "What would you recommend for dinner?",
    "Can you put together a shopping list?",
    "Did I tell you about my knee?",
    "How did you fix it?",
    "What do you know about me?",
    "What's your recommendation for a laptop for coding?",
    "Thanks for your answer! How do I install numpy?",
    "Did you note my allergy?",  # whether it kept what the user said: the user's words answer it
    "Have you written down my new address?",
    "Where did you put my passport?",
])
def test_other_questions_do_not_ask_what_it_said(query: str) -> None:
    assert not asks_what_you_said(query) and not understand(query, now=NOW).yours


@pytest.mark.parametrize("query", [
    "Add logging to the retry loop in record_delivery, as you suggested.",
    "Show me the script you wrote for the backup",
])
def test_a_request_naming_what_was_said_is_still_a_request(query: str) -> None:
    assert not asks_what_you_said(query) and not understand(query, now=NOW).yours


def test_a_question_beside_a_request_still_asks_it() -> None:
    assert asks_what_you_said("For posting a payment, which isolation level did you tell me to stick with, "
                              "and how do I stop two webhooks racing?")


def _record(content: str, role: str, metadata: dict[str, str] | None = None) -> MemoryRecord:
    return MemoryRecord(id=f"{role}-{len(content)}", user_id="u", content=content, kind="message", created_at=NOW,
                        recorded_at=NOW, content_hash=content, role=role, metadata=metadata or {})


def test_the_assistants_long_reply_keeps_more_of_its_keyword_evidence_only_then() -> None:
    records = [_record(REPLY, "assistant"), _record(REPLY, "Sol", {"message_role": "assistant"}),
               _record(REPLY, "tool"), _record("A short turn.", " Assistant ")]
    assert [said_by_the_assistant(r) for r in records] == [True, True, False, True]
    assert not said_by_the_assistant(_record(REPLY, "tool", {"message_role": "assistant"}))
    plain, yours = length_discount(records, False), length_discount(records, True)
    assert yours[0] > plain[0] and yours[1] > plain[1]  # (500 / length) ** 0.4 against ** 0.75
    assert yours[2] == plain[2] and yours[3] == plain[3] == 1.0


def test_the_reply_that_holds_it_comes_first(embedder: Embedder) -> None:
    with Memory(":memory:", embedder=embedder) as memory:
        memory.add_many([
            {"content": "Posting a payment twice is what worries me most about the retry logic.", "user_id": "u",
             "role": "user"},
            {"content": REPLY, "user_id": "u", "role": "assistant"},
            {"content": "The payment service posts to the ledger every few seconds.", "user_id": "u", "role": "user"},
        ])
        config = RetrievalConfig(top_k=3, min_score=0.0, cache_ttl=0)
        yours = memory.retrieve(YOURS, user_id="u", config=config).memories
        neutral = memory.retrieve(NEUTRAL, user_id="u", config=config).memories
    assert yours[0].record is not None and yours[0].record.role == "assistant"
    assert neutral[0].record is not None and neutral[0].record.role == "user"  # as before for other questions


@pytest.mark.parametrize(("query", "cause"), [
    ("Why did we drop SQLAlchemy in the first place?", True),
    ("What actually caused acme-logistics to get two bills for October?", True),
    ("What was the underlying reason some patients saw times an hour off?", True),
    ("What is the root cause of the flaky test?", True),
    ("So why did the build fail?", True),
    ("Remind me why we picked Kafka", True),
    ("What led to the rollback?", True),
    ("How did you fix it?", False),
    ("What did the physio say about my knee?", False),
    ("Why don't we grab lunch on Friday?", False),
    ("The reason I ask is the deadline.", False),
])
def test_questions_of_a_cause(query: str, cause: bool) -> None:
    assert asks_for_a_cause(query) is cause and understand(query, now=NOW).cause is cause


def test_a_reply_takes_more_of_the_turn_it_follows_for_a_cause() -> None:
    asked = _record("Customer acme-logistics got invoices 4471 and 4472 for October. What happened?", "user")
    reply = MemoryRecord(id="reply", user_id="u", content=REPLY, kind="message", created_at=NOW.replace(minute=1),
                         recorded_at=NOW, content_hash="reply", role="assistant")
    beside = {asked.id: (reply.id,), reply.id: (asked.id,)}
    for share in (REPLY_SHARE, CAUSE_REPLY_SHARE):  # the reply is lent by the turn before it
        assert [(at, lent) for at, lent, _ in lending([asked, reply], beside, [], share)[1]] == [(0, share)]


def test_a_question_of_a_cause_reaches_the_ranking(monkeypatch: pytest.MonkeyPatch) -> None:
    ranking = importlib.import_module("engram.retrieve.rank")  # the package's ``rank`` is the function

    assert CAUSE_REPLY_SHARE > REPLY_SHARE
    shares: list[float] = []
    real = ranking.lending

    def spy(*args: object) -> object:
        shares.append(args[3])  # type: ignore[arg-type]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ranking, "lending", spy)
    with Memory(":memory:", embedder=FakeEmbedder(32)) as memory:
        memory.add("Customer acme-logistics got two invoices for October.", user_id="u", role="user")
        for query, share in (("Why did acme-logistics get two invoices?", CAUSE_REPLY_SHARE),
                             ("Which invoices did acme-logistics get?", REPLY_SHARE),
                             ("Which invoices did you say acme-logistics got?", YOURS_REPLY_SHARE),
                             ("Why did you say acme-logistics got two invoices?", YOURS_REPLY_SHARE)):
            shares.clear()
            memory.retrieve(query, user_id="u", config=RetrievalConfig(cache_ttl=0))
            assert shares and set(shares) == {share}


def test_a_question_of_what_was_said_hears_the_assistant() -> None:
    """The user's turn asked about the topic; what was said is in the reply, whose voice is asked for."""
    with Memory(":memory:", embedder=FakeEmbedder(32)) as memory:
        memory.add_many([
            {"content": "Can we get the plan output posted as a PR comment, updated in place on each push?",
             "user_id": "u", "role": "user", "session_id": "s"},
            {"content": "Yes: upsert one comment found by a marker line. GitHub caps a comment at 65,536 "
                        "characters, so trim the plan to 60,000 and link the full log.",
             "user_id": "u", "role": "assistant", "session_id": "s"},
        ])
        config = RetrievalConfig(top_k=2, min_score=0.0, cache_ttl=0)
        yours = memory.retrieve("What limit did you mention on how big a PR comment can get?", user_id="u",
                                config=config).memories
        plain = memory.retrieve("What limit is there on how big a PR comment can get?", user_id="u",
                                config=config).memories
    assert {m.record.role: (m.signals or {}).get("voice", 0.0) for m in yours if m.record} == {
        "assistant": 1.0, "user": 0.0}
    assert all(not (m.signals or {}).get("voice") for m in plain)  # only a question of what was said

    def reply_against_turn(found: Sequence[MemoryEntry]) -> float:
        score = {m.record.role: m.score for m in found if m.record}
        return score["assistant"] / score["user"]

    # The user's turn names the PR and matches more words; the reply gains on it only when asked what was said.
    assert reply_against_turn(yours) > 1.5 * reply_against_turn(plain)

    def lent_share(found: Sequence[MemoryEntry]) -> float:  # the reply's context over the turn it follows
        signals = {m.record.role: m.signals or {} for m in found if m.record}
        return signals["assistant"]["conversation_context"] / signals["user"]["relevance"]

    assert lent_share(yours) == pytest.approx(YOURS_REPLY_SHARE, rel=0.05)
    assert lent_share(plain) == pytest.approx(REPLY_SHARE, rel=0.05)
