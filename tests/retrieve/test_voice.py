"""A query that asks for someone's words ("What did Priya think of the trial?") favours what they
said over what others said about the same thing."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest

from engram.config import RetrievalConfig
from engram.memory import Memory
from engram.retrieve.types import MemoryEntry
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def test_whose_words_are_asked_for() -> None:
    assert understand("What did Priya think of the trial?", now=NOW).speaking == ("mention:priya",)
    assert understand("Did Mark say anything about the hotel?", now=NOW).speaking == ("mention:mark",)
    both = understand("What does Melanie think about Caroline's decision?", now=NOW)
    assert both.speaking == ("mention:melanie",) and "mention:caroline" in both.entities
    assert understand("What did Priya order?", now=NOW).speaking == ()
    assert understand("What did I say about the trial?", now=NOW).speaking == ()


def test_the_speakers_own_message_gains(each_backend: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    said = [
        ("Maya", "2026-10-19T10:00:00+00:00", "Priya hates reconciling by hand. Start a Ledgerly trial for Priya."),
        ("Priya", "2026-11-03T09:30:00+00:00", "Honestly it reconciles the payouts for me. Let's keep Ledgerly."),
        ("Bob", "2026-11-03T09:40:00+00:00", "Priya seems happy with it."),
    ]
    each_backend.add_many([{"content": t, "user_id": "u", "role": who, "created_at": at} for who, at, t in said])

    def asked() -> dict[str, MemoryEntry]:
        result = each_backend.retrieve("What did Priya think of the trial?", user_id="u", now=NOW,
                                       config=RetrievalConfig(top_k=10, min_score=0.0, cache_ttl=0))
        return {m.content.split()[0]: m for m in result.memories}

    by = asked()
    verdict = by["Honestly"]
    assert verdict.signals["voice"] == 1.0
    assert "in the words of whom the query asks about" in verdict.reasons
    assert by["Priya"].signals["voice"] == 0.0  # Bob's remark about her
    # The package re-exports the function ``rank``: the module is reached through sys.modules.
    monkeypatch.setattr(sys.modules["engram.retrieve.rank"], "VOICE_GAIN", 0.0)
    unvoiced = asked()["Honestly"]
    assert verdict.signals["relevance"] == pytest.approx(unvoiced.signals["relevance"] + 0.15)
    assert verdict.score > unvoiced.score


def test_a_speaker_named_in_lowercase_in_anothers_message_is_mentioned(each_backend: Memory) -> None:
    """A chat names its own people in lowercase ("lena on the podium"): a question about Lena finds
    Priya's message about her as one that mentions her, not as one about no one."""
    said = [
        ("Lena", "2026-11-14T18:00:00+00:00", "pub?"),
        ("Priya", "2026-11-14T18:05:00+00:00", "[photo: lena on the podium with a trophy shaped like a chalk bag]"),
        ("Priya", "2026-11-14T18:06:00+00:00", "[photo: marc asleep on the crash pad]"),
        ("Priya", "2026-11-14T18:07:00+00:00", "the lenape trail next time?"),
    ]
    each_backend.add_many([{"content": t, "user_id": "u", "role": who, "created_at": at} for who, at, t in said])
    result = each_backend.retrieve("What was Lena's prize shaped like?", user_id="u", now=NOW,
                                   config=RetrievalConfig(top_k=10, min_score=0.0, cache_ttl=0))
    overlap = {m.content: m.signals["entity_overlap"] for m in result.memories}
    assert overlap[said[1][2]] == 0.5  # another's message naming a speaker (signals.SPEAKER_MENTION)
    assert overlap["pub?"] == 1.0  # her own
    assert overlap.get(said[2][2], 0.0) == 0.0 and overlap.get(said[3][2], 0.0) == 0.0  # "lenape" is not "lena"
