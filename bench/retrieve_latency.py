"""Retrieve latency at 10k and 100k memories for one user, per stage, per backend.

Vectors come from the hashing FakeEmbedder so the store and pipeline are measured; the query's
embedding time is reported separately and excluded from the headline figures.

    python bench/retrieve_latency.py [--sizes 10000,100000] [--backend sqlite|postgres|both]
        [--db-dir DIR] [--postgres-url URL] [--repeat 3] [--shape notes|chat|chat-sessions]

``--shape`` reads the same corpus as a chat with an assistant (every memory a message, user and
assistant in turn), without sessions or in sessions of 20 turns: the turns next to a message are
then read and ranked too.

Filling 100k memories takes minutes, so ``--db-dir`` keeps the SQLite files and ``--postgres-url``
(a superuser's URL of a running server) keeps one database per size; a store that already holds
the corpus is measured as it is. ``--repeat`` measures each store several times and reports the
quietest run (lowest p50): on a shared machine the others mostly measure other work.

OPENBLAS_NUM_THREADS is 1 unless set: numpy's OpenBLAS otherwise hands any product of more than
about 2,000 vectors to a second thread, whose busy-waiting takes the core from the rest of the
retrieval on a machine with other work (10k: p50 45 -> 13 ms on two shared cores). A service
should set it the same way (docs/scaling.md).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import NOW, QUERIES, memories

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder

USER = "bench"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def shaped(n: int, shape: str) -> Iterator[dict[str, Any]]:
    """The corpus as ``shape`` holds it: ``notes`` as written (kinds mixed, no roles); ``chat`` every
    memory a message of a chat with an assistant, user and assistant in turn, no session;
    ``chat-sessions`` the same in sessions of 20 turns (the turns next to a message are read then)."""
    for at, item in enumerate(memories(n, user_id=USER)):
        if shape != "notes":
            item = {**item, "kind": "message", "role": "assistant" if at % 2 else "user",
                    "session_id": f"s{at // 20}" if shape == "chat-sessions" else None}
        yield item


def fill(memory: Memory, n: int, shape: str = "notes") -> float:
    started = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for item in shaped(n, shape):
        batch.append(item)
        if len(batch) == 2000:
            memory.add_many(batch)
            batch = []
    if batch:
        memory.add_many(batch)
    return time.perf_counter() - started


def measure(memory: Memory, rounds: int) -> dict[str, Any]:
    config = RetrievalConfig(cache_ttl=0)
    memory.retrieve(QUERIES[0], user_id=USER, now=NOW, config=config)  # load the vector index
    totals: list[float] = []
    stages: dict[str, list[float]] = {}
    for i in range(rounds):
        query = QUERIES[i % len(QUERIES)]
        started = time.perf_counter()
        result = memory.retrieve(query, user_id=USER, now=NOW, config=config)
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
        "stages_p95_ms": {k: round(percentile(v, 0.95), 3) for k, v in sorted(stages.items())},
    }


def postgres_database(admin_url: str, n: int, shape: str = "notes") -> str:
    """The URL of this size's database on the server, created with pgvector when missing."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"engram_bench_{n}" + ("" if shape == "notes" else "_" + shape.replace("-", "_"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


def open_backend(backend: str, workdir: Path, n: int, postgres_url: str | None,
                 shape: str = "notes") -> tuple[Memory, Any]:
    if backend == "sqlite":
        name = f"bench-{n}.db" if shape == "notes" else f"bench-{n}-{shape}.db"
        return Memory(workdir / name, embedder=FakeEmbedder(384)), None
    if postgres_url is not None:
        return Memory(postgres_database(postgres_url, n, shape), embedder=FakeEmbedder(384)), None
    from engram.testing.pgserver import start_postgres

    # Its own temp dir: the server runs as an unprivileged user that cannot enter ours (mode 0700).
    server = start_postgres()
    return Memory(server.url, embedder=FakeEmbedder(384)), server


def run(backend: str, workdir: Path, n: int, args: argparse.Namespace) -> dict[str, Any]:
    memory, server = open_backend(backend, workdir, n, args.postgres_url, args.shape)
    try:
        held = memory.store.count(USER)
        if held not in (0, n):
            raise SystemExit(f"{backend} store for {n} holds {held} memories of {USER!r}; remove it first")
        load_s = fill(memory, n, args.shape) if held == 0 else None
        runs = [measure(memory, args.rounds) for _ in range(args.repeat)]
    finally:
        memory.close()
        if server is not None:
            server.stop()
    best = min(runs, key=lambda r: r["p50_ms"])
    return {"memories": n, "load_s": None if load_s is None else round(load_s, 1),
            "runs_p50_ms": [r["p50_ms"] for r in runs], **best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1, help="measure each store this many times, keep the quietest")
    parser.add_argument("--db-dir", type=Path, help="keep (and reuse) the SQLite files here")
    parser.add_argument("--postgres-url", help="a running server (superuser): one database per size, kept")
    parser.add_argument("--shape", choices=["notes", "chat", "chat-sessions"], default="notes",
                        help="the corpus as notes of mixed kinds, or as a chat with an assistant")
    parser.add_argument("--out", default="bench/results/retrieve_latency.json")
    args = parser.parse_args()
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.db_dir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for backend in backends:
            for n in (int(s) for s in args.sizes.split(",")):
                row = run(backend, workdir, n, args)
                report[f"{backend}-{n}"] = row
                print(json.dumps({f"{backend}-{n}": row}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
