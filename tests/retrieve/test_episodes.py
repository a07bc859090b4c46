"""In a conversation between people, the turn that answers gains from the conversation's best
matches; a chat with an assistant is left as it was."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram import Memory, RetrievalConfig
from engram.ext import Embedder
from engram.model import MemoryRecord
from engram.retrieve.episodes import (
    CONVERSATION_PAUSE,
    CONVERSATION_TURNS,
    LONG_REPLY_SHARE,
    NAMED_NEXT_TO,
    QUESTION_LENGTH,
    REPLIED_SHARE,
    REPLY_SHARE,
    context_support,
    conversation_support,
    conversations,
    lenders,
    lending,
    named_next_to,
    takes_context,
    turned_around,
)

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


def turn(mid: str, role: str | None, session: str | None = "s1", **fields: Any) -> MemoryRecord:
    fields.setdefault("user_id", "u")
    fields.setdefault("kind", "message")
    fields.setdefault("created_at", NOW)
    return MemoryRecord(id=mid, content=mid, role=role, session_id=session, recorded_at=NOW, content_hash=mid,
                        **fields)


def support(records: list[MemoryRecord], values: list[float]) -> dict[str, float]:
    lent = conversation_support(records, np.array(values, dtype=np.float64))
    return {r.id: round(float(v), 6) for r, v in zip(records, lent, strict=True)}


def test_the_best_turns_of_a_conversation_lend_to_the_others() -> None:
    assert CONVERSATION_TURNS == 3
    records = [turn("a", "Jon"), turn("b", "Gina"), turn("c", "Jon"), turn("d", "Gina"), turn("e", "Jon")]
    got = support(records, [0.9, 0.6, 0.3, 0.1, 0.0])
    # The best three (0.9, 0.6, 0.3) lend their sum over three; one of them is lent by the other two.
    assert got == {"a": 0.3, "b": 0.4, "c": 0.5, "d": 0.6, "e": 0.6}


def test_relevance_above_a_full_match_lends_as_a_full_match() -> None:
    got = support([turn("a", "Jon"), turn("b", "Gina")], [2.5, 0.0])
    assert got == {"a": 0.0, "b": pytest.approx(1 / 3)}


def test_equal_turns_are_lent_alike_whatever_their_order() -> None:
    records = [turn("a", "Jon"), turn("b", "Gina"), turn("c", "Jon"), turn("d", "Gina")]
    first = support(records, [0.9, 0.6, 0.3, 0.3])
    assert first["c"] == first["d"] == pytest.approx(0.5)
    second = support(records[::-1], [0.3, 0.3, 0.6, 0.9])
    assert second == first


@pytest.mark.parametrize("roles", [
    ("user", "assistant", "user"),  # a chat with an assistant: each user turn is its own request
    ("Jon", "assistant", "Gina"),   # an assistant in the room
    ("Jon", "Jon", "Jon"),          # one person's notes
    ("Human", "AI", "Human"),       # role words in any case
])
def test_only_a_conversation_between_people_lends(roles: tuple[str | None, ...]) -> None:
    records = [turn(f"t{i}", role) for i, role in enumerate(roles)]
    assert set(support(records, [0.9, 0.5, 0.1]).values()) == {0.0}


def test_a_named_assistant_is_still_an_assistant() -> None:
    # {"role": "assistant", "name": "Sol"} is stored as "Sol", its role kept as message_role.
    user, assistant = {"message_role": "user"}, {"message_role": "assistant"}
    records = [turn("a", "Dana", metadata=user), turn("b", "Sol", metadata=assistant), turn("c", "Mark", metadata=user)]
    assert set(support(records, [0.9, 0.5, 0.1]).values()) == {0.0}
    people = [turn("a", "Dana", metadata=user), turn("c", "Mark", metadata=user)]
    assert support(people, [0.9, 0.0]) == {"a": 0.0, "c": 0.3}


def test_notices_and_other_kinds_take_no_part() -> None:
    records = [turn("a", "Jon"), turn("n", "system"), turn("f", None, kind="fact"),
               turn("d", "Bob", kind="document"), turn("x", None), turn("b", "Gina")]
    got = support(records, [0.9, 1.0, 1.0, 1.0, 1.0, 0.0])
    assert got == {"a": 0.0, "n": 0.0, "f": 0.0, "d": 0.0, "x": 0.0, "b": 0.3}


def test_a_pause_of_hours_ends_a_conversation() -> None:
    later = NOW + CONVERSATION_PAUSE + timedelta(minutes=1)
    records = [turn("a", "Jon"), turn("b", "Gina", created_at=NOW + timedelta(minutes=5)),
               turn("c", "Jon", created_at=later + timedelta(minutes=5)),
               turn("d", "Gina", created_at=later + timedelta(hours=1))]
    got = support(records, [0.9, 0.0, 0.6, 0.0])
    assert got == {"a": 0.0, "b": 0.3, "c": 0.0, "d": 0.2}


def test_messages_without_a_session_are_one_stream_cut_at_its_pauses() -> None:
    later = NOW + timedelta(hours=3)
    records = [turn("a", "Jon", None), turn("b", "Gina", None, created_at=NOW + timedelta(minutes=2)),
               turn("c", "Jon", None, created_at=later), turn("d", "Gina", None, created_at=later)]
    got = support(records, [0.9, 0.0, 0.0, 0.0])
    assert got == {"a": 0.0, "b": 0.3, "c": 0.0, "d": 0.0}


def test_users_sharing_a_session_id_are_separate_conversations() -> None:
    # A shared scope ranks several users' memories together; "s1" is each one's own.
    records = [turn("a", "Jon", user_id="alice"), turn("b", "Gina", user_id="alice"),
               turn("c", "Tom", user_id="team"), turn("d", "Lena", user_id="team")]
    got = support(records, [0.9, 0.0, 0.0, 0.0])
    assert got == {"a": 0.0, "b": 0.3, "c": 0.0, "d": 0.0}


def test_sessions_lend_only_to_their_own_turns() -> None:
    records = [turn("a", "Jon", "s1"), turn("b", "Gina", "s1"), turn("c", "Jon", "s2"), turn("d", "Gina", "s2"),
               turn("e", "Jon", None), turn("f", "Gina", None)]
    got = support(records, [0.9, 0.0, 0.3, 0.0, 0.8, 0.0])
    assert got == {"a": 0.0, "b": 0.3, "c": 0.0, "d": 0.1, "e": 0.0, "f": 0.266667}


def context(records: list[MemoryRecord], values: list[float], next_to: dict[str, tuple[str, ...]]) -> dict[str, float]:
    lent = lending(records, next_to, conversations(records))
    return {r.id: round(float(v), 6) for r, v in zip(records, context_support(records, np.array(values), lent),
                                                     strict=True)}


def chain(records: list[MemoryRecord]) -> dict[str, tuple[str, ...]]:
    """Each record's neighbours in the order given, as the store reads them."""
    ids = [r.id for r in records]
    return {i: tuple(ids[max(at - 1, 0):at] + ids[at + 1:at + 2]) for at, i in enumerate(ids)}


