"""The ``minilm-int8`` embedder: MiniLM rewritten once onto integer kernels, cached, a model of its
own whose vectors stay close to the default model's; a store keeps the two apart."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engram import Memory
from engram.embedders import default_embedder, named_embedder
from engram.embedders.onnx_minilm import INTEGER_MODEL_ID, MODEL_ID, MiniLMEmbedder
from engram.errors import EmbedderError, EmbedderMismatch

pytest.importorskip("onnx")

TEXTS = [
    "What did Bob ask last week about the invoice?",
    "I moved to Lisbon in 2021 and still love the pastel de nata near the river.",
    "Restart the ingestion worker whenever the queue backs up past a thousand jobs.",
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("engram-cache")
    before = os.environ.get("ENGRAM_CACHE_DIR")
    os.environ["ENGRAM_CACHE_DIR"] = str(root)
    try:
        yield root
    finally:
        if before is None:
            os.environ.pop("ENGRAM_CACHE_DIR", None)
        else:
            os.environ["ENGRAM_CACHE_DIR"] = before


@pytest.fixture(scope="module")
def integer(cache_dir: Path) -> MiniLMEmbedder:
    embedder = named_embedder("minilm-int8")
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


def test_the_rewrite_is_made_once_and_kept_in_the_cache(integer: MiniLMEmbedder, cache_dir: Path) -> None:
    [saved] = list((cache_dir / "models").iterdir())
    stamp = saved.stat().st_mtime_ns
    again = MiniLMEmbedder(integer=True)
    assert saved.stat().st_mtime_ns == stamp and len(list((cache_dir / "models").iterdir())) == 1
    assert np.array_equal(again.embed_batch(TEXTS), integer.embed_batch(TEXTS))
    # Every product with a weight runs on integer kernels; float MatMul is left only between two
    # activations (attention's two a layer).
    import onnx

    graph = onnx.load(str(saved)).graph
    weights = {init.name for init in graph.initializer}
    assert sum(node.op_type == "MatMulInteger" for node in graph.node) >= 36  # six a layer, six layers
    assert not [n.name for n in graph.node if n.op_type == "MatMul" and weights & set(n.input)]


def test_vectors_are_close_to_the_default_models_but_another_model(integer: MiniLMEmbedder) -> None:
    assert integer.model_id == INTEGER_MODEL_ID != MODEL_ID == default_embedder().model_id
    ours, reference = integer.embed_batch(TEXTS), default_embedder().embed_batch(TEXTS)
    assert ours.shape == (3, 384) and np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() > 0.98 and not np.allclose(ours, reference, atol=1e-4)
    # Meaning survives: each text is nearest its own default-model vector.
    assert list(np.argmax(ours @ reference.T, axis=1)) == [0, 1, 2]


def test_a_store_bound_to_one_model_refuses_the_other(integer: MiniLMEmbedder, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db) as memory:
        memory.add("Bob asked about the invoice.", user_id="u")
    with pytest.raises(EmbedderMismatch), Memory(db, embedder=integer) as other:
        other.add("Another note.", user_id="u")


def test_without_onnx_the_first_rewrite_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(EmbedderError, match=r"\.\[int8\]' in a checkout"):
        MiniLMEmbedder(integer=True)
    assert not (tmp_path / "models").exists() or not list((tmp_path / "models").iterdir())
