"""Concurrent small embedding calls grouped into one model call (a server's query embeddings).

A server embeds one short query per retrieval, from many threads at once. A model call has a fixed
cost beside its per-token one: MiniLM single-threaded took 6.0 ms of CPU for one query alone and
3.5-4.3 ms a query in batches of 4-16. :func:`batching` wraps an embedder so that calls arriving
while the model is busy wait and then go in together, as one batch.

No timer: a call that finds the model idle runs at once with whatever is waiting, so a lone caller
waits for nothing; only while the model is busy do calls gather. Large calls (ingestion) bypass the
queue: a query should not wait behind a thousand documents. Every row is the inner embedder's row
for that text (a test checks MiniLM's batched rows against its single ones).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

import numpy as np

from engram.ext import Embedder, Vector

__all__ = ["MAX_BATCH", "BatchingEmbedder", "batching"]

#: Texts one grouped call embeds at most; a call of more texts than this runs on its own.
MAX_BATCH = 32


class _Call:
    __slots__ = ("error", "lead", "ready", "rows", "texts")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.rows: Vector | None = None
        self.error: BaseException | None = None
        self.lead = False  # woken to run the next batch rather than with its rows
        self.ready = threading.Event()


class _Queue:
    """Calls of one embedding function: the caller that finds it idle runs a batch of everything
    waiting (its own call first), then hands the turn to the oldest call still waiting."""

    def __init__(self, run: Callable[[list[str]], Vector], max_batch: int = MAX_BATCH) -> None:
        self._run = run
        self._max = max_batch
        self._start()

    def _start(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._waiting: list[_Call] = []
        self._busy = False

    def embed(self, texts: Sequence[str]) -> Vector:
        call = _Call(list(texts))
        if len(call.texts) > self._max:
            return self._run(call.texts)
        if self._pid != os.getpid():  # forked while a parent's call ran: it never ends here
            self._start()
        with self._lock:
            self._waiting.append(call)
            lead = not self._busy
            self._busy = True
        if not lead:
            call.ready.wait()
        if call.lead or lead:
            self._lead()
        if call.error is not None:
            raise call.error
        assert call.rows is not None
        return call.rows

    def _lead(self) -> None:
        with self._lock:
            batch: list[_Call] = []
            size = 0
            while self._waiting and (not batch or size + len(self._waiting[0].texts) <= self._max):
                batch.append(self._waiting.pop(0))
                size += len(batch[-1].texts)
        try:
            unique = list(dict.fromkeys(text for call in batch for text in call.texts))
            rows = dict(zip(unique, self._run(unique), strict=True)) if unique else {}
            for call in batch:
                call.rows = np.stack([rows[t] for t in call.texts]) if call.texts else self._run([])
        except BaseException as exc:  # every caller of the batch sees the model's error
            for call in batch:
                call.error = exc
        finally:
            with self._lock:
                if self._waiting:
                    self._waiting[0].lead = True
                    self._waiting[0].ready.set()
                else:
                    self._busy = False
            for call in batch:
                call.ready.set()


class BatchingEmbedder:
    """``inner`` behind a queue that groups concurrent calls; same model id, dimensions and rows."""

    def __init__(self, inner: Embedder, max_batch: int = MAX_BATCH) -> None:
        self.inner = inner
        self._passages = _Queue(inner.embed_batch, max_batch)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def similarity_range(self) -> tuple[float, float]:
        """The range ``inner`` declares; none (an AttributeError) when it declares none, so that the
        range is measured from this embedder as it would be from ``inner`` (engram.embedders.scale)."""
        return self.inner.similarity_range  # type: ignore[attr-defined, no-any-return]

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        return self._passages.embed(texts)


class _AsymmetricBatchingEmbedder(BatchingEmbedder):
    """For a model with its own query encoding (``embed_query``, e.g. E5), queued apart."""

    def __init__(self, inner: Embedder, max_batch: int = MAX_BATCH) -> None:
        super().__init__(inner, max_batch)
        self._queries = _Queue(inner.embed_query, max_batch)  # type: ignore[attr-defined]

    def embed_query(self, texts: Sequence[str]) -> Vector:
        return self._queries.embed(texts)


def batching(inner: Embedder, max_batch: int = MAX_BATCH) -> BatchingEmbedder:
    """``inner`` with concurrent calls grouped; ``embed_query`` kept exactly when ``inner`` has it
    (the pipeline looks for it to tell an asymmetric model)."""
    if callable(getattr(inner, "embed_query", None)):
        return _AsymmetricBatchingEmbedder(inner, max_batch)
    return BatchingEmbedder(inner, max_batch)
