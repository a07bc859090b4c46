"""Embed records in batches, reusing any vector the store already holds for the same content."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engram.errors import EmbedderError
from engram.ext import Embedder, Store, Vector
from engram.model import MemoryRecord

__all__ = ["embed_records", "embed_texts"]


def embed_texts(embedder: Embedder, texts: Sequence[str], *, as_query: bool = False) -> Vector:
    """Embed and check the shape, so a faulty plugin fails here rather than inside the store.

    Asymmetric models (E5: ``query:`` vs ``passage:``) may offer ``embed_query``; queries use it.
    """
    embed = getattr(embedder, "embed_query", None) if as_query else None
    vectors = np.asarray((embed or embedder.embed_batch)(list(texts)), dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dimensions):
        raise EmbedderError(
            f"{embedder.model_id} returned shape {vectors.shape}, expected ({len(texts)}, {embedder.dimensions})"
        )
    return vectors


def embed_records(embedder: Embedder, store: Store, records: Sequence[MemoryRecord]) -> Vector:
    """One row per record; identical content is embedded once, and never if already stored."""
    out = np.zeros((len(records), embedder.dimensions), dtype=np.float32)
    if not records:
        return out
    hashes = [r.content_hash for r in records]
    known = store.cached_vectors(embedder.model_id, hashes)
    missing: dict[str, str] = {}
    for record in records:
        if record.content_hash not in known and record.content_hash not in missing:
            missing[record.content_hash] = record.content
    if missing:
        fresh = embed_texts(embedder, list(missing.values()))
        known.update(zip(missing.keys(), fresh, strict=True))
    for row, digest in enumerate(hashes):
        out[row] = known[digest]
    return out