def test_a_turn_between_people_takes_context_from_either_neighbour() -> None:
    records = [turn("a", "Jon"), turn("b", "Gina"), turn("c", "Jon"), turn("d", "Gina")]
    got = context(records, [0.2, 0.9, 0.4, 0.0], chain(records))
    assert got == {"a": 0.9, "b": 0.4, "c": 0.9, "d": 0.4}


def test_in_a_chat_with_an_assistant_the_reply_and_what_it_answers_lend_each_other_a_share() -> None:
    roles = [("q", "user"), ("r", "assistant"), ("q2", "user"), ("n", "tool"), ("s", "Sol")]
    records = [turn(mid, role, created_at=NOW + timedelta(minutes=at),
                    **({"metadata": {"message_role": "assistant"}} if role == "Sol" else {}))
               for at, (mid, role) in enumerate(roles)]
    got = context(records, [0.9, 0.8, 0.6, 1.0, 0.0], chain(records))
    # The reply takes a third of the turn it follows, the person's turn most of the reply to it;
    # a user's turn takes nothing from advice before it that asks nothing; a tool's output no part.
    assert got == {"q": round(REPLIED_SHARE * 0.8, 6), "r": round(REPLY_SHARE * 0.9, 6), "q2": 0.0, "n": 0.0,
                   "s": round(REPLY_SHARE * 1.0, 6)}


