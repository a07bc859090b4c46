from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engram.embedders.fake import FakeEmbedder
from engram.eval.cached_embedder import CachedEmbedder, default_cache_path
from engram.ext import Embedder

TEXTS = ["the cat sat", "a dog barked", "the cat sat", "rain in Spain"]


def test_satisfies_the_embedder_protocol(tmp_path: Path) -> None:
    cached = CachedEmbedder(FakeEmbedder(), tmp_path / "cache.sqlite")
    assert isinstance(cached, Embedder)
    assert cached.model_id == "fake-hash-64"
    assert cached.dimensions == 64
    cached.close()


def test_second_run_embeds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    first_inner = FakeEmbedder()
    first = CachedEmbedder(first_inner, path)
    vectors = first.embed_batch(TEXTS)
    assert first_inner.texts_embedded == 3  # the repeated text is embedded once
    assert (first.hits, first.misses) == (1, 3)
    first.close()

    second_inner = FakeEmbedder()  # a fresh process: only the file carries over
    second = CachedEmbedder(second_inner, path)
    again = second.embed_batch(TEXTS)
    assert second_inner.texts_embedded == 0
    assert second_inner.calls == 0
    assert (second.hits, second.misses) == (4, 0)
    np.testing.assert_array_equal(vectors, again)
    np.testing.assert_array_equal(again, FakeEmbedder().embed_batch(TEXTS))
    second.close()


def test_only_new_texts_reach_the_inner_embedder(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    cached.embed_batch(["one", "two"])
    out = cached.embed_batch(["two", "three", "one"])
    assert inner.texts_embedded == 3
    np.testing.assert_array_equal(out, FakeEmbedder().embed_batch(["two", "three", "one"]))
    assert cached.entries() == 3
    assert cached.embed_batch([]).shape == (0, 64)
    cached.close()


def test_models_do_not_share_vectors(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    CachedEmbedder(FakeEmbedder(64), path).embed_batch(["hello"])
    other_inner = FakeEmbedder(32)
    other = CachedEmbedder(other_inner, path)
    assert other.embed_batch(["hello"]).shape == (1, 32)
    assert other_inner.texts_embedded == 1
    other.close()


def test_a_corrupt_row_is_a_miss_not_a_wrong_vector(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    CachedEmbedder(FakeEmbedder(), path).embed_batch(["hello"])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE embeddings SET vector = x'00000000'")
    inner = FakeEmbedder()
    out = CachedEmbedder(inner, path).embed_batch(["hello"])
    assert inner.texts_embedded == 1
    np.testing.assert_array_equal(out, FakeEmbedder().embed_batch(["hello"]))


def test_default_path_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_path() == tmp_path / "c" / "embeddings.sqlite"
    monkeypatch.delenv("ENGRAM_CACHE_DIR")
    assert default_cache_path() == Path.home() / ".cache" / "engram" / "embeddings.sqlite"
