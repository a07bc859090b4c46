"""graphiti#1804: stale facts flooding results. A fact restated 50 times with a new value must come
back once (the current one) by default, not 50 times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder

START = datetime(2024, 1, 1, tzinfo=UTC)


def _versions(one_batch: bool, memory: Memory) -> None:
    items = [
        {"user_id": "u", "kind": "fact", "subject": "Acme", "predicate": "payment_terms", "object": f"NET{n}",
         "content": f"Acme payment terms are NET{n}", "created_at": START + timedelta(days=n)}
        for n in range(1, 51)
    ]
    if one_batch:
        memory.add_many(items)
    else:
        for item in items:
            memory.add_many([item])


@pytest.mark.parametrize("one_batch", [False, True], ids=["one_by_one", "one_batch"])
def test_graphiti_1804_fifty_versions_of_a_fact_return_at_most_one(tmp_path: Path, one_batch: bool) -> None:
    with Memory(tmp_path / "stale.db", embedder=FakeEmbedder()) as memory:
        memory.add("Acme ships from the Rotterdam warehouse", user_id="u")
        _versions(one_batch, memory)
        now = START + timedelta(days=60)
        for query in ("What are Acme's payment terms?", "Acme payment terms", "NET30"):
            result = memory.retrieve(query, user_id="u", now=now, config=RetrievalConfig(min_score=0.0, top_k=50))
            facts = [e for e in result.memories if e.record is not None and e.record.predicate == "payment_terms"]
            assert len(facts) <= 1, [e.content for e in facts]
            if facts:
                assert facts[0].record is not None and facts[0].record.object == "NET50"
