"""A later turn of the user's that retells one of the best matches with a new number (a moved date, a
renegotiated price) ranks just after it, though it shares none of the question's words."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engram import Memory, RetrievalConfig
from engram.ext import Embedder
from engram.model import MemoryRecord
from engram.retrieve.later import (
    CLOSE,
    NOT_RETOLD,
    OUTCOME_CLOSE,
    OUTCOME_SHARE,
    SHARE,
    STORED_TELLINGS,
    asks_for_the_outcome,
    later_tellings,
)

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
RANGE = (0.15, 0.65)


def turn(mid: str, role: str | None, content: str, day: int) -> MemoryRecord:
    return MemoryRecord(id=mid, user_id="u", content=content, kind="message", role=role, session_id=None,
                        created_at=NOW - timedelta(days=30 - day), recorded_at=NOW, content_hash=mid)


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_only_a_later_users_turn_close_to_a_best_match_with_a_number_takes_a_share() -> None:
    records = [turn("offer", "user", "Offered 58k", 1), turn("counter", "user", "They came back: 61.5k", 5),
               turn("before", "user", "Expecting about 55k", 0), turn("reply", "assistant", "61.5k is great", 6),
               turn("words", "user", "They came back, accepted!", 7), turn("far", "user", "Bought 3 hens", 8)]
    vectors = {"offer": unit(1, 0), "counter": unit(1, 0.3), "before": unit(1, 0.1), "reply": unit(1, 0.2),
               "words": unit(1, 0.3), "far": unit(0, 1)}
    relevance = np.array([0.9, 0.1, 0.2, 0.1, 0.1, 0.0])
    got = dict(zip([r.id for r in records], later_tellings(records, relevance, vectors, RANGE, NOW).tolist(),
                   strict=True))
    # the counter-offer: later, the user's, close, a number; not what came before, the assistant's,
    # a turn without a number, or one far in meaning. The offer retells the expectation before it
    # (a best match too), which lifts nothing: the offer is more relevant itself.
    assert got == pytest.approx({"offer": 0.0, "counter": SHARE * 0.9, "before": 0.0, "reply": 0.0,
                                 "words": 0.0, "far": 0.0})


def test_another_users_turn_one_said_after_now_or_a_vector_of_another_size_retells_nothing() -> None:
    offer = turn("offer", "user", "Offered 58k", 1)
    others = [replace(turn("theirs", "user", "They came back: 61.5k", 5), user_id="v"),
              replace(turn("ahead", "user", "They came back: 61.5k", 5), created_at=NOW + timedelta(days=1)),
              turn("small", "user", "They came back: 61.5k", 5)]
    vectors = {"offer": unit(1, 0), "theirs": unit(1, 0.3), "ahead": unit(1, 0.3), "small": unit(1, 0.3, 0)}
    got = later_tellings([offer, *others], np.array([0.9, 0.1, 0.1, 0.1]), vectors, RANGE, NOW)
    assert got.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_the_newest_telling_of_a_moved_date_follows_the_first(tmp_path: Path, embedder: Embedder) -> None:
    said = [
        ("user", 1, "The boiler install is booked for Wednesday 2 December, Dave from Warmfix is fitting it."),
        ("assistant", 1, "Noted. I'll remind you the day before."),
        ("user", 5, "Paid the window cleaner 25 pounds."),
        ("user", 9, "Warmfix rang: the boiler install moves to 9 December, Dave is off sick."),
        ("user", 12, "Warmfix rang again, Dave is better, so it is Tuesday the 8th now."),
        ("user", 13, "Booked the dentist for the 3rd of January."),
        ("user", 14, "Can you find me a recipe for 4 people with leeks?"),
    ]
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"content": text, "role": role, "user_id": "u", "created_at": NOW - timedelta(days=30 - day)}
                         for role, day, text in said])
        found = memory.retrieve("When is the new heating system being fitted?", user_id="u", now=NOW,
                                config=RetrievalConfig(top_k=5, cache_ttl=0)).memories
        got = [m.content for m in found]
        newest = next(m for m in found if m.content.startswith("Warmfix rang again"))
        assert newest.signals["later_telling"] > 0.2, got
        assert "said later of what a top match tells" in newest.reasons
        assert got.index(newest.content) <= 2, got  # it shares no word with the question


@pytest.mark.parametrize(("query", "outcome"), [
    ("Where did we end up having Thanksgiving this year?", True),
    ("Which days were we actually away in Montreal?", True),
    ("What is Mateo studying at McGill now?", True),
    ("Who am I reporting to these days?", True),
    ("What did the new rig cost in the end?", True),
    ("Where did we have Thanksgiving last year?", False),
    ("What did Mateo study at McGill?", False),
    ("Is the bakery open on Sundays?", False),
])
def test_questions_of_how_things_turned_out(query: str, outcome: bool) -> None:
    assert asks_for_the_outcome(query) is outcome


def test_a_stored_fact_or_episode_retells_a_match_of_its_own_subject() -> None:
    # In a Mem0- or Zep-like store the newer value is an extracted fact, not a chat turn.
    def fact(mid: str, content: str, day: int, *entities: str) -> MemoryRecord:
        return replace(turn(mid, None, content, day), kind="fact", entities=entities)

    records = [fact("old", "Acme Corporation is on NET30 payment terms", 1, "customer:acme", "mention:net30"),
               fact("new", "Acme's payment terms are now NET45", 9, "customer:acme", "mention:net45"),
               fact("globex", "Globex pays NET15, no more NET30 for them", 10, "customer:globex", "mention:net30"),
               replace(turn("ep", None, "Called Acme's finance team about the 45 days", 11), kind="episode"),
               replace(turn("plan", None, "Invoices for NET30 customers go out on the 1st", 12), kind="procedure")]
    vectors = {r.id: unit(1, 0.3) for r in records} | {"old": unit(1, 0)}
    relevance = np.array([0.9, 0.2, 0.2, 0.2, 0.2])
    got = dict(zip([r.id for r in records], later_tellings(records, relevance, vectors, RANGE, NOW).tolist(),
                   strict=True))
    # another customer's fact is not a newer telling (typed entities disjoint; a shared mention is not
    # a subject), an episode naming no typed entity may be, a procedure never
    assert got == pytest.approx({"old": 0.0, "new": SHARE * 0.9, "globex": 0.0, "ep": SHARE * 0.9, "plan": 0.0})
    assert set(STORED_TELLINGS) == {"fact", "episode"}


@pytest.mark.parametrize("kind", NOT_RETOLD)
def test_no_later_turn_retells_a_procedure_or_a_summary(kind: str) -> None:
    # "Which days is Oisín in childcare now?": the weekly-digest procedure was its best match, and the
    # user's later turns near it in topic ("Dentist for all three kids ...") took its relevance.
    digest = replace(turn("digest", None, "Sunday digest: next week per child, clubs, PE days, payments", 1),
                     kind=kind)
    later = turn("dentist", "user", "Dentist for all three kids, Friday 11 Dec at 4pm", 9)
    vectors = {"digest": unit(1, 0), "dentist": unit(1, 0.3)}
    relevance = np.array([0.9, 0.1])
    assert later_tellings([digest, later], relevance, vectors, RANGE, NOW, outcome=True).tolist() == [0.0, 0.0]
    told = replace(digest, kind="fact")
    assert later_tellings([told, later], relevance, vectors, RANGE, NOW, outcome=True)[1] > 0.0


def test_for_a_question_of_the_outcome_a_later_telling_without_a_number_ranks_with_the_match() -> None:
    records = [turn("plan", "user", "We're hosting Thanksgiving at the new house", 1),
               turn("decided", "user", "Thanksgiving decision: Gloria is hosting instead of us", 9)]
    vectors = {"plan": unit(1, 0), "decided": unit(1, 1.85)}  # cosine 0.475: 0.65 of the range
    relevance = np.array([0.9, 0.5])
    assert later_tellings(records, relevance, vectors, RANGE, NOW).tolist() == [0.0, 0.0]  # no number, not as close
    outcome = later_tellings(records, relevance, vectors, RANGE, NOW, outcome=True)
    assert outcome.tolist() == pytest.approx([0.0, OUTCOME_SHARE * 0.9])
    assert OUTCOME_SHARE >= 1.0 > SHARE and OUTCOME_CLOSE < CLOSE


def test_for_a_question_of_the_outcome_the_users_decision_gains_what_its_reply_restates(
    tmp_path: Path, embedder: Embedder
) -> None:
    said = [
        ("user", 1, "Offer! 248k from a young couple, the Fenwicks, first-time buyers, mortgage agreed in principle."),
        ("assistant", 1, "That's a strong offer for Mum's place: 248,000 pounds is close to the asking price."),
        ("user", 5, "Fenwicks' survey flagged damp in the back bedroom. Damp-proofing quote is 2,900; we offered 3k "
                    "off, they've come back asking for 4.5k off."),
        ("assistant", 5, "Meeting in the middle would be about 3,750 off. Worth a counter before the solicitors move."),
        ("user", 6, "Done, 243.5 agreed. Callum's happy, Fiona's updating the memorandum."),
        ("assistant", 6, "Great, that's the renegotiation settled: the sale price for Mum's place is now 243,500."),
        ("user", 8, "Fiona's aiming for exchange on the 11th, completion on the 18th."),
    ]
    decision, survey = said[4][2], said[2][2]
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"content": text, "role": role, "user_id": "u", "session_id": f"s{day}",
                          "created_at": NOW - timedelta(days=30 - day, minutes=-at)}
                         for at, (role, day, text) in enumerate(said)])

        def order(query: str) -> list[str]:
            config = RetrievalConfig(top_k=7, cache_ttl=0, min_score=0)
            return [m.content for m in memory.retrieve(query, user_id="u", now=NOW, config=config).memories]

        # The decision is short and far in meaning from the question; the reply after it restates it.
        # Before, it came fifth, under the survey that started the haggling.
        asked = "After all the back and forth with the buyers, what price did we settle on for Mum's place?"
        settled = order(asked)
        assert settled.index(decision) < settled.index(survey), settled
        found = memory.retrieve(asked, user_id="u", now=NOW, config=RetrievalConfig(cache_ttl=0, min_score=0))
        reasons = next(m.reasons for m in found.memories if m.content == decision)
        assert "what the user decided, next to a turn that matches" in reasons
        assert "answers the assistant's question, which matches" not in reasons
        offered = order("What price did the buyers offer for Mum's place?")
        assert offered.index(decision) > offered.index(survey), offered
