"""engram.embedders.batching: concurrent calls grouped into one model call, each caller given the
inner embedder's own rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from engram.embedders.batching import BatchingEmbedder, batching
from engram.embedders.fake import FakeEmbedder
from engram.ext import Embedder, Vector
from engram.memory import Memory
from engram.service.auth import KeyStore
from engram.service.workers import build_app, server_embedder

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)


class Gated(FakeEmbedder):
    """FakeEmbedder rows; each call recorded, and every call held until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(8)
        self.batches: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = False

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        self.batches.append(list(texts))
        self.entered.set()
        self.release.wait(10)
        if self.fail:
            raise RuntimeError("model broke")
        return super().embed_batch(texts)


def _run_while_busy(embedder: BatchingEmbedder, gated: Gated, texts: list[list[str]]) -> list[object]:
    """One call occupies the model; ``texts`` arrive meanwhile; then the model is let go."""
    out: list[object] = [None] * (len(texts) + 1)

    def call(i: int, batch: list[str]) -> None:
        try:
            out[i] = embedder.embed_batch(batch)
        except RuntimeError as exc:
            out[i] = exc

    first = threading.Thread(target=call, args=(0, ["first"]))
    first.start()
    assert gated.entered.wait(10)
    waiting = [threading.Thread(target=call, args=(i + 1, t)) for i, t in enumerate(texts)]
    for thread in waiting:
        thread.start()
    for _ in range(500):  # every waiting call queued (none can finish while the model is held)
        if len(embedder._passages._waiting) == len(texts):
            break
        time.sleep(0.01)
    gated.release.set()
    for thread in [first, *waiting]:
        thread.join(10)
    return out


def test_calls_arriving_while_the_model_is_busy_go_in_one_batch() -> None:
    gated = Gated()
    embedder = batching(gated)
    texts = [["b"], ["c", "d"], ["b"], ["e"]]
    out = _run_while_busy(embedder, gated, texts)
    # The first call alone, then one call for everything that queued, each text embedded once.
    assert gated.batches[0] == ["first"]
    assert len(gated.batches) == 2 and sorted(gated.batches[1]) == ["b", "c", "d", "e"]
    reference = FakeEmbedder(8)
    for rows, batch in zip(out, [["first"], *texts], strict=True):
        assert isinstance(rows, np.ndarray)
        assert np.array_equal(rows, reference.embed_batch(batch))


def test_a_model_error_reaches_every_caller_of_its_batch() -> None:
    gated = Gated()
    gated.fail = True
    embedder = batching(gated)
    out = _run_while_busy(embedder, gated, [["x"], ["y"]])
    assert all(isinstance(result, RuntimeError) for result in out)
    gated.fail = False  # and the queue is free again afterwards
    assert np.array_equal(embedder.embed_batch(["z"]), FakeEmbedder(8).embed_batch(["z"]))


def test_a_lone_call_and_a_large_call_run_at_once() -> None:
    gated = Gated()
    gated.release.set()
    embedder = batching(gated, max_batch=4)
    embedder.embed_batch(["one"])
    embedder.embed_batch([f"t{i}" for i in range(10)])
    assert gated.batches == [["one"], [f"t{i}" for i in range(10)]]
    assert embedder.embed_batch([]).shape == (0, 8)
    assert embedder.model_id == gated.model_id and embedder.dimensions == 8


class Asymmetric(FakeEmbedder):
    def embed_query(self, texts: Sequence[str]) -> Vector:
        return self.embed_batch([f"query: {t}" for t in texts])


def test_embed_query_is_kept_exactly_when_the_model_has_one() -> None:
    assert not hasattr(batching(FakeEmbedder(8)), "embed_query")
    wrapped = batching(Asymmetric(8))
    assert np.array_equal(wrapped.embed_query(["hi"]), Asymmetric(8).embed_query(["hi"]))  # type: ignore[attr-defined]
    assert np.array_equal(wrapped.embed_batch(["hi"]), FakeEmbedder(8).embed_batch(["hi"]))


