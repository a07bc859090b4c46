"""Embedders: the default offline MiniLM, an OpenAI-compatible HTTP one, and a test-only fake."""

from __future__ import annotations

import threading

from engram.ext import Embedder

__all__ = ["default_embedder"]

_default: list[Embedder] = []
_lock = threading.Lock()


def default_embedder() -> Embedder:
    """The process-wide MiniLM embedder, loaded once (loading costs about half a second)."""
    with _lock:
        if not _default:
            from engram.embedders.onnx_minilm import MiniLMEmbedder

            _default.append(MiniLMEmbedder())
        return _default[0]
