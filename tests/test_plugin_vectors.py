"""A plugin embedder's rows are made unit length wherever they are used, so the stored vectors, the
vector search and the ranking read a cosine on every backend alike; rows it cannot mean are refused."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.errors import EmbedderError
from engram.ext import Vector
from engram.model import Filters


class Unnormalized(FakeEmbedder):
    """The fake embedder, except for the texts of :data:`ROWS`, given rows of their own lengths (a
    model without a final normalization): a dot product would favour the long row."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    @property
    def model_id(self) -> str:
        return "plugin-unnormalized-64"

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        out = super().embed_batch(texts) * 3.0
        for row, text in enumerate(texts):
            if text in ROWS:
                out[row] = ROWS[text]
        if self.broken:
            out[0, 0] = np.nan
        return out


def _row(**axes: float) -> Vector:
    row = np.zeros(64, dtype=np.float32)
    for axis, value in axes.items():
        row[int(axis[1:])] = value
    return row


QUERY, CLOSE, FAR = "zebra crossing", "zebra crossing repainted", "a long note about many other things"
ROWS = {
    QUERY: _row(e0=2.0),
    CLOSE: _row(e0=1.0, e1=0.3),  # cosine 0.96, dot 2.0
    FAR: _row(e0=5.0, e2=10.0),  # cosine 0.45, dot 10.0
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def plugin_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, Unnormalized]]:
    embedder = Unnormalized()
    if request.param == "sqlite":
        made = Memory(tmp_path / "engram.db", embedder=embedder)
    else:
        made = Memory(store=request.getfixturevalue("postgres_store"), embedder=embedder)
    with made:
        yield made, embedder


def test_stored_and_searched_vectors_are_unit_length(plugin_memory: tuple[Memory, Unnormalized]) -> None:
    memory, _ = plugin_memory
    close, far = memory.add_many([{"user_id": "u", "content": CLOSE}, {"user_id": "u", "content": FAR}])
    stored = memory.store.vectors("u", [close.id, far.id])
    for vector in stored.values():
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    unit = ROWS[QUERY] / np.linalg.norm(ROWS[QUERY])
    hits = memory.store.vector_search("u", unit, 2, Filters())
    assert [memory_id for memory_id, _ in hits] == [close.id, far.id]
    assert 0.0 < hits[0][1] <= 1.0 + 1e-5  # a cosine on every backend, not a dot product of long rows
    found = memory.retrieve(QUERY, user_id="u")
    assert found.memories[0].id == close.id


def test_a_row_of_nan_is_refused_and_nothing_is_stored(plugin_memory: tuple[Memory, Unnormalized]) -> None:
    memory, embedder = plugin_memory
    memory.add("kept", user_id="u")
    embedder.broken = True
    with pytest.raises(EmbedderError, match="plugin-unnormalized-64 returned a vector holding NaN"):
        memory.add_many([{"user_id": "u", "content": "never stored"}, {"user_id": "u", "content": "nor this"}])
    assert memory.store.count("u") == 1


def test_a_query_row_of_nan_fails_the_retrieval_naming_the_model(plugin_memory: tuple[Memory, Unnormalized]) -> None:
    memory, embedder = plugin_memory
    memory.add("zebra crossing repainted", user_id="u")
    embedder.broken = True
    with pytest.raises(EmbedderError, match="plugin-unnormalized-64"):
        memory.retrieve("zebra crossing", user_id="u")
