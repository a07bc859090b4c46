"""A turn's conversation context must not depend on how deep the candidate sources looked."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram import Memory, RetrievalConfig
from engram.ext import Embedder

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
TOPICS = (
    "the garden", "my sister's wedding", "the new laptop", "our trip to Lisbon", "the dentist", "piano lessons",
    "the quarterly report", "a pottery class", "the school play", "marathon training", "the leaking roof",
    "adopting a dog",
)


def test_turns_around_a_candidate_are_scored_even_when_no_source_found_them(tmp_path: Path, embedder: Embedder) -> None:
    rng = random.Random(7)
    words = ("class", "clay", "bowl", "wheel", "glaze", "kiln", "lesson", "teacher", "weekend", "friend")
    turns = []
    for i in range(400):
        topic = rng.choice(TOPICS)
        text = f"{rng.choice(('So', 'Well', 'Oh'))}, {topic}: the {rng.choice(words)} and the {rng.choice(words)}."
        turns.append({"content": text, "user_id": "u", "role": "Caroline" if i % 2 else "Melanie",
                      "session_id": f"s{i // 30}",  # an evening's conversation, a turn a minute
                      "created_at": NOW - timedelta(days=20 - i // 30) + timedelta(minutes=i % 30)})
    with Memory(tmp_path / "depth.db", embedder=embedder) as memory:
        memory.add_many(turns)
        query = "How did the pottery class go?"
        # Five candidates per source: the turns around them are outside the pool.
        shallow = memory.retrieve(query, user_id="u", now=NOW,
                                  config=RetrievalConfig(top_k=3, candidate_limit=5, cache_ttl=0))
        deep = memory.retrieve(query, user_id="u", now=NOW, config=RetrievalConfig(top_k=80, cache_ttl=0))
    deep_context = {m.id: m.signals["conversation_context"] for m in deep.memories}
    assert shallow.memories
    for m in shallow.memories:
        # The neighbours are scored by meaning whether or not a source found them (keyword scores
        # still come from the keyword source's own list, so only the context is compared).
        assert m.signals["conversation_context"] > 0, m.content
        if m.id in deep_context:
            assert m.signals["conversation_context"] <= deep_context[m.id] + 1e-9
