"""Diversification stops looking once no memory left can beat its pick: the same picks as reading
every memory for every pick (the reference below), on scores with ties, tiers, NaN and infinities."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.model import MemoryRecord
from engram.retrieve.select import _CONTENT_WORD, mmr
from engram.retrieve.types import Scored
from engram.text import STOPWORDS

NOW = datetime(2024, 2, 15, 12, 0, tzinfo=UTC)
WORDS = ("lunch", "order", "train", "dog", "rent", "budget", "porto", "the")


def reference(items: list[Scored], k: int, lam: float, threshold: float = 0.65) -> list[str]:
    """Every pick reads every memory not picked yet: the highest score less the duplicate's penalty."""
    ordered = sorted(items, key=lambda s: (s.tier, -s.score))
    values = [(-1e9 if math.isnan(s.score) else max(-1e9, min(1e9, s.score))) - 1e6 * s.tier for s in ordered]
    vectors = [None if s.vector is None else s.vector / (np.linalg.norm(s.vector) or 1.0) for s in ordered]
    words = [frozenset(w for w in _CONTENT_WORD.findall(s.record.content.lower()) if w not in STOPWORDS)
             for s in ordered]
    picked: list[int] = []
    covered: set[str] = set()
    for _ in range(min(k, len(ordered))):
        best, best_value = -1, -math.inf
        for i in range(len(ordered)):
            if i in picked:
                continue
            near = max((float(vectors[i] @ vectors[j]) for j in picked
                        if vectors[i] is not None and vectors[j] is not None), default=0.0)
            dup = min(max((near - threshold) / (1 - threshold), 0.0), 1.0)
            if dup > 0:
                dup *= len(words[i] & covered) / len(words[i]) if words[i] else 1.0
            if values[i] - (1 - lam) * dup > best_value:
                best, best_value = i, values[i] - (1 - lam) * dup
        picked.append(best)
        covered |= words[best]
    return [ordered[i].record.id for i in picked]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.one_of(st.floats(0, 1), st.sampled_from([0.5, float("nan"), float("inf"), -float("inf")])),
                       st.integers(0, 1), st.integers(0, 3), st.floats(0, 0.5),
                       st.lists(st.sampled_from(WORDS), max_size=4)), max_size=30),
    st.integers(0, 12), st.sampled_from([0.0, 0.3, 0.7, 1.0]), st.integers(0, 2**32 - 1),
)
def test_the_picks_are_those_of_reading_every_memory(
    rows: list[tuple[float, int, int, float, list[str]]], k: int, lam: float, seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((4, 8)).astype(np.float32)
    items = []
    for i, (score, tier, topic, spread, words) in enumerate(rows):
        vector = (topics[topic] + spread * rng.standard_normal(8)).astype(np.float32)
        record = MemoryRecord(id=f"m{i:02d}", user_id="u", content=" ".join(words), kind="message", created_at=NOW,
                              recorded_at=NOW, content_hash=f"m{i:02d}")
        items.append(Scored(record=record, score=score, tier=tier, vector=vector if i % 5 else None))
    assert [s.record.id for s in mmr(items, k, lam)] == reference(items, k, lam)
