"""add_many throughput against the raw embedder's own throughput, same texts, same run.

    python bench/ingest.py [--n 1000] [--long] [--whole]

Uses the real default embedder (MiniLM int8 ONNX). Each measurement embeds fresh texts so the
embedding cache cannot flatter the store. ``--long`` writes long messages instead (about 2,100
characters each, the mean of a technical assistant's chats: ~500 tokens, past the model's 256);
``--whole`` reads each text whole, in overlapping windows (``MiniLMEmbedder(whole=True)``), for
both the embedder alone and ``add_many``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import memories

from engram import Memory
from engram.embedders import default_embedder

#: Corpus memories joined into one long message (~2,100 characters).
LONG_JOIN = 24


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--out", default="bench/results/ingest.json")
    parser.add_argument("--long", action="store_true", help="messages of ~2,100 characters")
    parser.add_argument("--whole", action="store_true", help="embed long texts whole, in windows")
    args = parser.parse_args()
    if args.whole:
        from engram.embedders.onnx_minilm import MiniLMEmbedder

        embedder: Any = MiniLMEmbedder(whole=True)
    else:
        embedder = default_embedder()
    embedder.embed_batch(["warm up"])
    items = list(memories(args.n * 2 * (LONG_JOIN if args.long else 1), seed=11))
    if args.long:
        items = [{**items[i], "content": " ".join(str(x["content"]) for x in items[i : i + LONG_JOIN])}
                 for i in range(0, len(items), LONG_JOIN)]
    raw_texts = [str(i["content"]) + " (raw)" for i in items[: args.n]]
    store_items = items[args.n :]

    started = time.perf_counter()
    for start in range(0, len(raw_texts), 256):
        embedder.embed_batch(raw_texts[start : start + 256])
    raw_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "ingest.db", embedder=embedder) as memory:
        started = time.perf_counter()
        memory.add_many(store_items)
        add_s = time.perf_counter() - started
    report = {
        "texts": args.n,
        "mean_chars": round(sum(len(str(i["content"])) for i in store_items) / len(store_items)),
        "whole": args.whole,
        "embedder_per_s": round(args.n / raw_s, 1),
        "add_many_per_s": round(len(store_items) / add_s, 1),
        "ratio": round((len(store_items) / add_s) / (args.n / raw_s), 3),
    }
    print(json.dumps(report))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
