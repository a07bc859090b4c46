"""An Embedder wrapper that keeps every vector in a small SQLite file, keyed by (model, content).

Evaluation re-indexes the same texts again and again (each question has its own haystack, sessions
recur across questions, and runs repeat while tuning), and embedding dominates the cost of a run, so
persisting vectors between runs turns a repeat run into pure retrieval.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engram.config import cache_dir
from engram.ext import Embedder, Vector
from engram.ingest.normalize import content_hash
from engram.stores.sqlite.wal import use_wal

__all__ = ["CachedEmbedder", "default_cache_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, content_hash)
) WITHOUT ROWID
"""
_CHUNK = 500  # below SQLite's bound-parameter limit with room for the model id


def default_cache_path() -> Path:
    """``$ENGRAM_CACHE_DIR/embeddings.sqlite``, else ``~/.cache/engram/embeddings.sqlite``."""
    return cache_dir() / "embeddings.sqlite"


class CachedEmbedder:
    """Satisfies :class:`engram.ext.Embedder`; only texts never seen by this model reach ``inner``."""

    def __init__(self, inner: Embedder, path: str | os.PathLike[str] | None = None) -> None:
        self.inner = inner
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0)
        # WAL lets two evaluation runs share the cache without "database is locked" on reads.
        use_wal(self._conn)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def similarity_range(self) -> tuple[float, float]:
        """The range ``inner`` declares; none (an AttributeError) when it declares none, so that the
        range is measured from this embedder as it would be from ``inner`` (engram.embedders.scale)."""
        return self.inner.similarity_range  # type: ignore[attr-defined, no-any-return]

    def stats(self) -> dict[str, int | str]:
        return {"path": str(self.path), "hits": self.hits, "misses": self.misses, "entries": self.entries()}

    def entries(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT COUNT(*) FROM embeddings WHERE model_id = ?", (self.model_id,)).fetchone()
        return int(row[0])

    def _lookup(self, digests: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        width = self.dimensions
        for start in range(0, len(digests), _CHUNK):
            chunk = list(digests[start : start + _CHUNK])
            rows = self._conn.execute(
                f"SELECT content_hash, vector FROM embeddings WHERE model_id = ? AND content_hash IN "
                f"({','.join('?' * len(chunk))})",
                [self.model_id, *chunk],
            ).fetchall()
            for digest, blob in rows:
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape == (width,):  # a truncated or foreign row is a miss, never a wrong vector
                    found[digest] = vector
        return found

    def embed_query(self, texts: Sequence[str]) -> Vector:
        """Questions as the model embeds them (not cached: a model may embed questions apart,
        as MiniLM's int8 twin does), or as stored texts when it has no way of its own."""
        embed = getattr(self.inner, "embed_query", None)
        return np.asarray(embed(texts), dtype=np.float32) if callable(embed) else self.embed_batch(texts)

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        digests = [content_hash(text) for text in texts]
        with self._lock:
            known = self._lookup(list(dict.fromkeys(digests)))
        missing: dict[str, str] = {}
        for digest, text in zip(digests, texts, strict=True):
            if digest not in known:
                missing.setdefault(digest, text)
        if missing:
            fresh = np.asarray(self.inner.embed_batch(list(missing.values())), dtype=np.float32)
            if fresh.shape != (len(missing), self.dimensions):
                raise ValueError(f"{self.model_id} returned shape {fresh.shape} for {len(missing)} texts")
            rows = [(self.model_id, d, v.tobytes()) for d, v in zip(missing, fresh, strict=True)]
            with self._lock:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            known.update(zip(missing, fresh, strict=True))
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        for row, digest in enumerate(digests):
            out[row] = known[digest]
        return out

    def close(self) -> None:
        with self._lock:
            self._conn.close()