def test_the_users_answer_takes_the_assistants_short_question_as_context() -> None:
    texts = {"ask": "Which airline do you usually fly with?", "answer": "TAP, I have their card.",
             "advice": "x" * QUESTION_LENGTH + " Anything else?", "next": "No, thanks."}
    records = [replace(turn(mid, role, created_at=NOW + timedelta(seconds=at)), content=texts[mid])
               for at, (mid, role) in enumerate((("ask", "assistant"), ("answer", "user"), ("advice", "assistant"),
                                                 ("next", "user")))]
    got = context(records, [0.9, 0.1, 0.8, 0.0], chain(records))
    # The answer takes all of the question's; a short turn after long advice a share of it (it answers
    # the question the advice ends with, or picks from what it offered), whether or not it asks.
    assert got == {"ask": 0.0, "answer": 0.9, "advice": round(REPLY_SHARE * 0.1, 6),
                   "next": round(LONG_REPLY_SHARE * 0.8, 6)}
    offered = [replace(records[2], content="x" * QUESTION_LENGTH + " Options: a, b or c."), records[3]]
    assert context(offered, [0.8, 0.0], chain(offered))["next"] == round(LONG_REPLY_SHARE * 0.8, 6)
    thanked = [offered[0], replace(records[3], content="ok thanks! 🙂")]  # no answer, whatever it follows
    assert context(thanked, [0.8, 0.0], chain(thanked))["next"] == 0.0
    for advice, after in (("x" * QUESTION_LENGTH + " Anything else?", "No. " + "y" * QUESTION_LENGTH),  # a long turn
                          ("x" * QUESTION_LENGTH + " Anything else?", "Why do you ask?")):  # a question of its own
        pair = [replace(records[2], content=advice), replace(records[3], content=after)]
        assert context(pair, [0.8, 0.0], chain(pair))["next"] == 0.0, (advice[-20:], after[:20])
    for own in ("What's the weather in Lisbon tomorrow?", "Is there parking nearby? I'll be driving."):
        asking = replace(records[1], content=own)  # a question of its own
        assert context([records[0], asking], [0.9, 0.1], chain([records[0], asking]))["answer"] == 0.0
    assert lenders([asking], chain([records[0], asking]), records[:1]) == []
    late = replace(records[1], created_at=NOW + CONVERSATION_PAUSE + timedelta(seconds=1))
    assert context([records[0], late], [0.9, 0.1], chain([records[0], late]))["answer"] == 0.0  # hours later


@pytest.mark.parametrize(("text", "asks"), [
    ("Which airline do you usually fly with? 🙂", True), ('"Shall I book it?"', True), ("Ready?!", True),
    ("¿Reservo la mesa?", True), ("予約しますか？", True), ("هل أحجز؟", True),
    ("Noted. While we're on coffee: what's your usual order? I can save it for pre-orders.", True),
    ("I booked it.", False),
    ("x" * QUESTION_LENGTH + "? Thanks.", LONG_REPLY_SHARE),  # longer: a share, whatever it ends with
    ("x" * QUESTION_LENGTH + "?", LONG_REPLY_SHARE),
    # Question marks that ask nothing: a web address, code.
    ("Here's the tutorial: https://www.youtube.com/watch?v=ramen123 on making broth.", False),
    ("Try www.example.com/cart?item=42 for it.", False), ("Use `x = a ? b : c` there.", False),
    ("The ?? operator returns the right side.", False),
])
def test_a_short_turn_of_the_assistant_that_asks_something_is_its_question(text: str, asks: float) -> None:
    records = [replace(turn("ask", "assistant"), content=text),
               turn("answer", "user", created_at=NOW + timedelta(seconds=1))]
    assert context(records, [0.9, 0.0], chain(records))["answer"] == round(0.9 * asks, 6)


