"""One user with a million memories: retrieve latency and the vector source's recall against a
numpy exact scan of the same vectors, in the same run.

    python bench/million.py [--n 1000000] [--db /tmp/ann-1m/million.db] [--rounds 200]

Building the store is resumable: a store holding the first k memories of the corpus gets the
rest (``bench/corpus.py`` yields the same prefix for every n, so a copy of the 100k store of
``bench/retrieve_latency.py`` is a head start). Vectors come from the hashing FakeEmbedder, as in
``bench/retrieve_latency.py``; the query's embedding time is excluded from the figures.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported: see retrieve_latency.py

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import memories

from engram import Memory
from engram.embedders.fake import FakeEmbedder

USER = "bench"


def fill(memory: Memory, n: int) -> float:
    """Add the corpus's memories beyond those the store already holds; seconds taken."""
    held = memory.store.count(USER)
    started = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for i, item in enumerate(itertools.islice(memories(n, user_id=USER), held, None), start=held):
        batch.append(item)
        if len(batch) == 5000:
            memory.add_many(batch)
            batch = []
            if (i + 1) % 50_000 == 0:
                print(json.dumps({"filled": i + 1, "s": round(time.perf_counter() - started, 1)}), flush=True)
    if batch:
        memory.add_many(batch)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, default=Path("/tmp/ann-1m/million.db"))
    parser.add_argument("--fill-only", action="store_true")
    args = parser.parse_args()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    memory = Memory(args.db, embedder=FakeEmbedder(384))
    try:
        fill_s = fill(memory, args.n)
        print(json.dumps({"fill_s": round(fill_s, 1), "held": memory.store.count(USER)}), flush=True)
    finally:
        memory.close()


if __name__ == "__main__":
    main()
