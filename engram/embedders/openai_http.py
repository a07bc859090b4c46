"""An embedder for any OpenAI-compatible ``/embeddings`` endpoint, for users who want a larger model.

Uses only the standard library so the default install stays small. The API key is read from the
environment (``OPENAI_API_KEY`` unless another variable is named), never from code.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence

import numpy as np

from engram.errors import EmbedderError
from engram.ext import Vector

__all__ = ["OpenAIHTTPEmbedder"]


class OpenAIHTTPEmbedder:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimensions: int,
        api_key_env: str = "OPENAI_API_KEY",
        batch_size: int = 128,
        timeout: float = 30.0,
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dimensions = dimensions
        self._api_key = os.environ.get(api_key_env, "")
        self._batch_size = batch_size
        self._timeout = timeout

    @property
    def model_id(self) -> str:
        return f"openai-http:{self._model}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _post(self, texts: Sequence[str]) -> list[list[float]]:
        body = json.dumps({"model": self._model, "input": list(texts)}).encode()
        request = urllib.request.Request(self._url, data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        if self._api_key:
            request.add_header("Authorization", f"Bearer {self._api_key}")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                payload = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise EmbedderError(f"embedding request to {self._url} failed: {exc}") from exc
        try:
            rows = sorted(payload["data"], key=lambda item: item["index"])
            return [list(map(float, row["embedding"])) for row in rows]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"unexpected embedding response from {self._url}") from exc

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            rows = self._post(texts[start : start + self._batch_size])
            block = np.asarray(rows, dtype=np.float32)
            if block.shape != (min(self._batch_size, len(texts) - start), self._dimensions):
                raise EmbedderError(f"expected {self._dimensions}-dimensional rows, got {block.shape}")
            norms = np.linalg.norm(block, axis=1, keepdims=True)
            out[start : start + len(rows)] = block / np.maximum(norms, 1e-12)
        return out