def test_only_the_turns_that_can_lend_context_are_ranked() -> None:
    at = [NOW + timedelta(minutes=i) for i in range(6)]
    ask = replace(turn("ask", "assistant", created_at=at[0]), content="Which airline do you fly with?")
    answer, advice = turn("answer", "user", created_at=at[1]), turn("advice", "assistant", created_at=at[2])
    later = turn("later", "user", created_at=at[3])
    jon, gina = turn("jon", "Jon", "s2", created_at=at[4]), turn("gina", "Gina", "s2", created_at=at[5])
    everyone = [ask, answer, advice, later, jon, gina]
    # Asked for by the answer (its question, and the reply to it), the advice (the turn it follows)
    # and Jon (either side); the user's later turn lends nothing to the advice before it.
    got = lenders([answer, advice, jon], {"answer": ("ask", "advice"), "advice": ("answer", "later"),
                                          "jon": ("gina",)}, everyone)
    assert got == ["ask", "advice", "answer", "gina"]
    far = replace(gina, created_at=at[4] + CONVERSATION_PAUSE + timedelta(seconds=1))
    assert lenders([jon], {"jon": ("gina",)}, [far]) == []


def test_a_turn_read_as_a_neighbour_has_the_turn_it_is_next_to_for_its_own() -> None:
    read = {"b": ("a", "c"), "d": ("c",), "e": ("f",)}
    turns = [turn("a", "Jon"), turn("c", "Gina"), turn("f", None)]  # f: no turn of anyone's
    assert turned_around(read, turns) == {"a": ("b",), "c": ("b", "d")}


def test_only_a_turn_said_by_someone_reads_its_neighbours() -> None:
    takes = {r.id: takes_context(r) for r in [
        turn("jon", "Jon"), turn("reply", "assistant"), turn("sol", "Sol", metadata={"message_role": "assistant"}),
        turn("mine", "user"), turn("human", "Human"), turn("note", None), turn("notice", "system"),
        turn("tool", "Bot", metadata={"message_role": "tool"}), turn("fact", "Jon", kind="fact")]}
    assert takes == {"jon": True, "reply": True, "sol": True, "mine": True, "human": True, "note": False,
                     "notice": False, "tool": False, "fact": False}


def test_a_neighbour_said_after_a_long_pause_lends_nothing() -> None:
    later = NOW + CONVERSATION_PAUSE + timedelta(minutes=1)
    records = [turn("a", "Jon", None), turn("b", "Gina", None, created_at=later),
               turn("c", "Jon", None, created_at=later + timedelta(minutes=1))]
    assert context(records, [0.9, 0.0, 0.5], chain(records)) == {"a": 0.0, "b": 0.5, "c": 0.0}


# An evening's conversation: the question matches the first turns; Jon's answer to how he feels
# shares no word with it and is two turns later. Other evenings fill the haystack.
OPENING = (
    ("Gina", "When is the official opening night of your dance studio?"),
    ("Jon", "The official opening night of the studio is tomorrow, I'm working hard to get it right."),
    ("Gina", "Wow, that's huge! How are you holding up?"),
    ("Jon", "Thanks, Gina! It's been a wild ride, but I'm buzzing and ready to give it my all."),
    ("Gina", "I'll be right there in the front row."),
)
FILLER = (
    "Did you catch the game last night?", "I tried that new ramen place downtown.", "My cat knocked over a plant.",
    "The weather has been so grey lately.", "I finally finished that mystery novel.", "Work was busy this week.",
    "My sister is visiting next month.", "We repainted the kitchen a pale green.", "The bus was late again today.",
    "I signed up for a pottery class.", "The neighbour's dog keeps barking.", "I'm thinking of learning Spanish.",
    "The farmers market had amazing peaches.", "My laptop finally died on me.", "We watched a documentary about bees.",
    "I baked sourdough for the first time.", "The gym was packed this morning.", "I lost my keys twice this week.",
    "My niece started school on Monday.", "We're planning a road trip to the coast.", "I found an old photo album.",
    "The concert tickets sold out in minutes.", "I'm trying to drink more water.", "Our team won the trivia night.",
)


