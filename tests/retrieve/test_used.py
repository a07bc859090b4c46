"""Implicit feedback: which retrieved memories a model's answer used, read from its words."""

from __future__ import annotations

from pathlib import Path

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.retrieve.used import used_in

MEMORIES = [
    ("terms", "Acme prefers NET30 payment terms"),
    ("order", "Acme ordered 40 kg of espresso for delivery on May 3"),
    ("globex", "Globex pays NET15 since they paid two invoices late"),
    ("plants", "The office plants need watering on Fridays"),
]


def test_a_memory_is_used_when_the_answer_repeats_what_it_says() -> None:
    answer = "Acme pays on NET30 terms. Their last order was 40 kg of espresso, due May 3."
    assert used_in(MEMORIES, answer) == ["terms", "order"]
    # One shared word ("pays", "Acme") is chance, not use.
    assert used_in(MEMORIES, "Acme pays on time.") == []
    assert used_in(MEMORIES, "I don't know.") == [] and used_in(MEMORIES, "   ") == []
    # An answer that only restates the question used nothing.
    assert used_in(MEMORIES, "What did Acme order? Acme ordered something in May.", "What did Acme order?") == []
    # A possessive names the same one; a memory without text is used by nothing.
    assert used_in([("dentist", "Priya sees Dr. Patel")], "Priya's dentist is Dr. Patel.") == ["dentist"]
    assert used_in([("none", None)], "anything at all") == []  # type: ignore[list-item]


def test_a_long_memory_quoted_in_part_is_used() -> None:
    long = ("notes", "Kickoff notes: Priya owns the Ledgerly migration, Bob the warehouse scanners, Tom the van "
            "schedule, Lena the printer queue; the budget is $12,000 and the deadline December 12; weekly check-ins "
            "on Mondays at 9; risks are the QuickBooks export, the scanner firmware and the holiday rush.")
    assert used_in([long], "Priya owns the Ledgerly migration with a $12,000 budget, due December 12, "
                           "checked in weekly on Mondays.") == ["notes"]


def test_retrieval_used_in_feeds_feedback(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder()) as memory:
        memory.add_many([{"content": text, "user_id": "u", "kind": "fact"} for _, text in MEMORIES])
        result = memory.retrieve("Acme payment terms and espresso order", user_id="u")
        used = result.used_in("Acme pays on NET30 terms; 40 kg of espresso arrive May 3.")
        by_id = {m.id: m.content for m in result.memories}
        assert {by_id[i] for i in used} == {MEMORIES[0][1], MEMORIES[1][1]}
        assert result.metadata.retrieval_id is not None
        recorded = memory.feedback(result.metadata.retrieval_id, used, user_id="u")
        assert recorded.recorded == 2
