"""``engram serve --workers N`` under load on loopback: retrievals a second and p50/p99 at 1, 4, 16
and 64 concurrent clients, errors counted (any non-200 or transport error).

    python bench/service_load.py [--workers 1,2,4] [--clients 1,4,16,64] [--duration 15]
        [--memories 10000] [--users 10] [--db PATH]

The store holds ``--memories`` over ``--users`` users of :mod:`corpus` (hash embedder, 384
dimensions: the service and the store are measured, not a model); each request asks one of the
corpus questions for a user drawn at random, at a ``now`` in a different minute each time, so the
result cache (keyed by the minute) almost never answers and every request is a real retrieval. The
rate limiter is on (shared across workers) with a rate no client reaches, so its cost is in the
figures. Each level starts with a short unmeasured warm-up of the same clients; the load generator
(httpx, asyncio) runs in this process and competes for the same cores, as a client on the host would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import NOW, QUERIES, memories
from http_load import HOST, free_port, wait_healthy
from retrieve_latency import percentile

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.service.auth import KeyStore


def populate(db: Path, total: int, users: int) -> list[str]:
    names = [f"svc{i:03d}" for i in range(users)]
    with Memory(db, embedder=FakeEmbedder(384)) as memory:
        if int(memory.stats()["memories"]) < total:
            for i, user in enumerate(names):
                memory.add_many(list(memories(total // users, user_id=user, seed=500 + i)))
    return names


def start_server(db: Path, port: int, workers: int) -> subprocess.Popen[bytes]:
    code = "from engram.service.cli import serve_command; serve_command()"
    args = [sys.executable, "-c", code, "--db", str(db), "--host", HOST, "--port", str(port),
            "--rate", "1000000", "--burst", "1000000", "--log-level", "warning", "--embedder", "hash-384",
            "--workers", str(workers)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


async def load(url: str, token: str, users: list[str], clients: int, duration: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    deadline = time.perf_counter() + duration
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client_loop(seed: int, client: httpx.AsyncClient) -> None:
        rng = random.Random(seed)
        while time.perf_counter() < deadline:
            # A "now" in a different minute each time: the 60 s result cache keys on it, and would
            # otherwise answer most of the 10 x users distinct questions.
            now = NOW + timedelta(minutes=rng.randrange(60 * 24 * 30))
            body = {"userId": rng.choice(users), "message": rng.choice(QUERIES), "now": now.isoformat()}
            started = time.perf_counter()
            try:
                response = await client.post("/v1/retrieve", json=body)
                status = str(response.status_code)
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            if status == "200":
                latencies.append((time.perf_counter() - started) * 1000)
            else:
                errors[status] = errors.get(status, 0) + 1

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60.0) as client:
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(i, client) for i in range(clients)))
        elapsed = time.perf_counter() - started
    return {
        "clients": clients, "requests": len(latencies), "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 0.5), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99), 1) if latencies else None,
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--clients", default="1,4,16,64")
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--db", type=Path, help="keep (and reuse) the store here")
    parser.add_argument("--out", default="bench/results/service_load.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-service-load-") as tmp:
        db = args.db or Path(tmp) / "service.db"
        users = populate(db, args.memories, args.users)
        keys = KeyStore(db)
        token = keys.create(users, name="service_load")[1]
        keys.close()
        report: dict[str, Any] = {"memories": args.memories, "users": args.users, "cpus": os.cpu_count()}
        for workers in (int(w) for w in args.workers.split(",")):
            port = free_port()
            url = f"http://{HOST}:{port}"
            server = start_server(db, port, workers)
            try:
                wait_healthy(url, timeout=120)
                rows = []
                for clients in (int(c) for c in args.clients.split(",")):
                    asyncio.run(load(url, token, users, clients, args.warmup))
                    row = asyncio.run(load(url, token, users, clients, args.duration))
                    rows.append(row)
                    print(json.dumps({"workers": workers, **row}), flush=True)
                report[f"workers-{workers}"] = rows
            finally:
                server.terminate()
                server.wait(timeout=60)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