def test_minilm_rows_are_the_same_batched_as_alone(embedder: Embedder) -> None:
    texts = ["x", "What did Acme Corp order last month?", "Is the decaf invoice for Harbor Hotel overdue?",
             "a much longer question about what Acme ordered last month and whether the invoice was paid on time"]
    alone = np.stack([embedder.embed_batch([t])[0] for t in texts])
    assert np.array_equal(embedder.embed_batch(texts), alone)


def test_the_server_embedder_is_minilm_batched_on_one_thread() -> None:
    made = server_embedder(None)
    assert isinstance(made, BatchingEmbedder)
    assert made.model_id == "all-MiniLM-L6-v2-onnx-int8" and made.dimensions == 384
    inner = made.inner
    for kind in ("texts", "queries"):  # the model and its question twin alike
        assert inner._session(kind).get_session_options().intra_op_num_threads == 1  # type: ignore[attr-defined]
    hashed = server_embedder("hash-16")
    assert isinstance(hashed, BatchingEmbedder) and hashed.dimensions == 16


def test_a_built_server_answers_what_memory_retrieve_answers(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
        expected = memory.retrieve("payment terms", user_id="u1", now=NOW).to_dict()["memories"]
    keys = KeyStore(db)
    token = keys.create(["u1"])[1]
    keys.close()
    app, close = build_app(str(db), "hash-16", 100.0, 200.0, 1 << 20, limiter_path=None)
    try:
        with TestClient(app) as client:
            answer = client.post("/v1/retrieve", headers={"Authorization": f"Bearer {token}"},
                                 json={"userId": "u1", "message": "payment terms", "now": NOW.isoformat()})
        assert answer.status_code == 200
        got = answer.json()["memories"]
        assert [m["id"] for m in got] == [m["id"] for m in expected] and got
    finally:
        close()


def test_a_built_servers_concurrent_queries_meet_in_one_model_call(tmp_path: Path) -> None:
    db = tmp_path / "svc.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    app, close = build_app(str(db), "hash-16", 100.0, 200.0, 1 << 20, limiter_path=None)
    try:
        memory = app.state.service.memory
        queue = memory.embedder._passages
        sizes: list[int] = []
        model: Callable[[list[str]], Vector] = queue._run

        def slow(texts: list[str]) -> Vector:
            sizes.append(len(texts))
            time.sleep(0.2)  # the model busy while the other retrievals arrive
            return model(texts)

        queue._run = slow
        threads = [threading.Thread(target=memory.retrieve, args=(f"payment terms {i}",), kwargs={"user_id": "u1"})
                   for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # The library's two-thread executor let at most two queries wait for the model at once.
        assert sum(sizes) == 8 and max(sizes) >= 4
    finally:
        close()


def test_minilm_chunks_run_at_once_keep_every_row_in_its_place() -> None:
    from engram.embedders.onnx_minilm import BATCH_SIZE, MiniLMEmbedder

    two = MiniLMEmbedder(threads=2)
    assert two._session("texts").get_session_options().intra_op_num_threads == 1
    texts = [f"note {i}: " + "coffee order " * (i % 40) for i in range(3 * BATCH_SIZE + 5)]
    batched = two.embed_batch(texts)
    for i in (0, 1, BATCH_SIZE, 2 * BATCH_SIZE + 7, len(texts) - 1):
        assert np.array_equal(batched[i], two.embed_batch([texts[i]])[0]), i


def test_a_failed_run_among_chunks_run_at_once_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    from engram.embedders.onnx_minilm import BATCH_SIZE, MiniLMEmbedder

    two = MiniLMEmbedder(threads=2)
    real = two._run
    calls: list[int] = []

    def second_fails(session: object, ids: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls.append(len(ids))
        if len(calls) == 2:
            raise RuntimeError("model failed")
        return real(session, ids, mask)

    monkeypatch.setattr(two, "_run", second_fails)
    with pytest.raises(RuntimeError, match="model failed"):
        two.embed_batch([f"text {i}" for i in range(2 * BATCH_SIZE)])
