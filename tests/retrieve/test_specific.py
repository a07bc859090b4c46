"""A name most of a user's memories carry tells little about which one answers; a rare one tells a
lot; a speaker's own turns count fully however much they talk."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.ext import Embedder
from engram.retrieve.specific import COMMON_SHARE, LEAST, NEWEST, entity_weights

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
CONFIG = RetrievalConfig(top_k=10, min_score=0.0, cache_ttl=0)


def test_a_names_weight_falls_with_the_share_of_memories_naming_it() -> None:
    got = entity_weights({"rare": 2, "edge": 20, "some": 50, "most": 440, "every": 1000, "none": 0}, 1000)
    assert got["rare"] == got["edge"] == got["none"] == 1.0  # up to COMMON_SHARE, fully
    assert got["some"] == pytest.approx(math.log(20) / math.log(1 / COMMON_SHARE))  # 0.77 at 5%
    assert got["most"] == pytest.approx(0.21, abs=0.005)
    assert got["every"] == 0.0


def test_a_few_memories_say_little_of_how_common_a_name_is() -> None:
    assert entity_weights({"alice": 2}, 3) == {"alice": 1.0}  # read as 2 of LEAST
    assert entity_weights({"x": 0}, 0) == {"x": 1.0}
    assert entity_weights({"mum": 9}, 10) == entity_weights({"mum": 9}, LEAST)
    assert entity_weights({"mum": 90}, LEAST)["mum"] < 0.1


def test_a_name_in_most_memories_does_not_outrank_the_answer(tmp_path: Path, embedder: Embedder) -> None:
    chatter = ["Mum loved the garden at Beechcroft.", "Took Mum to church on Sunday.",
               "Mum wants her green armchair in the new room.", "Mum asked about the cat again.",
               "Mum's friend Zoya visited with pastries.", "Mum is settling in, slowly.",
               "Mum thinks the food is too salty.", "Mum rang me twice today.",
               "Ada is coming up from Leeds for Mum's birthday."]
    rows = [{"content": text, "role": "user", "created_at": NOW - timedelta(days=30 - day)}
            for day, text in enumerate(chatter)]
    answer = "The GP put her levothyroxine up to 100 micrograms."
    rows.append({"content": answer, "role": "user", "created_at": NOW - timedelta(days=5)})
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{**row, "user_id": "u"} for row in rows])
        found = memory.retrieve("What dose of levothyroxine is Mum on these days?", user_id="u", now=NOW,
                                config=CONFIG).memories
        assert found[0].content == answer, [m.content for m in found]
        mum = next(m for m in found if m.content.startswith("Mum loved"))
        # 9 of the 10 memories name her (read as 9 of LEAST)
        assert mum.signals["entity_overlap"] == pytest.approx(entity_weights({"mum": 9}, 10)["mum"])
        assert len(rows) <= NEWEST and mum.signals["entity_overlap"] < 0.7
        ada = memory.retrieve("When is Ada visiting?", user_id="u", now=NOW, config=CONFIG).memories
        assert ada[0].content.startswith("Ada")
        assert ada[0].signals["entity_overlap"] == 1.0  # one of LEAST: as telling as a name can be


def test_a_speakers_own_turns_count_fully_however_much_they_talk(each_backend: Memory) -> None:
    said = [("Caroline", f"Caroline's note {n}: went to the support group again.") for n in range(8)]
    said += [("Melanie", "Painted a sunrise with the kids."), ("Caroline", "Researching adoption agencies now.")]
    each_backend.add_many([{"content": text, "role": who, "user_id": "u", "session_id": "s",
                            "created_at": NOW - timedelta(minutes=len(said) - n)}
                           for n, (who, text) in enumerate(said)])
    found = each_backend.retrieve("What did Caroline research?", user_id="u", now=NOW, config=CONFIG).memories
    own = next(m for m in found if m.content.startswith("Researching"))
    assert own.signals["entity_overlap"] == 1.0
