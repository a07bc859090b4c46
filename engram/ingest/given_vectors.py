"""Vectors a caller already has: an import from another system hands them over instead of paying
for the embedding again.

An item of ``add_many`` may carry ``vector`` (one number per dimension) with ``embedding_model``,
the model that made it. Both are checked against the store's embedder before anything is written:
the model must be the embedder's own (:attr:`Embedder.model_id`: vectors of another model live in
another space, and ranking would compare them with the query's as if they did not), the length its
dimensions, every number finite. The vector is stored at unit length, as the embedder's are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from engram.errors import ValidationError
from engram.ext import Embedder, Vector

__all__ = ["VECTOR_FIELDS", "take_vector"]

#: The fields of an item that carry a vector; what is left is the memory itself.
VECTOR_FIELDS = ("vector", "embedding_model")


def take_vector(item: Mapping[str, Any], embedder: Embedder) -> tuple[Mapping[str, Any], Vector | None]:
    """``item`` without its vector fields, and its checked vector (None when it brings none)."""
    if not any(name in item for name in VECTOR_FIELDS):
        return item, None
    rest = {key: value for key, value in item.items() if key not in VECTOR_FIELDS}
    given, model = item.get("vector"), item.get("embedding_model")
    if given is None:
        raise ValidationError("vector", "missing: embedding_model names the model of a vector the item does not carry")
    if not isinstance(model, str) or not model:
        raise ValidationError("embedding_model", "required with a vector: the id of the model that made it")
    if model != embedder.model_id:
        raise ValidationError(
            "embedding_model",
            f"{model!r} made this vector, but this store embeds with {embedder.model_id!r}: vectors of "
            "another model cannot be compared with its queries; leave the vector out to have it embedded",
        )
    if isinstance(given, (str, bytes)) or not hasattr(given, "__len__"):
        raise ValidationError("vector", f"must be a list of {embedder.dimensions} numbers")
    if len(given) != embedder.dimensions:
        raise ValidationError("vector", f"{len(given)} numbers; {embedder.model_id} makes {embedder.dimensions}")
    try:
        vector = np.asarray(given, dtype=np.float64).reshape(embedder.dimensions)
    except (TypeError, ValueError):
        raise ValidationError("vector", f"must be a list of {embedder.dimensions} numbers") from None
    if not np.isfinite(vector).all():
        raise ValidationError("vector", "every number must be finite (no NaN or infinity)")
    norm = float(np.linalg.norm(vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise ValidationError("vector", "has no direction (all zeros or too large to measure)")
    return rest, (vector / norm).astype(np.float32)
