"""Vectors of parts of a memory, stored beside its own: today the user's standing sentences.

A message's vector reads its first 256 tokens as one meaning. "Here is my config file ... and please
keep every example in Rust's standard library" has a meaning of config files; the instruction inside
it is what a later "show me how to parse arguments" must bring back. Each such sentence
(:func:`engram.retrieve.standing.standing_sentences`) is embedded on its own, in the same batch as
the memories, and stored with the memory (``Store.put_many(..., facets=...)``): it is written,
replaced and erased with its row. A memory that brought its own vector (an import) is not embedded
here either: ``engram upgrade`` derives its facets when an embedder may run. Retrieval reads them
only for requests (see :mod:`engram.retrieve.rank`).
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


def embed_facets(
    embedder: Embedder, records: Sequence[MemoryRecord], wanted: Sequence[bool] | None = None,
) -> list[Vector | None]:
    """Each record's facet vectors (one row per part), in the records' order: None for a record
    without parts or not ``wanted``. The same sentence in one batch is embedded once."""
    parts = [facet_texts(r) if wanted is None or wanted[at] else [] for at, r in enumerate(records)]
    unique = list(dict.fromkeys(t for texts in parts for t in texts))
    if not unique:
        return [None] * len(records)
    rows = dict(zip(unique, embed_texts(embedder, unique), strict=True))
    return [np.stack([rows[t] for t in texts]) if texts else None for texts in parts]
