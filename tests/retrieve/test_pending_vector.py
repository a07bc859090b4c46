"""The SQL sources are read while the query is still being embedded; the vector searches start as
soon as its vector is there, and without one the other sources still answer."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np

from engram import Memory
from engram.config import RetrievalConfig
from engram.ext import Vector
from engram.model import Filters, Hit
from engram.retrieve.candidates import gather
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class Embedding:
    """A query vector, done or still on its way; notes which sources had run when it was read."""

    def __init__(self, vector: Vector | None, ready: bool) -> None:
        self.vector, self.ready = vector, ready
        self.order: list[str] = []
        self.read_after: list[str] | None = None

    def done(self) -> bool:
        return self.ready

    def result(self) -> Vector | None:
        self.read_after = list(self.order)
        return self.vector


def _gather(memory: Memory, query: str, query_vec: Embedding) -> tuple[list[str], dict[str, list[str]]]:
    order = query_vec.order

    def timed(name: str, call: Callable[[], list[Hit]]) -> list[Hit]:
        order.append(name)
        return call()

    found = gather(memory.store, user_id="u", plan=understand(query, now=NOW), query_vec=query_vec,
                   config=RetrievalConfig(), filters=Filters(), timed=timed)
    return order, found.sources


def _vector(memory: Memory, text: str) -> Vector:
    return np.asarray(memory.embedder.embed_batch([text])[0], dtype=np.float32)


def test_keywords_are_read_before_the_embedding_is_waited_for(each_backend: Memory) -> None:
    each_backend.add("Acme ordered espresso beans", user_id="u")
    pending = Embedding(_vector(each_backend, "Acme ordered espresso beans"), ready=False)
    order, sources = _gather(each_backend, "What did Acme order?", pending)
    assert pending.read_after is not None and "keyword" in pending.read_after
    assert "semantic" in order
    assert {"semantic", "keyword"} <= {s for found_by in sources.values() for s in found_by}


def test_a_vector_already_there_starts_its_search_first(each_backend: Memory) -> None:
    each_backend.add("Acme ordered espresso beans", user_id="u")
    ready = Embedding(_vector(each_backend, "Acme ordered espresso beans"), ready=True)
    _gather(each_backend, "What did Acme order?", ready)
    assert ready.read_after == []


def test_without_a_vector_the_other_sources_answer(each_backend: Memory) -> None:
    made = each_backend.add("Acme ordered espresso beans", user_id="u")
    order, sources = _gather(each_backend, "What did Acme order?", Embedding(None, ready=False))
    assert "semantic" not in order
    assert "keyword" in sources[made.id]
