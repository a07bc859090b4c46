"""Embed records in batches, reusing any vector the store already holds for the same content."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engram.errors import EmbedderError
from engram.ext import Embedder, Store, Vector
from engram.ingest.normalize import content_hash
from engram.model import MemoryRecord
from engram.text import speaker_name

__all__ = ["embed_records", "embed_texts", "embedding_text", "unit_rows"]


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
    return unit_rows(vectors, embedder.model_id)


def unit_rows(vectors: Vector, model_id: str) -> Vector:
    """``vectors`` with every row made unit length (a row of zeros, which has no direction, is kept).

    Ranking reads a dot product as the cosine, SQLite's vector search ranks by dot product and
    PostgreSQL's by cosine distance: a plugin returning rows of other lengths (sentence-transformers
    does unless asked to normalize) would have long texts outrank close ones on SQLite alone.
    """
    if not np.isfinite(vectors).all():
        raise EmbedderError(f"{model_id} returned a vector holding NaN or infinity")
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
    if np.all(np.abs(norms - 1.0) < 1e-4):
        return vectors
    return np.asarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def embedding_text(record: MemoryRecord) -> str:
    """What a memory's vector encodes: its content, behind its speaker's name when a person said it.

    "Priya: I think the trial went well" lets "What did Priya think of the trial?" find a message
    that never names its speaker (on conversational data this doubles dense recall).
    """
    name = speaker_name(record.role)
    return f"{name}: {record.content}" if name else record.content


def embed_records(
    embedder: Embedder, store: Store, records: Sequence[MemoryRecord],
    given: Mapping[tuple[str, str], Vector] | None = None,
) -> Vector:
    """One row per record; identical text is embedded once, and a user's content already stored is
    not embedded again (never reused across users: how fast an add is must not tell whether someone
    else stored the same text). ``given`` holds vectors the caller brought, already checked
    (:mod:`engram.ingest.given_vectors`), by (user id, record id): those records are not embedded."""
    out = np.zeros((len(records), embedder.dimensions), dtype=np.float32)
    if given:
        rest = []
        for row, record in enumerate(records):
            if (record.user_id, record.id) in given:
                out[row] = given[record.user_id, record.id]
            else:
                rest.append(row)
        if rest:
            out[rest] = embed_records(embedder, store, [records[row] for row in rest])
        return out
    if not records:
        return out
    texts = [embedding_text(r) for r in records]
    keys: list[str] = []
    reusable: dict[str, list[str]] = {}
    for record, text in zip(records, texts, strict=True):
        if text == record.content:
            keys.append(f"{record.user_id}\x00{record.content_hash}")
            reusable.setdefault(record.user_id, []).append(record.content_hash)
        else:  # the store finds vectors by content hash, which a speaker's prefix does not match
            keys.append("text:" + content_hash(text))
    known: dict[str, Vector] = {}
    for user_id, hashes in reusable.items():
        for digest, vector in store.cached_vectors(user_id, embedder.model_id, hashes).items():
            known[f"{user_id}\x00{digest}"] = vector
    # One batch is one caller's: the same text in it is embedded once, whoever it belongs to.
    missing = list(dict.fromkeys(text for key, text in zip(keys, texts, strict=True) if key not in known))
    fresh = dict(zip(missing, embed_texts(embedder, missing), strict=True)) if missing else {}
    for row, (key, text) in enumerate(zip(keys, texts, strict=True)):
        out[row] = known[key] if key in known else fresh[text]
    return unit_rows(out, embedder.model_id) if known else out  # a reused vector from before rows were made unit
