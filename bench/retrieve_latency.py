"""Retrieve latency at 10k and 100k memories for one user, per stage, per backend.

Vectors come from the hashing FakeEmbedder so the store and pipeline are measured; the query's
embedding time is reported separately and excluded from the headline figures.

    python bench/retrieve_latency.py [--sizes 10000,100000] [--backend sqlite|postgres|both]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import NOW, QUERIES, memories

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fill(memory: Memory, n: int) -> float:
    started = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for item in memories(n):
        batch.append(item)
        if len(batch) == 2000:
            memory.add_many(batch)
            batch = []
    if batch:
        memory.add_many(batch)
    return time.perf_counter() - started


def measure(memory: Memory, rounds: int) -> dict[str, Any]:
    config = RetrievalConfig(cache_ttl=0)
    memory.retrieve(QUERIES[0], user_id="bench", now=NOW, config=config)  # load the vector index
    totals, stages = [], {}
    for i in range(rounds):
        query = QUERIES[i % len(QUERIES)]
        started = time.perf_counter()
        result = memory.retrieve(query, user_id="bench", now=NOW, config=config)
        elapsed = (time.perf_counter() - started) * 1000
        embed = result.metadata.stage_ms.get("embed", 0.0)
        totals.append(elapsed - embed)
        for name, ms in result.metadata.stage_ms.items():
            stages.setdefault(name, []).append(ms)
    return {
        "p50_ms": round(percentile(totals, 0.5), 2),
        "p95_ms": round(percentile(totals, 0.95), 2),
        "mean_ms": round(statistics.mean(totals), 2),
        "stages_p50_ms": {k: round(percentile(v, 0.5), 3) for k, v in sorted(stages.items())},
    }


def open_backend(backend: str, workdir: Path, n: int) -> tuple[Memory, Any]:
    if backend == "sqlite":
        return Memory(workdir / f"bench-{n}.db", embedder=FakeEmbedder(384)), None
    from engram.testing.pgserver import start_postgres

    # Its own temp dir: the server runs as an unprivileged user that cannot enter ours (mode 0700).
    server = start_postgres()
    return Memory(server.url, embedder=FakeEmbedder(384)), server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--out", default="bench/results/retrieve_latency.json")
    args = parser.parse_args()
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            for n in (int(s) for s in args.sizes.split(",")):
                memory, server = open_backend(backend, Path(tmp), n)
                try:
                    load_s = fill(memory, n)
                    row = {"memories": n, "load_s": round(load_s, 1), **measure(memory, args.rounds)}
                finally:
                    memory.close()
                    if server is not None:
                        server.stop()
                report[f"{backend}-{n}"] = row
                print(json.dumps({f"{backend}-{n}": row}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
