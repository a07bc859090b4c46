"""Questions are embedded by the default model's int8 twin: written once into the cache, checked
against the digest in its name, close to the model's own vectors, never used for what is stored,
and replaced by the model itself whenever it cannot be used."""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engram import Memory
from engram.embedders.onnx_minilm import MODEL_SHA256, MiniLMEmbedder
from engram.embedders.query_model import BLOCK, query_model
from engram.errors import EmbedderError

TEXTS = [
    "What gadget did I get to make getting up easier?",
    "I moved to Lisbon in 2021 and still love the pastel de nata near the river.",
    "Restart the ingestion worker whenever the queue backs up past a thousand jobs. " * 30,  # past 256 tokens
]


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(tmp_path))
    yield tmp_path / "models"


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return MiniLMEmbedder(quantized_queries=False).embed_batch(TEXTS)


def _twins(folder: Path) -> list[Path]:
    return sorted(folder.glob("*-q8b*.onnx")) if folder.is_dir() else []


def test_the_twin_is_written_once_named_by_its_digest(cache: Path, reference: np.ndarray) -> None:
    first = MiniLMEmbedder()
    asked = first.embed_query(TEXTS)
    [twin] = _twins(cache)
    assert twin.name.startswith(f"all-MiniLM-L6-v2-q8b{BLOCK}-{MODEL_SHA256[:16]}-")
    assert twin.stem.endswith(hashlib.sha256(twin.read_bytes()).hexdigest()[:16])
    stamp = twin.stat().st_mtime_ns
    again = MiniLMEmbedder().embed_query(TEXTS)
    assert _twins(cache) == [twin] and twin.stat().st_mtime_ns == stamp
    assert np.array_equal(asked, again)
    # Every product with a weight keeps its weights int8; float MatMul is left only between two
    # activations (attention's two a layer), and no float copy of a weight is stored.
    import onnx

    graph = onnx.load(str(twin)).graph
    weights = {init.name for init in graph.initializer}
    assert sum(node.op_type == "MatMulNBits" for node in graph.node) >= 36  # six a layer, six layers
    assert not [n.name for n in graph.node if n.op_type == "MatMul" and weights & set(n.input)]
    assert not [n.name for n in graph.node if n.op_type == "Cast" and n.output[0].startswith("val_")]


def test_questions_land_beside_the_models_own_vectors(cache: Path, reference: np.ndarray) -> None:
    embedder = MiniLMEmbedder()
    asked = embedder.embed_query(TEXTS)
    assert asked.shape == (3, 384) and np.allclose(np.linalg.norm(asked, axis=1), 1.0, atol=1e-5)
    cosines = (asked * reference).sum(axis=1)
    assert cosines.min() > 0.999 and not np.array_equal(asked, reference)
    assert list(np.argmax(asked @ reference.T, axis=1)) == [0, 1, 2]
    # What is stored is the model's own vector, bit for bit.
    assert np.array_equal(embedder.embed_batch(TEXTS), reference)


def test_without_the_twin_questions_are_the_models_own_vectors(cache: Path, reference: np.ndarray) -> None:
    plain = MiniLMEmbedder(quantized_queries=False)
    assert np.array_equal(plain.embed_query(TEXTS), reference)
    assert _twins(cache) == []


def test_a_process_that_only_asks_loads_only_the_twin(cache: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db, embedder=MiniLMEmbedder()) as memory:
        memory.add("I bought a Lumie sunrise alarm clock.", user_id="u")
    asking = MiniLMEmbedder()
    with Memory(db, embedder=asking) as memory:
        found = memory.retrieve("What gadget did I get to make getting up easier?", user_id="u")
    assert found.memories and "Lumie" in found.memories[0].record.content  # type: ignore[union-attr]
    assert set(asking._sessions) == {"queries"}


@pytest.mark.parametrize("damage", [b"", b"not a model", None])
def test_a_damaged_twin_is_removed_and_written_again(
    cache: Path, reference: np.ndarray, damage: bytes | None,
) -> None:
    before = MiniLMEmbedder().embed_query(TEXTS)
    [twin] = _twins(cache)
    if damage is None:  # cut short
        twin.write_bytes(twin.read_bytes()[: twin.stat().st_size // 2])
    else:
        twin.write_bytes(damage)
    after = MiniLMEmbedder().embed_query(TEXTS)
    [again] = _twins(cache)
    assert np.array_equal(after, before)
    assert again.stem.endswith(hashlib.sha256(again.read_bytes()).hexdigest()[:16])


def test_a_twin_that_will_not_load_leaves_questions_to_the_model(
    cache: Path, reference: np.ndarray, caplog: pytest.LogCaptureFixture,
) -> None:
    garbage = b"matches its name, but is no model"
    cache.mkdir(parents=True)
    name = f"all-MiniLM-L6-v2-q8b{BLOCK}-{MODEL_SHA256[:16]}-{hashlib.sha256(garbage).hexdigest()[:16]}.onnx"
    (cache / name).write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="engram"):
        asked = MiniLMEmbedder().embed_query(TEXTS)
    assert np.array_equal(asked, reference)
    assert "could not load the question model" in caplog.text


def test_without_onnx_questions_use_the_model_and_nothing_is_written(
    cache: Path, reference: np.ndarray, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    assert np.array_equal(MiniLMEmbedder().embed_query(TEXTS), reference)
    assert _twins(cache) == []


def test_a_source_that_fails_its_check_writes_no_twin(cache: Path, tmp_path: Path) -> None:
    def refused() -> Path:
        raise EmbedderError("model file does not match its pinned sha256")

    with pytest.raises(EmbedderError, match="pinned sha256"):
        query_model(tmp_path / "model.onnx", MODEL_SHA256, refused)
    assert _twins(cache) == []
