"""Load test of ``engram serve`` on loopback: retrieve requests a second, p50/p99, errors.

    python bench/http_load.py --memories 100000 --duration 20 --clients 16

The store is filled with the hash embedder (``FakeEmbedder(384)``: same dimensions as MiniLM, no
model cost) so the figures measure the service and the store, not the model. Queries are drawn at
random so the 60 s result cache rarely answers; the per-stage timings of the answers say where
the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.service.auth import KeyStore

_VOCABULARY = (
    "acme globex initech invoice payment terms contract renewal meeting budget quarter report customer "
    "support ticket outage deploy release roadmap hiring onboarding policy travel expense refund shipping "
    "warehouse supplier price discount audit security password laptop office berlin london tokyo project "
    "deadline design review feedback launch campaign marketing sales lead demo pilot trial license"
)
WORDS = _VOCABULARY.split()
USER = "bench-user"
HOST = "127.0.0.1"


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."


def populate(db: Path, count: int, dims: int) -> None:
    rng = random.Random(7)
    with Memory(db, embedder=FakeEmbedder(dims)) as memory:
        have = int(memory.stats().get("memories", 0) or 0)
        if have >= count:
            print(f"store has {have} memories already")
            return
        started = time.perf_counter()
        for start in range(have, count, 5000):
            batch = [{"content": sentence(rng), "user_id": USER, "kind": rng.choice(("message", "fact")),
                      "created_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00+00:00"}
                     for _ in range(min(5000, count - start))]
            memory.add_many(batch)
            print(f"  {start + len(batch)} memories ({time.perf_counter() - started:.0f} s)", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(db: Path, port: int, dims: int) -> subprocess.Popen[bytes]:
    code = "from engram.service.cli import serve_command; serve_command()"
    args = [sys.executable, "-c", code, "--db", str(db), "--host", HOST, "--port", str(port), "--rate", "0",
            "--log-level", "warning", "--embedder", f"hash-{dims}"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_healthy(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("server did not become healthy")


async def load(url: str, token: str, clients: int, duration: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[str, int] = defaultdict(int)
    stages: dict[str, list[float]] = defaultdict(list)
    deadline = time.perf_counter() + duration
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def worker(seed: int, client: httpx.AsyncClient) -> None:
        rng = random.Random(seed)
        while time.perf_counter() < deadline:
            body = {"userId": USER, "sessionId": "bench", "message": " ".join(rng.sample(WORDS, 4)) + "?"}
            t0 = time.perf_counter()
            try:
                response = await client.post("/v1/retrieve", json=body)
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] += 1
                continue
            latencies.append((time.perf_counter() - t0) * 1000)
            if response.status_code != 200:
                errors[str(response.status_code)] += 1
                continue
            for name, ms in response.json()["metadata"].get("stageMs", {}).items():
                stages[name].append(ms)

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30.0) as client:
        started = time.perf_counter()
        await asyncio.gather(*(worker(i, client) for i in range(clients)))
        elapsed = time.perf_counter() - started
    ordered = sorted(latencies)

    def pct(q: float) -> float:
        return ordered[max(0, min(len(ordered) - 1, round(q * len(ordered)) - 1))] if ordered else 0.0

    return {
        "requests": len(latencies), "seconds": elapsed, "rps": len(latencies) / elapsed,
        "p50": pct(0.50), "p99": pct(0.99), "mean": statistics.fmean(ordered) if ordered else 0.0,
        "errors": dict(errors), "stages": {k: statistics.fmean(v) for k, v in stages.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--duration", type=float, default=20.0, help="Seconds of load (bounded).")
    parser.add_argument("--clients", type=int, default=16, help="Concurrent clients (bounded to 256).")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--db", type=Path, default=None, help="Reuse this store (filled up to --memories).")
    args = parser.parse_args()
    clients = max(1, min(256, args.clients))
    duration = max(1.0, min(600.0, args.duration))
    workdir = tempfile.mkdtemp(prefix="engram-http-load-")
    db = args.db or Path(workdir) / "bench.db"
    print(f"filling {db} with {args.memories} memories of one user (FakeEmbedder({args.dims}))")
    populate(db, args.memories, args.dims)
    keys = KeyStore(db)
    token = keys.create([USER], name="http_load")[1]
    keys.close()
    port = free_port()
    url = f"http://{HOST}:{port}"
    server = start_server(db, port, args.dims)
    try:
        wait_healthy(url)
        asyncio.run(load(url, token, min(clients, 4), 2.0))  # warm-up: caches, page cache, JIT-free paths
        result = asyncio.run(load(url, token, clients, duration))
    finally:
        server.terminate()
        server.wait(timeout=30)
        if args.db is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nretrieve over HTTP, {args.memories} memories, {clients} clients, {result['seconds']:.1f} s, "
          f"cpus={os.cpu_count()}")
    print(f"  requests  {result['requests']}   errors {sum(result['errors'].values())} {result['errors'] or ''}")
    print(f"  throughput {result['rps']:.1f} req/s")
    print(f"  latency   p50 {result['p50']:.1f} ms   p99 {result['p99']:.1f} ms   mean {result['mean']:.1f} ms")
    stages = sorted(result["stages"].items(), key=lambda kv: -kv[1])
    print("  server-side stage means (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in stages))
    if stages:
        top, ms = stages[0]
        share = ms / max(result["mean"], 1e-9) * 100
        print(f"  bottleneck: stage '{top}' ({ms:.1f} ms, {share:.0f}% of mean end-to-end latency); "
              "the rest is queueing behind one Python process (GIL) plus HTTP/JSON overhead.")


if __name__ == "__main__":
    main()
