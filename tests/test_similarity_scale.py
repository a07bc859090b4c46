"""An embedder's similarity range: declared, forwarded by wrappers, or measured from the model."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engram import Memory, RetrievalConfig
from engram.embedders import scale
from engram.embedders.batching import batching
from engram.embedders.fake import FakeEmbedder
from engram.embedders.scale import DEFAULT_SIMILARITY_RANGE, declared_range, measure_range, similarity_range
from engram.eval.cached_embedder import CachedEmbedder
from engram.ext import Vector

ACME = "Acme prefers NET30 payment terms."
PLANTS = "The office plants need watering on Fridays."


class Compressed:
    """Hashed words behind a constant direction: every cosine is 0.7 + 0.3 x the hash's, so unrelated
    texts sit at ~0.7, as E5-like models put them, which MiniLM's range reads as a full match."""

    def __init__(self, model_id: str = "compressed-64") -> None:
        self.words = FakeEmbedder(63)
        self.model_id = model_id
        self.dimensions = 64
        self.calls = 0
        self.fail = 0

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        self.calls += 1
        if self.fail:
            self.fail -= 1
            raise RuntimeError("endpoint down")
        hashed = np.asarray(self.words.embed_batch(texts), dtype=np.float32)
        lead = np.full((len(texts), 1), np.sqrt(0.7), dtype=np.float32)
        return np.hstack([lead, np.sqrt(0.3, dtype=np.float32) * hashed])


class Declared(Compressed):
    similarity_range = (0.2, 0.9)


@pytest.fixture(autouse=True)
def _fresh_measurements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale, "_measured", {})
    monkeypatch.setattr(scale, "_pending", {})
    monkeypatch.setattr(scale, "_failed", {})


def test_a_declared_range_is_read_as_declared_and_forwarded_by_wrappers(tmp_path: Path) -> None:
    inner = Declared()
    assert similarity_range(inner) == (0.2, 0.9)
    assert similarity_range(batching(inner)) == (0.2, 0.9)  # what `engram serve` runs
    cached = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    assert similarity_range(cached) == (0.2, 0.9)
    assert inner.calls == 0  # nothing measured
    # A wrapper of a model that declares none declares none either: it is measured like its model.
    assert declared_range(batching(Compressed())) is None
    assert declared_range(CachedEmbedder(Compressed(), tmp_path / "cache2.sqlite")) is None


def test_the_built_in_embedders_declare_theirs() -> None:
    assert declared_range(FakeEmbedder(8)) == DEFAULT_SIMILARITY_RANGE
    from engram.embedders.onnx_minilm import MiniLMEmbedder

    assert MiniLMEmbedder.similarity_range == DEFAULT_SIMILARITY_RANGE


def test_an_undeclared_range_is_measured_once_per_model() -> None:
    embedder = Compressed()
    low, high = similarity_range(embedder)
    # Unrelated questions and answers sit near 0.7 here; the answers a little higher.
    assert 0.70 < low < 0.75 < high < 0.85
    calls = embedder.calls
    assert similarity_range(embedder) == (low, high)
    assert similarity_range(Compressed()) == (low, high)  # same model id: not measured again
    assert embedder.calls == calls
    assert similarity_range(Compressed("another")) == (low, high)  # another id: measured, same result


def test_a_failed_measurement_reads_on_the_default_and_is_tried_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = Compressed()
    embedder.fail = 1
    assert similarity_range(embedder) == DEFAULT_SIMILARITY_RANGE
    calls = embedder.calls
    assert similarity_range(embedder) == DEFAULT_SIMILARITY_RANGE  # not tried again at once
    assert embedder.calls == calls
    monkeypatch.setattr(scale, "RETRY_AFTER", 0.0)
    measured = similarity_range(embedder)
    assert measured != DEFAULT_SIMILARITY_RANGE and measured[0] > 0.7


def test_a_model_that_cannot_tell_answers_apart_is_read_on_the_default() -> None:
    class Constant(Compressed):
        def embed_batch(self, texts: Sequence[str]) -> Vector:
            return np.tile(np.eye(1, 64, dtype=np.float32), (len(texts), 1))

    assert measure_range(Constant()) is None
    assert similarity_range(Constant("constant")) == DEFAULT_SIMILARITY_RANGE