def _evenings(roles: tuple[str, str]) -> list[dict[str, Any]]:
    said = {"Jon": roles[0], "Gina": roles[1]}
    rows = [{"content": text, "role": said[who], "session_id": "opening", "created_at": NOW - timedelta(days=3)}
            for who, text in OPENING]
    for i, text in enumerate(FILLER):  # eight evenings of three turns
        rows.append({"content": text, "role": roles[i % 2], "session_id": f"evening-{i // 3}",
                     "created_at": NOW - timedelta(days=40 - i // 3)})
    return [{**row, "user_id": "u"} for row in rows]


def test_the_reply_two_turns_later_rises_in_a_conversation_between_people(tmp_path: Path,
                                                                          embedder: Embedder) -> None:
    question = "How does Jon feel about the opening night of his dance studio?"
    config = RetrievalConfig(top_k=10, cache_ttl=0, min_score=0.0)
    with Memory(tmp_path / "people.db", embedder=embedder) as memory:
        memory.add_many(_evenings(("Jon", "Gina")))
        people = memory.retrieve(question, user_id="u", now=NOW, config=config).memories
    with Memory(tmp_path / "assistant.db", embedder=embedder) as memory:
        memory.add_many(_evenings(("user", "assistant")))
        assistant = memory.retrieve(question, user_id="u", now=NOW, config=config).memories
    reply = OPENING[3][1]
    told = next((m for m in people if m.content == reply), None)
    assert told is not None, f"the reply is not in the top 10: {[m.content for m in people]}"
    assert told.signals["same_conversation"] > 0.3
    assert "in a conversation between people whose other turns match" in told.reasons
    beside = [m for m in people if m.signals["conversation_context"] >= 0.2]
    assert beside and all("next to a turn that matches" in m.reasons for m in beside)
    # The same words in a chat with an assistant gain nothing from their session, and rank lower.
    assert all(m.signals["same_conversation"] == 0.0 for m in assistant)
    place = {m.content: at for at, m in enumerate(assistant)}
    assert [m.content for m in people].index(reply) < place.get(reply, len(assistant))


def test_a_chat_with_a_named_assistant_gains_nothing_through_add(tmp_path: Path) -> None:
    from engram.embedders.fake import FakeEmbedder

    def chat(second: dict[str, str]) -> list[dict[str, str]]:
        return [{"role": "user", "name": "Dana", "content": "The school play is on Thursday evening."},
                {**second, "content": "Leo is the narrator in the school play."},
                {"role": "user", "name": "Dana", "content": "He practised his lines all week."}]

    config = RetrievalConfig(top_k=3, cache_ttl=0, min_score=0.0)
    with Memory(tmp_path / "named.db", embedder=FakeEmbedder(64)) as memory:
        memory.add(chat({"role": "assistant", "name": "Sol"}), user_id="u", run_id="a", created_at=NOW)
        memory.add(chat({"role": "user", "name": "Mark"}), user_id="v", run_id="a", created_at=NOW)
        with_sol = memory.retrieve("school play narrator", user_id="u", now=NOW, config=config).memories
        with_mark = memory.retrieve("school play narrator", user_id="v", now=NOW, config=config).memories
    assert [m.record.role for m in with_sol if m.record].count("Sol") == 1
    assert all(m.signals["same_conversation"] == 0.0 for m in with_sol)
    assert any(m.signals["same_conversation"] > 0.0 for m in with_mark)


def test_a_conversation_stored_without_sessions_ranks_as_with_them(tmp_path: Path, embedder: Embedder) -> None:
    # Mem0's add(messages, user_id=...) without a run: the turns next to a turn are the user's
    # session-less messages around it, cut where days pass between evenings.
    question = "How does Jon feel about the opening night of his dance studio?"
    config = RetrievalConfig(top_k=10, cache_ttl=0, min_score=0.0)
    ranked = []
    for name, keep in (("sessions", True), ("stream", False)):
        rows = [{**row, "session_id": row["session_id"] if keep else None} for row in _evenings(("Jon", "Gina"))]
        with Memory(tmp_path / f"{name}.db", embedder=embedder) as memory:
            memory.add_many(rows)
            found = memory.retrieve(question, user_id="u", now=NOW, config=config).memories
        ranked.append([(m.content, round(m.score, 6), round(m.signals["conversation_context"], 6)) for m in found])
    assert ranked[0] == ranked[1]
    assert sum(context > 0 for _, _, context in ranked[1]) >= 3


def test_each_agent_of_a_user_is_a_stream_of_its_own(tmp_path: Path, embedder: Embedder) -> None:
    # Mem0's add(messages, user_id=..., agent_id=...) without a run: two agents' chats interleave.
    said = NOW - timedelta(hours=1)
    question = "Which base image should the Docker build use?"
    rows = [("user", "coder", question), ("assistant", "concierge", "I booked the table at Nopa for Friday at 8."),
            ("assistant", "coder", "Use python:3.12-slim; it keeps the layers small."),
            (None, "coder", "Remember: the dentist moved to Tuesday.")]  # a note without a role is no turn
    config = RetrievalConfig(top_k=5, cache_ttl=0, min_score=0.0)
    with Memory(tmp_path / "agents.db", embedder=embedder) as memory:
        memory.add_many([{"content": text, "user_id": "u", "role": role, "agent_id": agent,
                          "created_at": said + timedelta(seconds=at if role else 1)}
                         for at, (role, agent, text) in enumerate(rows)])
        found = {m.content: m for m in memory.retrieve(question, user_id="u", now=NOW, config=config).memories}
    # The concierge's reply follows no question of its own; the coder's answer follows its question.
    assert found[rows[1][2]].signals["conversation_context"] == 0.0
    answer = found[rows[2][2]].signals["conversation_context"]
    assert answer == pytest.approx(REPLY_SHARE * found[question].signals["relevance"], rel=0.05)
    assert "the reply to a turn that matches" in found[rows[2][2]].reasons
    assert not any("turn that matches" in reason for reason in found[rows[1][2]].reasons)


ONBOARDING = (
    ("Which city are you based in?", "Lisbon, near the river.", "Where do I live?"),
    ("Do you have any allergies I should know about?", "Peanuts. Pretty severe.", "What am I allergic to?"),
    ("What should I call you?", "Alex is fine.", "What is my name?"),
)


@pytest.mark.parametrize("session", ["onboarding", None])
def test_the_answer_to_the_assistants_question_is_found_with_it(tmp_path: Path, embedder: Embedder,
                                                              session: str | None) -> None:
    rows: list[dict[str, Any]] = []
    for day, (ask, answer, _) in enumerate(ONBOARDING):
        said = NOW - timedelta(days=10 - day)
        rows += [{"role": "assistant", "content": ask, "created_at": said},
                 {"role": "user", "content": answer, "created_at": said + timedelta(minutes=1)},
                 {"role": "assistant", "content": "Noted, thanks!", "created_at": said + timedelta(minutes=2)}]
    config = RetrievalConfig(top_k=5, cache_ttl=0)
    firsts: list[bool] = []
    with Memory(tmp_path / "onboarding.db", embedder=embedder) as memory:
        memory.add_many([{**row, "user_id": "u", "session_id": session} for row in rows])
        for _, answer, question in ONBOARDING:
            found = memory.retrieve(question, user_id="u", now=NOW, config=config).memories
            got = [m.content for m in found]
            assert answer in got, (question, got)
            assert "answers the assistant's question, which matches" in found[got.index(answer)].reasons
            firsts.append(got[0] == answer)
    # The answer, what was learnt, gains most of the question's relevance (ANSWER_GAIN): first in two.
    assert sum(firsts) >= 2, firsts


def test_a_turn_that_ignores_the_assistants_question_is_not_its_answer(tmp_path: Path, embedder: Embedder) -> None:
    said = NOW - timedelta(days=2)
    rows = [("assistant", "Shall I remind you on Tuesday?"), ("user", "I bought milk."),
            ("user", "My dentist appointment is on Tuesday at 3pm.")]
    config = RetrievalConfig(top_k=5, cache_ttl=0, min_score=0.0)
    with Memory(tmp_path / "ignored.db", embedder=embedder) as memory:
        memory.add_many([{"content": text, "role": role, "user_id": "u", "session_id": "s",
                          "created_at": said + timedelta(minutes=at)} for at, (role, text) in enumerate(rows)])
        found = {m.content: m for m in memory.retrieve("What's happening on Tuesday?", user_id="u", now=NOW,
                                                       config=config).memories}
    milk, dentist = found["I bought milk."], found["My dentist appointment is on Tuesday at 3pm."]
    # It still takes the question's relevance as context, at the share any neighbour gains, not an answer's.
    assert milk.signals["conversation_context"] > 0.2
    assert dentist.score > milk.score


def test_a_named_users_answer_is_explained_as_an_answer(tmp_path: Path, embedder: Embedder) -> None:
    # {"role": "user", "name": "Alex"} is stored as "Alex", its role kept as message_role.
    ask, answer, question = ONBOARDING[1]
    rows = [{"role": "assistant", "content": ask, "created_at": NOW - timedelta(days=2)},
            {"role": "Alex", "content": answer, "created_at": NOW - timedelta(days=2) + timedelta(minutes=1),
             "metadata": {"message_role": "user"}}]
    with Memory(tmp_path / "named.db", embedder=embedder) as memory:
        memory.add_many([{**row, "user_id": "u"} for row in rows])
        found = memory.retrieve(question, user_id="u", now=NOW, config=RetrievalConfig(top_k=5, cache_ttl=0)).memories
        got = [m.content for m in found]
        assert answer in got, got
        reasons = found[got.index(answer)].reasons
        assert "answers the assistant's question, which matches" in reasons
        assert "next to a turn that matches" not in reasons


@pytest.mark.parametrize("given", [None, "", 0, False, []])
def test_a_role_given_as_nothing_is_no_role(given: object) -> None:
    """A message's ``message_role`` that is empty in any type reads as none given (as before the
    roles were kept per string)."""
    from engram.retrieve.turn_roles import roles

    record = MemoryRecord(id="m", user_id="u", content="hi", kind="message", created_at=NOW, recorded_at=NOW,
                          content_hash="h", role=" Sam ", metadata={"message_role": given})
    assert roles(record) == ("sam", "")


def test_the_answer_to_a_long_replys_closing_question_is_found_with_it(tmp_path: Path, embedder: Embedder) -> None:
    reply = ("For a nightly batch like this, use a load job rather than streaming inserts: load jobs are free, "
             "atomic per partition and replace the day cleanly when you rerun it. Export the day to Parquet with "
             "polars, upload the file, then load it from the bucket URI with WRITE_TRUNCATE on the partition "
             "decorator so a rerun never doubles rows. One thing I need from you before I wire the upload: "
             "where should the Parquet files be staged before the load?")
    said = NOW - timedelta(days=20)
    rows = [("user", "The nightly deliveries export to BigQuery takes 41 minutes. How do I make it faster?"),
            ("assistant", reply), ("user", "Separate bucket: gs://vc-dw-staging, with a 7-day lifecycle rule.")]
    rows += [(role, text) for text in FILLER for role in ("user",)]
    config = RetrievalConfig(top_k=3, cache_ttl=0)
    with Memory(tmp_path / "closing.db", embedder=embedder) as memory:
        memory.add_many([{"content": text, "role": role, "user_id": "u", "session_id": f"s{at // 3}",
                          "created_at": said + timedelta(minutes=at)} for at, (role, text) in enumerate(rows)])
        found = memory.retrieve("Where do the exported Parquet files sit before they're loaded?", user_id="u",
                                now=NOW, config=config).memories
    got = [m.content for m in found]
    assert rows[2][1] in got, got
    assert "answers the assistant's question, which matches" in found[got.index(rows[2][1])].reasons


def test_a_turn_of_a_chat_with_an_assistant_takes_half_the_names_of_the_turn_next_to_it() -> None:
    later = NOW + timedelta(minutes=1)
    said = [turn("q", "user"), turn("r", "assistant", created_at=later),
            turn("far", "assistant", created_at=NOW + CONVERSATION_PAUSE + timedelta(minutes=2)),
            turn("q2", "user"), turn("own", "user", created_at=later),  # the user's next message
            turn("me", "user"), turn("r2", "assistant", created_at=later),  # a turn named only as its speaker
            # a group chat sent as the user's messages with names: people, not an assistant's chat
            turn("kofi", "Kofi", session="g", metadata={"message_role": "user"}),
            turn("nadia", "Nadia", session="g", created_at=later, metadata={"message_role": "user"})]
    own = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.8, 0.0])
    named = [{"mum"}, set(), set(), {"mum"}, set(), {"alice"}, set(), {"mum", "kofi"}, set()]
    speakers = {"me": "alice", "kofi": "kofi", "nadia": "nadia"}
    next_to = {"q": ("r",), "r": ("q",), "far": ("q",), "q2": ("own",), "own": ("q2",), "me": ("r2",),
               "r2": ("me",), "kofi": ("nadia",), "nadia": ("kofi",)}
    got = dict(zip([r.id for r in said], named_next_to(said, own, named, {"mum", "alice"}, speakers, next_to,
                                                       conversations(said)).tolist(), strict=True))
    # The reply takes half of the user's turn's names; one said hours later nothing; the user's own
    # next message nothing; a reply next to a turn that only its speaker names, nothing; people none.
    assert NAMED_NEXT_TO == 0.5
    assert got == {"q": 0.0, "r": 0.5, "far": 0.0, "q2": 0.0, "own": 0.0, "me": 0.0, "r2": 0.0, "kofi": 0.0,
                   "nadia": 0.0}


def test_a_reply_beside_a_turn_that_names_the_query_entity_is_explained(tmp_path: Path, embedder: Embedder) -> None:
    said = NOW - timedelta(days=3)
    rows = [("user", "Thyroid bloods came back for Mum this morning."),
            ("assistant", "Noted: the dose goes up from 75 to 100 micrograms from Monday.")]
    with Memory(tmp_path / "beside.db", embedder=embedder) as memory:
        memory.add_many([{"content": text, "role": role, "user_id": "u", "session_id": "s",
                          "created_at": said + timedelta(minutes=at)} for at, (role, text) in enumerate(rows)])
        found = {m.content: m for m in memory.retrieve("What dose is Mum taking now?", user_id="u", now=NOW,
                                                       config=RetrievalConfig(top_k=5, cache_ttl=0, min_score=0.0)
                                                       ).memories}
    reply = found[rows[1][1]]
    assert reply.signals["entity_overlap"] > 0.0
    assert "beside a turn that names what the query names" in reply.reasons
    assert not any(reason.startswith("mentions") for reason in reply.reasons)  # it names no one itself
