"""Questions about who someone is: recognised only as the whole question about one of the query's
entities, answered first by what describes the person rather than by their own chatter."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.model import MemoryRecord
from engram.retrieve.identity import described
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("query", "name"), [
    ("Who is Priya?", "Priya"),
    ("who's Alice", "Alice"),
    ("Tell me about Priya.", "Priya"),
    ("So, who was Keisha Brown?", "Keisha Brown"),
    ("What do you know about Tiago?", "Tiago"),
    ("What have I told you about Jess?", "Jess"),
    ("Remind me who Priya is", "Priya"),
    ("Who is Priya again?", "Priya"),
    ("What can you tell me about Jess?", "Jess"),
    ("Who's Mary-Jane?", "Mary-Jane"),
])
def test_questions_about_who_someone_is(query: str, name: str) -> None:
    assert understand(query, now=NOW).described == (name,)


@pytest.mark.parametrize("query", [
    "Who is Priya meeting tomorrow?",  # one thing she does
    "Who is Melanie a fan of in terms of modern music?",
    "Tell me about my customers",  # a type, not a name
    "Who am I?",  # the user as a whole
    "What do you know about me?",
    "who is this",
    "Who did Priya call?",
])
def test_other_questions_ask_about_no_one_s_identity(query: str) -> None:
    assert understand(query, now=NOW).described == ()


def _record(content: str, subject: str | None = None) -> MemoryRecord:
    return MemoryRecord(id=content, user_id="u", content=content, kind="fact" if subject else "message",
                        subject=subject, created_at=NOW, recorded_at=NOW, content_hash=content)


@pytest.mark.parametrize(("content", "describes"), [
    ("Team: Maya owns the business, Priya Nair does operations and finance.", True),
    ("Priya is our office manager.", True),
    ("Priya, our office manager, is out today.", True),
    ("Dinner with my sister Priya on Friday.", True),
    ("Acme's accounts-payable contact is Priya Nair.", True),
    ("Can someone send Priya the delivery note?", False),  # names her, says nothing of her
    ("Priyanka runs sales.", False),  # another name
    ("Thanks priya nair", False),  # a name is capitalised
    ("The priya is due Friday.", False),
])
def test_what_describes_someone(content: str, describes: bool) -> None:
    assert described([_record(content)], ["Priya"]).tolist() == [float(describes)]


def test_a_name_that_is_also_a_word_is_read_as_a_name() -> None:
    bills = [_record("The water bill is due Friday."), _record("Bill is our plumber."),
             _record("I'll call Bill, our plumber, tomorrow.")]
    assert described(bills, ["Bill"]).tolist() == [0.0, 1.0, 1.0]


def test_a_long_memory_is_read_in_linear_time() -> None:
    started = time.perf_counter()
    described([_record("Notes from our contact" + " " * 40_000 + "end.")], ["Priya"])
    assert time.perf_counter() - started < 0.05


def test_a_registered_entity_is_described_by_its_name_and_aliases(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_entity("person:p17", user_id="u", type="person", name="Priya Nair", aliases=["Priya", "PN"])
        memory.add_many([{"user_id": "u", "content": c, "role": "user"}
                         for c in ("PN runs the payroll.", "Lunch at noon?", "Priya Nair does operations.")])
        for query in ("Who is Priya?", "Who is PN?", "Who is Priya Nair?"):
            found = memory.retrieve(query, user_id="u", now=NOW).memories
            assert {m.content for m in found if m.signals.get("describes")} == {
                "PN runs the payroll.", "Priya Nair does operations."}, query


def test_a_fact_about_them_describes_them() -> None:
    fact = _record("Lives in Porto", subject="Priya Nair")
    other = _record("Lives in Lisbon", subject="Priyanka")
    assert described([fact, other], ["Priya"]).tolist() == [1.0, 0.0]
    assert described([fact], []).tolist() == [0.0]


def test_who_is_answers_with_what_describes_them_first(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_many([
            {"user_id": "u", "content": "Priya here: the printer is jammed again.", "role": "Priya"},
            {"user_id": "u", "content": "Priya: Who took the stapler?", "role": "Priya"},
            {"user_id": "u", "content": "Can someone ask Priya about the stapler?", "role": "Bob"},
            {"user_id": "u", "content": "Team: Maya Chen owns the business, Priya Nair does operations and finance.",
             "kind": "fact"},
        ])
        found = memory.retrieve("Who is Priya?", user_id="u", now=NOW).memories
        assert found[0].content.startswith("Team: Maya Chen owns the business")
        assert found[0].signals["describes"] == 1.0
        assert "says who or what the query asks about is" in found[0].reasons
        other = memory.retrieve("Who is Priya meeting tomorrow?", user_id="u", now=NOW).memories
        assert all(m.signals.get("describes", 0.0) == 0.0 for m in other)
