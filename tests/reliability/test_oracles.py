"""Cross-user oracles of the outside review (issue 12, item 4), on both backends.

Nothing one user stores may be observable by another: not through keyword scores (SQLite's BM25
once used file-wide statistics, so another user's words moved my scores, and the payload's
signals showed it), and not through how fast an add is (embeddings were reused by content hash
across users, so adding text someone else had stored was 25x faster). The embedder's work is
counted rather than timed, so the test does not depend on the machine.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from tests.reliability._workers import WORDS, report, scale

NOW = datetime(2026, 1, 15, tzinfo=UTC)
QUERIES = ("invoice shipment", "quarterly rebate contract", "customs audit courier", "ledger", "freight harbor")


@pytest.fixture
def memory(each_backend: Memory) -> Memory:
    return each_backend


def _payloads(memory: Memory, search_type: str) -> list[list[dict[str, Any]]]:
    config = RetrievalConfig(min_score=0.0, top_k=20, cache_ttl=0, track_access=False, search_type=search_type)
    # Every candidate kept, nothing written back by the reads themselves (no access counts).
    return [[e.to_dict() for e in memory.retrieve(q, user_id="victim", config=config, now=NOW).memories]
            for q in QUERIES]


def test_another_users_words_do_not_change_my_scores(memory: Memory) -> None:
    rng = random.Random(4)
    memory.add_many([{"user_id": "victim", "content": " ".join(rng.sample(WORDS, 5)),
                      "created_at": NOW - timedelta(days=i)} for i in range(30)])
    before = {kind: _payloads(memory, kind) for kind in ("keyword", "hybrid")}
    assert all(any(found) for found in before.values()), "the probes must find something to compare"
    # The attacker floods the corpus with the victim's query words, then with words the victim never uses.
    floods = scale(2, 6)
    for round_ in range(floods):
        words = [w for q in QUERIES for w in q.split()] if round_ % 2 == 0 else ["zephyr", "quasar", "nebula"]
        memory.add_many([{"user_id": "attacker", "content": " ".join(rng.choices(words, k=8))} for _ in range(100)])
    after = {kind: _payloads(memory, kind) for kind in ("keyword", "hybrid")}
    changed = sum(b != a for kind in before for b, a in zip(before[kind], after[kind], strict=True))
    report(f"oracle_keyword_statistics_{memory.stats()['backend']}", {"probes": 2 * len(QUERIES),
                                         "attacker_memories": 100 * floods, "payloads_changed": changed})
    assert after == before


def test_storing_text_another_user_stored_is_embedded_again(memory: Memory) -> None:
    embedder = memory.embedder
    assert isinstance(embedder, FakeEmbedder)
    texts = [f"Confidential merger memo number {i} about {WORDS[i % len(WORDS)]}" for i in range(scale(20, 100))]
    memory.add_many([{"user_id": "insider", "content": t} for t in texts])
    embedded = embedder.texts_embedded
    memory.add_many([{"user_id": "prober", "content": t} for t in texts])
    reused_across_users = len(texts) - (embedder.texts_embedded - embedded)
    # Within one user the reuse stays: storing the same text again embeds nothing.
    embedded = embedder.texts_embedded
    memory.add_many([{"user_id": "prober", "content": t} for t in texts])
    report(f"oracle_embedding_reuse_{memory.stats()['backend']}", {"probes": len(texts),
                                      "reused_across_users": reused_across_users,
                                      "embedded_again_within_user": embedder.texts_embedded - embedded})
    assert reused_across_users == 0
    assert embedder.texts_embedded == embedded
