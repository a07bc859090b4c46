"""Vectors a caller already has are handed over instead of embedded again, checked against the
store's embedder: its model, its dimensions, finite numbers; a refused item refuses its batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from engram import Memory
from engram.cli import cli
from engram.embedders.fake import FakeEmbedder
from engram.embedders.onnx_minilm import MODEL_ID
from engram.errors import ValidationError
from engram.model import Filters


def _embedder(memory: Memory) -> FakeEmbedder:
    embedder = memory.embedder
    assert isinstance(embedder, FakeEmbedder)
    return embedder


def test_a_brought_vector_is_stored_at_unit_length_and_not_embedded(each_backend: Memory) -> None:
    embedder = _embedder(each_backend)
    brought = np.arange(1, embedder.dimensions + 1, dtype=np.float64)
    before = embedder.texts_embedded
    made = each_backend.add_many([
        {"user_id": "u", "content": "Acme renewed for two years", "vector": brought.tolist(),
         "embedding_model": embedder.model_id},
        {"user_id": "u", "content": "Bluebird asked for a quote"},
    ])
    assert embedder.texts_embedded - before == 1  # only the second
    stored = each_backend.store.vectors("u", [made[0].id])[made[0].id]
    np.testing.assert_allclose(stored, brought / np.linalg.norm(brought), rtol=1e-6)
    # Found by meaning through the vector it brought, not through its words.
    query = embedder.embed_batch(["zebra crossing"])[0]
    each_backend.add_many([{"user_id": "u", "content": "an unrelated note", "vector": query.tolist(),
                            "embedding_model": embedder.model_id}])
    found = each_backend.retrieve("zebra crossing", user_id="u")
    assert found.memories[0].content == "an unrelated note"


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"vector": [0.1] * 64, "embedding_model": "text-embedding-3-small"}, "embedding_model", "embeds with"),
    ({"vector": [0.1] * 63, "embedding_model": "fake-hash-64"}, "vector", "63 numbers"),
    ({"vector": [0.1] * 63 + [float("nan")], "embedding_model": "fake-hash-64"}, "vector", "finite"),
    ({"vector": [0.0] * 64, "embedding_model": "fake-hash-64"}, "vector", "no direction"),
    ({"vector": "0.1, 0.2", "embedding_model": "fake-hash-64"}, "vector", "list of 64 numbers"),
    ({"vector": [0.1] * 63 + ["x"], "embedding_model": "fake-hash-64"}, "vector", "list of 64 numbers"),
    ({"vector": [0.1] * 64}, "embedding_model", "required"),
    ({"embedding_model": "fake-hash-64"}, "vector", "missing"),
]


@pytest.mark.parametrize(("fields", "field", "words"), BAD, ids=[f"{b[1]}-{b[2]}" for b in BAD])
def test_a_bad_vector_refuses_the_batch_naming_its_item(
    each_backend: Memory, fields: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        each_backend.add_many([{"user_id": "u", "content": "kept out"}, {"user_id": "u", "content": "x", **fields}])
    assert caught.value.field == f"memories[1].{field}"
    assert words in str(caught.value)
    assert each_backend.store.count("u") == 0


def test_an_import_line_brings_its_vector(tmp_path: Path) -> None:
    db, path = tmp_path / "cli.db", tmp_path / "m.jsonl"
    unit = [1.0] + [0.0] * 383
    path.write_text(json.dumps({"content": "Acme prefers NET30", "vector": unit, "embedding_model": MODEL_ID}) + "\n")
    result = CliRunner().invoke(cli, ["import", str(path), "--user", "u", "--db", str(db)])
    assert result.exit_code == 0, result.output
    with Memory(db) as memory:
        [record] = memory.store.list("u", Filters())
        np.testing.assert_array_equal(memory.store.vectors("u", [record.id])[record.id], np.asarray(unit, np.float32))
    path.write_text(json.dumps({"content": "Bluebird", "vector": unit, "embedding_model": "other-model"}) + "\n")
    refused = CliRunner().invoke(cli, ["import", str(path), "--user", "u", "--db", str(db)])
    assert refused.exit_code != 0
    assert "m.jsonl:1-1" in refused.output and "embedding_model" in refused.output
