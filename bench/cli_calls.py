"""Wall time of one ``engram`` command, as a shell runs it: a fresh interpreter per call.

    python bench/cli_calls.py [--runs 5] [--memories 200] [--against OTHER_CHECKOUT]

Each command runs ``--runs`` times against a SQLite store holding ``--memories`` memories of one
user (and one API key); the median, min and max wall time of each are printed with the median CPU
time (user + system) and the load average, since on a shared machine wall time moves with the load.
``--against`` times another checkout's code too (``git archive COMMIT | tar -x -C DIR``), its runs
interleaved with these so both meet the same load.
Byte-code caching is switched on for the runs (an installed package has its .pyc files), and a first
untimed call of each command warms the page cache.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def engram(args: list[str], env: dict[str, str], root: Path = ROOT) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "engram.cli", *args], env=env, cwd=root, capture_output=True,
                          text=True, check=True)
    return time.perf_counter() - started, done.stdout


def cpu_seconds() -> float:
    """CPU time of every child waited for so far: unlike wall time, barely moved by other processes' load."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--against", type=Path, default=None, help="another checkout to time alongside")
    parser.add_argument("--out", default="bench/results/cli_calls.json")
    args = parser.parse_args()
    roots = {"this": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="engram-cli-bench-") as tmp:
        db = str(Path(tmp) / "bench.db")
        lines = "".join(json.dumps({"content": f"memory {i}: Acme order {i} shipped to warehouse {i % 7}",
                                    "kind": "fact"}) + "\n" for i in range(args.memories))
        (Path(tmp) / "m.jsonl").write_text(lines)
        engram(["import", str(Path(tmp) / "m.jsonl"), "--user", "alice", "--db", db], env)
        engram(["keys", "create", "--user", "alice", "--db", db], env)
        memory_id = engram(["list", "--user", "alice", "--limit", "1", "--db", db], env)[1].split("\t")[0]
        commands = {
            "add": ["add", "Acme moved its warehouse to Leeds", "--user", "alice", "--db", db],
            "search": ["search", "Where is the Acme warehouse?", "--user", "alice", "--db", db],
            "list": ["list", "--user", "alice", "--db", db],
            "get": ["get", memory_id, "--user", "alice", "--db", db],
            "history": ["history", memory_id, "--user", "alice", "--db", db],
            "stats": ["stats", "--db", db],
            "keys list": ["keys", "list", "--db", db],
            "--help": ["--help"],
        }
        results: dict[str, dict[str, dict[str, float]]] = {name: {} for name in roots}
        for name, command in commands.items():
            times: dict[str, list[float]] = {root: [] for root in roots}
            cpu: dict[str, list[float]] = {root: [] for root in roots}
            for where in roots.values():
                engram(command, env, where)  # untimed: the page cache and byte-code files
            for _ in range(args.runs):
                for root, where in roots.items():
                    before = cpu_seconds()
                    times[root].append(engram(command, env, where)[0])
                    cpu[root].append(cpu_seconds() - before)
            for root, taken in times.items():
                results[root][name] = {"median_s": statistics.median(taken), "min_s": min(taken), "max_s": max(taken),
                                       "median_cpu_s": statistics.median(cpu[root])}
                print(f"{root:8} {name:10} median {statistics.median(taken):.3f} s  "
                      f"(min {min(taken):.3f}, max {max(taken):.3f}; CPU {statistics.median(cpu[root]):.3f} s)")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores; {args.runs} runs each")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {"runs": args.runs, "memories": args.memories, "load_average": load, "commands": results["this"]}
    if args.against:
        report["against"] = results["against"]
    out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
