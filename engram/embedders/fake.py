"""A deterministic hashing embedder, for unit tests of ranking arithmetic only.

It knows nothing of meaning: words hash to fixed random directions, so texts that share words are
similar. Never a default, never used to judge retrieval quality.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence

import numpy as np

from engram.embedders.scale import DEFAULT_SIMILARITY_RANGE
from engram.ext import Vector

__all__ = ["FakeEmbedder"]

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    #: Hashed words have no scale of meaning to measure; the arithmetic that tests pin reads them on
    #: the default one.
    similarity_range = DEFAULT_SIMILARITY_RANGE

    def __init__(self, dimensions: int = 64) -> None:
        self._dimensions = dimensions
        self.calls = 0
        self.texts_embedded = 0

    @property
    def model_id(self) -> str:
        return f"fake-hash-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - instances are few and long-lived
    def _word_vector(self, word: str) -> Vector:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self._dimensions).astype(np.float32)

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                out[row] += self._word_vector(word)
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out
