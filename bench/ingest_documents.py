"""Document ingest throughput against the raw embedder's own throughput on the same texts.

    python bench/ingest_documents.py [--files 1000] [--repeat 2] [--out results.json]

Generates small Markdown files in a temp dir, works out exactly the texts ingest will embed (each
document and its chunks, deduplicated the way the embedding cache does), times
``embedder.embed_batch`` on them, then times ``ingest`` of the directory into a fresh store
(discovery, reading, chunking, version lookups, embedding, writes and part_of links included).
Runs alternate so drift in a shared machine's speed hits both sides alike; the best of each is kept,
and each round's paired ratio is reported too. A last ingest with a zero-cost embedder measures
everything ingest does besides embedding, which bounds the ratio independently of machine noise.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engram import Memory
from engram.embedders import default_embedder
from engram.ext import Embedder, Vector
from engram.ingest.files import chunk_spans, discover, ingest, read_document

WORDS = [
    "memory", "retrieval", "agent", "vector", "index", "chunk", "paragraph", "version", "document", "ingest",
    "store", "query", "embed", "latency", "budget", "cache", "user", "session", "topic", "tag", "filter", "score",
    "rank", "recall", "policy", "prompt", "token", "model", "thalamus", "cortex", "signal", "weight", "fusion",
    "keyword", "semantic", "temporal", "entity", "summary", "fact", "procedure",
]


class NullEmbedder:
    """Costs nothing, so an ingest with it times only the work that is not embedding."""

    model_id = "null-384"
    dimensions = 384

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def write_corpus(folder: Path, count: int, seed: int) -> None:
    """Small notes of 200-900 characters: a heading and a few short paragraphs."""
    rng = random.Random(seed)
    for i in range(count):
        paragraphs = []
        for _ in range(rng.randint(1, 4)):
            sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14))).capitalize() + "."
                         for _ in range(rng.randint(1, 3))]
            paragraphs.append(" ".join(sentences))
        sub = folder / f"topic{i % 10}"
        sub.mkdir(exist_ok=True)
        (sub / f"note_{i:04}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(paragraphs), encoding="utf-8")


def texts_ingest_embeds(folder: Path) -> list[str]:
    files, _ = discover([folder])
    unique: dict[str, None] = {}
    for path in files:
        text = read_document(path, 200_000)
        unique[text] = None
        unique.update((text[s:e], None) for s, e in chunk_spans(text))
    return list(unique)


def time_raw(embedder: Embedder, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed_batch(texts[start : start + batch])
    return time.perf_counter() - started


def time_ingest(embedder: Embedder, folder: Path, db: Path) -> tuple[float, dict[str, int]]:
    with Memory(db, embedder=embedder) as memory:
        memory.embedder  # noqa: B018 - bind the store before the clock starts, as raw needs no binding
        started = time.perf_counter()
        report = ingest(memory, [folder], user_id="bench", tags=["bench"])
        return time.perf_counter() - started, report.counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=None, help="Also write the JSON report here.")
    args = parser.parse_args()
    embedder = default_embedder()
    embedder.embed_batch(["warm up"] * 8)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        write_corpus(folder, args.files, args.seed)
        texts = texts_ingest_embeds(folder)
        raw_256, raw_one, ingest_s = [], [], []
        counts: dict[str, int] = {}
        for run in range(args.repeat):
            raw_256.append(time_raw(embedder, texts, 256))  # add_many embeds 256 records at a time
            raw_one.append(time_raw(embedder, texts, len(texts)))
            seconds, counts = time_ingest(embedder, folder, Path(tmp) / f"run{run}.db")
            ingest_s.append(seconds)
        overhead_s, _ = time_ingest(NullEmbedder(), folder, Path(tmp) / "null.db")
    raw = min(min(raw_256), min(raw_one))
    report = {
        "files": args.files,
        "texts_embedded": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
        "raw_embed_per_s_batch256": round(len(texts) / min(raw_256), 1),
        "raw_embed_per_s_one_call": round(len(texts) / min(raw_one), 1),
        "ingest_files_per_s": round(args.files / min(ingest_s), 1),
        "ingest_texts_per_s": round(len(texts) / min(ingest_s), 1),
        "ratio_vs_best_raw": round(raw / min(ingest_s), 3),
        "paired_ratios_vs_batch256": [round(r / i, 3) for r, i in zip(raw_256, ingest_s, strict=True)],
        "paired_ratios_vs_one_call": [round(r / i, 3) for r, i in zip(raw_one, ingest_s, strict=True)],
        "non_embedding_overhead_s": round(overhead_s, 3),
        "ratio_bound_from_overhead": round(raw / (raw + overhead_s), 3),
        "runs_s": {"raw_batch256": raw_256, "raw_one_call": raw_one, "ingest": ingest_s},
        "statuses": counts,
    }
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
