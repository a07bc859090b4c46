"""Vectors of parts of a memory, stored beside its own: today the user's standing sentences.

A message's vector reads its first 256 tokens as one meaning. "Here is my config file ... and please
keep every example in Rust's standard library" has a meaning of config files; the instruction inside
it is what a later "show me how to parse arguments" must bring back. Each such sentence
(:func:`engram.retrieve.standing.standing_sentences`) is embedded on its own, in the same batch as
the memories, and stored with the memory (``Store.put_many(..., facets=...)``): it is written,
replaced and erased with its row. Retrieval reads them only for requests (see
:mod:`engram.retrieve.rank`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engram.ext import Embedder, Vector
from engram.ingest.embed import embed_texts
from engram.model import MemoryRecord
from engram.retrieve.standing import standing_sentences
from engram.text import speaker_name

__all__ = ["embed_facets", "facet_texts"]


def facet_texts(record: MemoryRecord) -> list[str]:
    """What each of ``record``'s facet vectors encodes, behind its speaker's name as the memory's own
    vector is (:func:`engram.ingest.embed.embedding_text`)."""
    name = speaker_name(record.role)
    return [f"{name}: {s}" if name else s for s in standing_sentences(record)]


def embed_facets(embedder: Embedder, records: Sequence[MemoryRecord]) -> dict[str, Vector]:
    """Each record's facet vectors (one row per part) by id; records without parts are left out.
    The same sentence in one batch is embedded once."""
    parts = {r.id: texts for r in records if (texts := facet_texts(r))}
    if not parts:
        return {}
    unique = list(dict.fromkeys(t for texts in parts.values() for t in texts))
    rows = dict(zip(unique, embed_texts(embedder, unique), strict=True))
    return {memory_id: np.stack([rows[t] for t in texts]) for memory_id, texts in parts.items()}
