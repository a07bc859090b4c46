"""Server CPU a retrieval for two or more servers measured side by side: a before/after of the
service path precise to ~0.1 ms, where requests a second move by 40 % from one run to the next.

    python bench/service_cpu.py --trees /work/base,. [--workers 1] [--clients 4] [--requests 3000]
        [--rounds 2] [--embedder hash-384] [--memories 10000] [--users 10] [--db PATH]

One server per source tree (``--trees`` as in ``service_load.py``: ``PATH[@NAME=value]``) on the same
store. The servers' processes are pinned to one core and this client to another, and the client
sends each server a batch of ``--clients`` concurrent requests in turn, so every server meets the
same moments of the machine and the same core. A server's CPU (its processes, from /proc) over its
requests gives the figure; each round starts the servers again, in the other order. Throughput is
``service_load.py``'s job: on one core the servers do not compete across cores as they do in a
deployment, so this measures what each request costs, not how they share the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import NOW
from raw_http import RawClient
from service_load import VARIED, cpu_seconds, prepared, running


def pin(pid: int, cpu: int) -> None:
    """``pid`` and every thread it has (threads started later inherit it from their parent)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(task), {cpu})


def pin_tree(pid: int, cpu: int) -> None:
    """A server and its worker processes."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            if int(entry) == pid or parent == pid:
                pin(int(entry), cpu)


async def interleaved(urls: list[str], token: str, users: list[str], clients: int, requests: int,
                      pids: list[int]) -> list[dict[str, float]]:
    rng = random.Random(7)
    pools = [[RawClient(url, {"Authorization": f"Bearer {token}"}) for _ in range(clients)] for url in urls]

    async def ask(client: RawClient) -> None:
        now = NOW + timedelta(minutes=rng.randrange(60 * 24 * 30))
        status, body = await client.post_json("/v1/retrieve", {
            "userId": rng.choice(users), "message": rng.choice(VARIED), "now": now.isoformat()})
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {body[:200]!r}")

    for pool in pools:  # warm-up: connections open, models and user indexes loaded
        for _ in range(30):
            await asyncio.gather(*(ask(c) for c in pool))
    before = [cpu_seconds(pid) for pid in pids]
    wall = [0.0] * len(urls)
    batches = max(1, requests // clients)
    for _ in range(batches):
        for i, pool in enumerate(pools):
            started = time.perf_counter()
            await asyncio.gather(*(ask(c) for c in pool))
            wall[i] += time.perf_counter() - started
    after = [cpu_seconds(pid) for pid in pids]
    done = batches * clients
    return [{"server_cpu_ms": round((after[i] - before[i]) * 1000 / done, 3),
             "batch_ms": round(wall[i] * 1000 / batches, 3)} for i in range(len(urls))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", required=True, help="comma-separated source trees, PATH[@NAME=value]")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--clients", type=int, default=4, help="concurrent requests in each server's batch")
    parser.add_argument("--requests", type=int, default=3000, help="measured requests per server and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--embedder", default="hash-384")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--out", default="bench/results/service_cpu.json")
    args = parser.parse_args()
    trees = [t for t in args.trees.split(",") if t]
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        parser.error("needs two cores: one for the servers, one for the client")
    os.sched_setaffinity(0, {cpus[0]})
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="engram-service-cpu-") as tmp:
        db = args.db or Path(tmp) / "service.db"
        users, token = prepared(db, args.memories, args.users, args.embedder, "service_cpu")
        for round_ in range(args.rounds):
            order = trees if round_ % 2 == 0 else trees[::-1]
            with running(db, order, args.workers, args.embedder) as servers:
                for _, _, server in servers:
                    pin_tree(server.pid, cpus[-1])
                measured = asyncio.run(interleaved([u for _, u, _ in servers], token, users, args.clients,
                                                   args.requests, [s.pid for _, _, s in servers]))
            for (tree, _, _), figures in zip(servers, measured, strict=True):
                row = {"round": round_, "tree": tree, "workers": args.workers, "clients": args.clients, **figures}
                rows.append(row)
                print(json.dumps(row), flush=True)
    summary = [{"tree": tree, "server_cpu_ms": [r["server_cpu_ms"] for r in rows if r["tree"] == tree],
                "mean_server_cpu_ms": round(statistics.mean(r["server_cpu_ms"] for r in rows if r["tree"] == tree), 3)}
               for tree in trees]
    for row in summary:
        print(json.dumps(row), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"embedder": args.embedder, "memories": args.memories, "users": args.users,
                                          "requests": args.requests, "rows": rows, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
