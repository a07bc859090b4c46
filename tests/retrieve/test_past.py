"""Questions about what no longer holds: they read what a newer version superseded, which answers them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.retrieve.past import asks_about_the_past
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("query", [
    "What was my old gym?",
    "Who was my car insured with before?",
    "Which carrier did we use for Acme before DHL?",
    "Who was our contact at Globex before Sofia?",
    "What time did the warehouse close before the winter hours?",
    "What were Acme's payment terms originally?",
    "Where did I use to live?",
    "Which gym did I go to previously?",
    "What was Acme's address before they moved?",
])
def test_questions_about_what_no_longer_holds(query: str) -> None:
    assert asks_about_the_past(query)
    assert understand(query, now=NOW).past


@pytest.mark.parametrize("query", [
    "Which gym do I go to?",
    "How old is Leo?",
    "How old was Leo in 2020?",
    "What should I do with my 3-year-old laptop?",
    "What did we agree at Friday's meeting?",
    "Where does my old friend Tom work now?",  # about what holds, not put in the past
    "What's the prior approval process for expenses?",
    "Is there any more coffee?",
    "Where is the Old Town hall?",
    "What did we decide before April 10, 2023?",  # a time scope
])
def test_other_questions_are_not(query: str) -> None:
    assert not understand(query, now=NOW).past


def test_the_superseded_version_answers_and_the_current_one_follows(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Dana's gym is FitLab on Alberta Street.", user_id="u", kind="fact", subject="Dana",
                   predicate="gym", object="FitLab", created_at=NOW - timedelta(days=60))
        memory.add("Dana's gym is Iron Temple on Division Street.", user_id="u", kind="fact", subject="Dana",
                   predicate="gym", object="Iron Temple", created_at=NOW - timedelta(days=10))
        found = memory.retrieve("What was Dana's old gym?", user_id="u", now=NOW)
        contents = [m.content for m in found.memories]
        assert contents[:2] == ["Dana's gym is FitLab on Alberta Street.",
                                "Dana's gym is Iron Temple on Division Street."]
        assert found.memories[0].signals["no_longer_holds"] > 0
        assert "what held before a newer version, asked for" in found.memories[0].reasons
        assert "statuses" not in found.metadata.applied_filters  # the caller chose no filter
        # A prompt says the old version no longer holds, so a model does not state it as current.
        for style in ("policy", "augmentation"):
            prompt = found.to_prompt(style=style)
            assert "Dana's gym is FitLab on Alberta Street. (no longer holds)" in prompt
            assert "Iron Temple on Division Street. (no longer holds)" not in prompt
        # Any other question reads current truth only.
        now_gym = memory.retrieve("Which gym does Dana go to?", user_id="u", now=NOW).memories
        assert [m.content for m in now_gym] == ["Dana's gym is Iron Temple on Division Street."]
        # A caller's own statuses are kept as given.
        active = memory.retrieve("What was Dana's old gym?", user_id="u", now=NOW,
                                 filters={"statuses": ["active", "archived"]}).memories
        assert all("FitLab" not in m.content for m in active)


def test_before_whom_asks_for_the_one_just_before() -> None:
    assert understand("Who was our contact at Globex before Sofia?", now=NOW).entities == ("mention:globex",)


def test_a_chain_of_versions_reads_the_last_replaced_first(tmp_path: Path) -> None:
    day = timedelta(days=1)
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        for days, who in ((90, "Alice"), (60, "Bob"), (10, "Sofia")):
            memory.add(f"Our contact at Globex is {who}.", user_id="u", kind="fact", subject="Globex",
                       predicate="contact", object=who, created_at=NOW - days * day)
        memory.add("Globex onboarding guide: ask your contact for a badge.", user_id="u", kind="document",
                   created_at=NOW - 80 * day)
        memory.add("Globex onboarding guide: ask your contact for a badge and a desk.", user_id="u",
                   kind="document", created_at=NOW - 5 * day)
        found = memory.retrieve("Who was our contact at Globex before Sofia?", user_id="u", now=NOW).memories
        contents = [m.content for m in found]
        assert contents.index("Our contact at Globex is Bob.") < contents.index("Our contact at Globex is Alice.")
        assert contents[0] != "Our contact at Globex is Sofia."
        # An old version of a document is not what such a question asks for.
        assert all(m.record is None or m.record.status != "superseded" or m.record.kind == "fact" for m in found)


@pytest.mark.parametrize(("query", "asks"), [
    ("Which gym did I go to in September?", True),
    ("Which carrier did we use for Acme in October?", True),
    ("What was the Dell P2723QE's price in October?", True),
    ("Who was our contact at Globex in August?", True),
    ("Where did I live in 2020?", True),
    ("What did Acme order last month?", False),  # an event, not a state
    ("Which gym do I go to in September?", False),  # not put in the past
    ("Which gym did I go to this month?", False),  # not gone by yet
    ("How old was Leo in 2020?", False),
])
def test_a_state_asked_of_a_time_gone_by(query: str, asks: bool) -> None:
    assert understand(query, now=NOW).past is asks


def test_what_held_during_the_scope_answers(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Dana's gym is FitLab on Alberta Street.", user_id="u", kind="fact", subject="Dana",
                   predicate="gym", object="FitLab", created_at=datetime(2026, 8, 25, tzinfo=UTC))
        memory.add("Dana switched gyms: she now trains at Iron Temple.", user_id="u", kind="fact", subject="Dana",
                   predicate="gym", object="Iron Temple", created_at=datetime(2026, 10, 15, tzinfo=UTC))
        memory.add("Packed day at work, no time for lunch.", user_id="u", created_at=datetime(2026, 9, 9, tzinfo=UTC))
        september = memory.retrieve("Which gym did Dana go to in September?", user_id="u", now=NOW).memories
        assert september[0].content == "Dana's gym is FitLab on Alberta Street."
        assert september[0].signals["no_longer_holds"] > 0
        # Before it held, a superseded version answers nothing: in July Dana's gym was neither.
        july = memory.retrieve("Which gym did Dana go to in July?", user_id="u", now=NOW).memories
        assert all(m.signals.get("no_longer_holds", 0.0) == 0.0 for m in july)


def test_only_the_state_asked_for_answers_by_its_time(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        _two_gyms(memory)
        memory.add("Dana's gym membership fee is $30 a month.", user_id="u", kind="fact", subject="Dana",
                   predicate="membership fee", object="$30", created_at=datetime(2026, 8, 25, tzinfo=UTC))
        memory.add("Dana's gym membership fee is $40 a month.", user_id="u", kind="fact", subject="Dana",
                   predicate="membership fee", object="$40", created_at=datetime(2026, 10, 1, tzinfo=UTC))
        memory.add("My weather app is AccuWeather.", user_id="u", kind="fact", subject="I", predicate="weather app",
                   object="AccuWeather", created_at=datetime(2026, 8, 1, tzinfo=UTC))
        memory.add("My weather app is Carrot Weather now.", user_id="u", kind="fact", subject="I",
                   predicate="weather app", object="Carrot Weather", created_at=datetime(2026, 11, 20, tzinfo=UTC))
        memory.add("Sunny afternoon, went for a walk in the park.", user_id="u",
                   created_at=datetime(2026, 11, 18, tzinfo=UTC))
        gym = memory.retrieve("Which gym did Dana go to in September?", user_id="u", now=NOW).memories
        lifted = [m.content for m in gym if m.signals.get("no_longer_holds", 0.0) > 0]
        assert lifted == ["Dana's gym is FitLab."]  # not the fee: its predicate is not what is asked
        weather = memory.retrieve("What was the weather like last week?", user_id="u", now=NOW).memories
        assert all(m.signals.get("no_longer_holds", 0.0) == 0.0 for m in weather)
        # A question naming what was ("old") keeps reading every superseded version, whatever its scope.
        old = memory.retrieve("Which weather app did I use until recently?", user_id="u", now=NOW).memories
        assert old[0].content == "My weather app is AccuWeather."


def test_a_current_fact_that_held_then_is_pointed_at(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        _two_gyms(memory)
        memory.add("Booked the pottery class for Mum.", user_id="u", created_at=datetime(2026, 10, 28, 9, tzinfo=UTC))
        found = memory.retrieve("Which gym did Dana go to on October 28?", user_id="u", now=NOW).memories
        assert found[0].content == "Dana's gym is Iron Temple."  # before the day's own message
        assert "held during 'October 28'" in found[0].reasons
        assert all(m.content != "Dana's gym is FitLab." for m in found[:1])


def _two_gyms(memory: Memory) -> None:
    """Dana's gym, FitLab from August 25, superseded by Iron Temple on October 15."""
    memory.add("Dana's gym is FitLab.", user_id="u", kind="fact", subject="Dana", predicate="gym",
               object="FitLab", created_at=datetime(2026, 8, 25, tzinfo=UTC))
    memory.add("Dana's gym is Iron Temple.", user_id="u", kind="fact", subject="Dana", predicate="gym",
               object="Iron Temple", created_at=datetime(2026, 10, 15, tzinfo=UTC))


