"""What the query's embedding adds to a warm retrieval: the default MiniLM against the hashing embedder.

Two stores of the same corpus (``bench/corpus.py``) for one user, one embedded with MiniLM (the
default) and one with ``hash-384`` (no model: its embedding costs nothing). Each round asks both
the same question in turn, alternating which goes first, so both meet the same moments of a shared
machine; the figure that counts is the ratio of their latencies within the run, reported with the
load average. Latency here includes the query's embedding (what a user waits for); the embed
stage's own time is reported beside it.

    python bench/query_embedding.py [--memories 10000] [--rounds 400] [--db-dir DIR]

Each query is made unique (a number appended) so no cache answers it: not the result cache
(``cache_ttl=0`` as well) and not an embedding cache.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as bench/retrieve_latency.py: before numpy

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import NOW, QUERIES
from retrieve_latency import USER, fill, percentile

from engram import Memory, RetrievalConfig
from engram.embedders import default_embedder
from engram.embedders.fake import FakeEmbedder


def open_store(path: Path, embedder: Any, n: int) -> Memory:
    memory = Memory(path, embedder=embedder)
    held = memory.store.count(USER)
    if held not in (0, n):
        raise SystemExit(f"{path} holds {held} memories of {USER!r}; remove it first")
    if held == 0:
        print(f"filled {path.name} in {fill(memory, n):.1f} s", file=sys.stderr)
    return memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--db-dir", type=Path, help="keep (and reuse) the two SQLite files here")
    parser.add_argument("--out", default="bench/results/query_embedding.json")
    args = parser.parse_args()
    workdir = args.db_dir or Path(tempfile.mkdtemp(prefix="engram-qe-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stores = {
        "minilm": open_store(workdir / f"minilm-{args.memories}.db", default_embedder(), args.memories),
        "hash-384": open_store(workdir / f"hash-{args.memories}.db", FakeEmbedder(384), args.memories),
    }
    config = RetrievalConfig(cache_ttl=0)
    for memory in stores.values():  # warm: the model, each user's vector and keyword indexes
        for query in QUERIES:
            memory.retrieve(query, user_id=USER, now=NOW, config=config)
    totals: dict[str, list[float]] = {name: [] for name in stores}
    embeds: dict[str, list[float]] = {name: [] for name in stores}
    load = os.getloadavg()[0]
    for i in range(args.rounds):
        query = f"{QUERIES[i % len(QUERIES)]} ({i})"
        names = list(stores) if i % 2 == 0 else list(reversed(stores))
        for name in names:
            started = time.perf_counter()
            result = stores[name].retrieve(query, user_id=USER, now=NOW, config=config)
            totals[name].append((time.perf_counter() - started) * 1000)
            embeds[name].append(result.metadata.stage_ms.get("embed", 0.0))
    load = (load + os.getloadavg()[0]) / 2
    for memory in stores.values():
        memory.close()
    report: dict[str, Any] = {"memories": args.memories, "rounds": args.rounds, "load_average": round(load, 2)}
    for name in stores:
        report[name] = {
            "p50_ms": round(percentile(totals[name], 0.5), 2),
            "p95_ms": round(percentile(totals[name], 0.95), 2),
            "embed_wait_p50_ms": round(percentile(embeds[name], 0.5), 2),
        }
    report["ratio_p50"] = round(report["minilm"]["p50_ms"] / report["hash-384"]["p50_ms"], 2)
    report["ratio_p95"] = round(report["minilm"]["p95_ms"] / report["hash-384"]["p95_ms"], 2)
    print(json.dumps(report, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
