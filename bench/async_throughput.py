"""Retrievals per second through the sync API and through ``AsyncMemory``, at concurrency 1, 10 and 100.

    python bench/async_throughput.py [--memories 2000] [--retrievals 200] [--embedder minilm|fake]

One SQLite store of ``--memories`` memories (bench/corpus.py) for one user. The sync API at
concurrency c is c threads calling ``Memory.retrieve``; ``AsyncMemory`` at concurrency c is c
``await memory.retrieve(...)`` in flight on one event loop (each in a worker thread). Every query is
new (a numbered variant of the corpus's questions), so no answer comes from the retrieval cache.
A retrieval that passed its deadline answers without memory (a fallback, not an error): such
answers are counted as ``degraded`` beside each rate, since they are cheaper than real ones.
With ``minilm`` each retrieval embeds its query with the real model, which runs outside the GIL;
with ``fake`` (a hashing embedder) the figure is the store's and the pipeline's alone.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported: see retrieve_latency.py

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import QUERIES, memories

from engram import Memory
from engram.aio import AsyncMemory
from engram.embedders import default_embedder
from engram.embedders.fake import FakeEmbedder
from engram.ext import Embedder

USER = "bench"
CONCURRENCY = (1, 10, 100)


def questions(n: int, run: str) -> list[str]:
    return [f"{QUERIES[i % len(QUERIES)]} ({run} {i})" for i in range(n)]


Measured = tuple[float, int]  # (retrievals per second, how many answered without memory)


def sync_rate(memory: Memory, queries: list[str], concurrency: int) -> Measured:
    def one(query: str) -> bool:
        return memory.retrieve(query, user_id=USER).metadata.error is not None

    started = time.perf_counter()
    if concurrency == 1:
        degraded = [one(query) for query in queries]
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            degraded = list(pool.map(one, queries))
    return len(queries) / (time.perf_counter() - started), sum(degraded)


def async_rate(memory: AsyncMemory, queries: list[str], concurrency: int) -> Measured:
    async def run() -> Measured:
        gate = asyncio.Semaphore(concurrency)

        async def one(query: str) -> bool:
            async with gate:
                return (await memory.retrieve(query, user_id=USER)).metadata.error is not None

        started = time.perf_counter()
        degraded = await asyncio.gather(*(one(q) for q in queries))
        return len(queries) / (time.perf_counter() - started), sum(degraded)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--retrievals", type=int, default=200, help="per measurement")
    parser.add_argument("--embedder", choices=["minilm", "fake"], default="minilm")
    parser.add_argument("--out", default="bench/results/async_throughput.json")
    args = parser.parse_args()
    embedder: Embedder = default_embedder() if args.embedder == "minilm" else FakeEmbedder(384)
    report: dict[str, object] = {"memories": args.memories, "retrievals": args.retrievals,
                                 "embedder": args.embedder, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "bench.db", embedder=embedder) as memory:
        items = list(memories(args.memories, user_id=USER))
        for start in range(0, len(items), 1000):
            memory.add_many(items[start:start + 1000])
        memory.retrieve("warm up", user_id=USER)
        wrapped = AsyncMemory(memory=memory)
        sides: dict[str, Callable[[list[str], int], Measured]] = {
            "sync": lambda qs, c: sync_rate(memory, qs, c),
            "async": lambda qs, c: async_rate(wrapped, qs, c),
        }
        rates: dict[str, dict[str, float]] = {name: {} for name in sides}
        degraded: dict[str, dict[str, int]] = {name: {} for name in sides}
        for name, measure in sides.items():
            for c in CONCURRENCY:
                rate, fallbacks = measure(questions(args.retrievals, f"{name} {c}"), c)
                rates[name][str(c)], degraded[name][str(c)] = round(rate, 1), fallbacks
        report["retrievals_per_s"] = rates
        report["degraded"] = degraded
    print(f"{'concurrency':>12} {'sync /s':>10} {'(degraded)':>10} {'AsyncMemory /s':>15} {'(degraded)':>10}")
    for c in CONCURRENCY:
        key = str(c)
        print(f"{c:>12} {rates['sync'][key]:>10} {degraded['sync'][key]:>10} {rates['async'][key]:>15} "
              f"{degraded['async'][key]:>10}")
    print(json.dumps(report))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