def test_what_held_is_the_asked_ones_own(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        _two_gyms(memory)
        memory.add("Sam's gym is Crunch.", user_id="u", kind="fact", subject="Sam", predicate="gym", object="Crunch",
                   created_at=datetime(2026, 8, 1, tzinfo=UTC))
        memory.add("Dana's employer is Acme.", user_id="u", kind="fact", subject="Dana", predicate="employer",
                   object="Acme", created_at=datetime(2026, 8, 1, tzinfo=UTC))
        memory.add("Dana's email address is dana@old.example.", user_id="u", kind="fact", subject="Dana",
                   predicate="email address", object="dana@old.example", created_at=datetime(2026, 8, 1, tzinfo=UTC))
        found = memory.retrieve("Which gym did Dana go to on October 28?", user_id="u", now=NOW).memories
        said = {m.content for m in found if "held during 'October 28'" in m.reasons}
        assert said == {"Dana's gym is Iron Temple."}  # not Sam's gym, not Dana's employer
        email = memory.retrieve("What was Dana's email on October 28?", user_id="u", now=NOW).memories
        assert any("held during 'October 28'" in m.reasons for m in email
                   if m.content == "Dana's email address is dana@old.example.")


@pytest.mark.parametrize("query", [
    "What was said about the gym in September?",
    "What was discussed in the meeting last Tuesday?",
])
def test_what_was_said_then_is_no_state(query: str) -> None:
    assert not understand(query, now=NOW).past
