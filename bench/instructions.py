"""Instructions a retrieval executes, counted by valgrind: CPU work that the machine's other load
does not move, for changes too small for the timing benchmarks to see on a shared machine (the
same tree measured twice agrees to ~0.1%, where the CPU time of the same 400 queries moves 15%).

For each tree, two fresh processes run under callgrind on the multi-tenant benchmark's ``skewed``
store (:mod:`multitenant` builds it): both open the store and answer one warm-up question (the
code paths' first use), then one stops and the other answers the first ``--queries`` of that
benchmark's workload (default config, result cache off, users met cold as in the benchmark). The
difference, divided by ``--queries``, is the instructions a retrieval. Not counted: the kernel's
work (system calls, page faults) and waiting, so a change that moves those needs the timings too.

    python bench/instructions.py --db-dir /tmp/mt [--trees /work/main,/tmp/base] [--queries 200]
        [--dist sized|uniform]

A run of 200 queries takes about a minute a tree.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see retrieve_latency.py)

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import NOW
from multitenant import DIMENSIONS, TOTAL, scenario_users, workload

SCENARIO = "skewed"


def answer(db: Path, dist: str, n: int) -> None:
    """The measured process: ``n`` retrievals after one warm-up."""
    import engram
    from engram import Memory, RetrievalConfig
    from engram.embedders.fake import FakeEmbedder

    tree = os.environ.get("PYTHONPATH")
    if tree and not Path(engram.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"engram came from {engram.__file__}, not from {tree}")
    config = RetrievalConfig(cache_ttl=0)
    with Memory(db, embedder=FakeEmbedder(DIMENSIONS)) as memory:
        users = scenario_users(SCENARIO)
        memory.retrieve("warm the code paths", user_id=min(users, key=users.__getitem__), now=NOW, config=config)
        for user, query in workload(users, dist, 400)[:n]:
            memory.retrieve(query, user_id=user, now=NOW, config=config)


def counted(tree: str, db: Path, dist: str, n: int) -> int:
    """Instructions of one process answering ``n`` questions with ``tree``'s engram."""
    env = {**os.environ, "PYTHONPATH": tree} if tree else None
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out", sys.executable, __file__,
             "--db-dir", str(db.parent), "--dist", dist, "--answer", str(n)],
            capture_output=True, text=True, env=env, check=False,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed ({tree or 'installed engram'}):\n{done.stderr[-3000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db-dir", required=True, type=Path, help="where multitenant.py keeps its stores")
    parser.add_argument("--trees", default="", help="engram source trees (PYTHONPATH) to compare, comma-separated")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dist", choices=["sized", "uniform"], default="sized")
    parser.add_argument("--out", default="bench/results/instructions.json")
    parser.add_argument("--answer", type=int, help=argparse.SUPPRESS)  # the measured child
    args = parser.parse_args()
    db = args.db_dir / f"{SCENARIO}-{TOTAL}.db"
    if args.answer is not None:
        answer(db, args.dist, args.answer)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if not db.exists():
        raise SystemExit(f"{db} is missing: build it with multitenant.py --db-dir {args.db_dir} --repeat 0")
    report = {}
    for tree in args.trees.split(",") if args.trees else [""]:
        base = counted(tree, db, args.dist, 0)
        total = counted(tree, db, args.dist, args.queries)
        row = {"queries": args.queries, "dist": args.dist,
               "instructions_per_retrieval_M": round((total - base) / args.queries / 1e6, 3)}
        report[tree or "installed"] = row
        print(json.dumps({tree or "installed": row}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