@pytest.mark.parametrize(("embedder", "expected"), [
    (Compressed(), [ACME]),
    # The control: read on a range that puts unrelated texts (0.7) above a clear match, the
    # unrelated memory passes the score floor as a full match of meaning.
    (type("OnMiniLMs", (Compressed,), {"similarity_range": DEFAULT_SIMILARITY_RANGE})(), [ACME, PLANTS]),
])
def test_the_measured_range_lets_the_floor_drop_the_unrelated(
    tmp_path: Path, embedder: Compressed, expected: list[str]
) -> None:
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"user_id": "u", "content": ACME, "kind": "fact"},
                         {"user_id": "u", "content": PLANTS, "kind": "fact"}])
        found = [m.content for m in memory.retrieve("How does Acme pay its invoices?", user_id="u").memories]
        assert sorted(found) == sorted(expected)


def test_the_default_model_measures_inside_the_range_its_figures_hold_on() -> None:
    from engram.embedders import default_embedder

    low, high = measure_range(default_embedder()) or (0.0, 0.0)
    # The development sets are flat for MiniLM across bottoms 0.10-0.15 and tops 0.65-0.81.
    assert 0.10 <= low <= 0.16 and 0.65 <= high <= 0.83


def test_a_slow_measurement_holds_no_retrieval_past_its_deadline(tmp_path: Path) -> None:
    # A model behind an endpoint that hangs: the first retrieval reads on the default range at
    # its deadline, and the measurement, going on, serves the ones after it.
    gate = threading.Event()

    class Hanging(Compressed):
        def embed_batch(self, texts: Sequence[str]) -> Vector:
            if len(texts) == len(scale.PAIRS):  # the measurement's batches
                gate.wait(30)
            return super().embed_batch(texts)

    embedder = Hanging("hanging-64")
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"user_id": "u", "content": ACME, "kind": "fact"},
                         {"user_id": "u", "content": PLANTS, "kind": "fact"}])
        config = RetrievalConfig(timeout_ms=300, cache_ttl=0)
        started = time.perf_counter()
        first = memory.retrieve("How does Acme pay its invoices?", user_id="u", config=config)
        assert time.perf_counter() - started < 5
        assert sorted(m.content for m in first.memories) == sorted([ACME, PLANTS])  # the default's reading
        assert "similarity_range" in first.metadata.cut_stages  # a partial answer, so never cached
        gate.set()
        deadline = time.perf_counter() + 20
        while declared_range(embedder) is None and ("hanging-64", 64) not in scale._measured:
            assert time.perf_counter() < deadline
            time.sleep(0.01)
        later = memory.retrieve("How does Acme pay its invoices?", user_id="u", config=config)
        assert [m.content for m in later.memories] == [ACME]


def test_a_measurement_failing_during_a_retrieval_holds_it_no_longer_and_is_not_cached(tmp_path: Path) -> None:
    class SlowlyFailing(Compressed):
        def embed_batch(self, texts: Sequence[str]) -> Vector:
            if len(texts) == len(scale.PAIRS):
                time.sleep(0.1)
                raise RuntimeError("413 batch too large")
            return super().embed_batch(texts)

    embedder = SlowlyFailing("failing-64")
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"user_id": "u", "content": ACME, "kind": "fact"}])
        config = RetrievalConfig(timeout_ms=2000, cache_ttl=60)
        started = time.perf_counter()
        first = memory.retrieve("How does Acme pay its invoices?", user_id="u", config=config)
        assert time.perf_counter() - started < 2.5
        assert "similarity_range" in first.metadata.cut_stages
        again = memory.retrieve("How does Acme pay its invoices?", user_id="u", config=config)
        assert not again.metadata.cached  # the partial answer was not kept
        calls = embedder.calls
        memory.retrieve("What does Acme pay?", user_id="u", config=config)
        assert embedder.calls == calls + 1  # the query only: no measurement until RETRY_AFTER


def test_a_caller_without_a_deadline_waits_a_bounded_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # recall() and a retrieval with no deadline wait FIRST_WAIT for a measurement, then read on the default.
    monkeypatch.setattr(scale, "FIRST_WAIT", 0.2)
    gate = threading.Event()

    class Hanging(Compressed):
        def embed_batch(self, texts: Sequence[str]) -> Vector:
            if len(texts) == len(scale.PAIRS):
                gate.wait(30)
            return super().embed_batch(texts)

    try:
        started = time.perf_counter()
        assert similarity_range(Hanging("hanging-recall")) == DEFAULT_SIMILARITY_RANGE
        assert time.perf_counter() - started < 5
        with Memory(tmp_path / "m.db", embedder=Hanging("hanging-nodeadline")) as memory:
            memory.add_many([{"user_id": "u", "content": ACME, "kind": "fact"}])
            started = time.perf_counter()
            found = memory.retrieve("How does Acme pay?", user_id="u", config=RetrievalConfig(timeout_ms=None))
            assert time.perf_counter() - started < 5
            assert "similarity_range" in found.metadata.cut_stages
    finally:
        gate.set()
