"""LongMemEval_S dev-set retrieval: Engram vs BM25-only vs dense-only, the paper's protocol.

Reads ``../shared/data/longmemeval_s_dev.json.gz`` beside the repository (never copied into it) and
skips with a message when it is absent. Embeddings persist in the engram eval cache, so only the first
run pays for embedding.

    python bench/longmemeval.py [--index user|all] [--granularity turn|session] [--limit N] [--config k=v ...]

Writes ``bench/results/longmemeval.json`` (``longmemeval_<variant>.json`` for non-default variants).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from engram.embedders import default_embedder
from engram.eval import longmemeval
from engram.eval.cached_embedder import CachedEmbedder
from engram.eval.cli import parse_overrides, render_tables
from engram.eval.runner import run

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "longmemeval_s_dev.json.gz"
RESULTS = REPO / "bench" / "results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--index", choices=["user", "all"], default="user")
    parser.add_argument("--granularity", choices=["turn", "session"], default="turn")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipping: LongMemEval dev set not found at {args.data}")
        return 0
    cases = list(longmemeval.cases(args.data, limit=args.limit))
    embedder = CachedEmbedder(default_embedder())
    console = Console(width=200)
    try:
        with console.status(f"evaluating {len(cases)} questions") as status:
            report = run(
                cases, embedder, granularity=args.granularity,
                index_roles=("user",) if args.index == "user" else None,
                overrides=parse_overrides(args.config),
                on_case=lambda n, case: status.update(f"question {n + 1}/{len(cases)}: {case.question_id}"),
            )
        report["dataset"] = str(args.data)
        report["cache"] = embedder.stats()
    finally:
        embedder.close()
    variant = [] if args.index == "user" else [f"index_{args.index}"]
    variant += [] if args.granularity == "turn" else [args.granularity]
    variant += [] if args.limit is None else [f"limit{args.limit}"]
    variant += [c.replace("=", "_") for c in args.config]
    out = args.out or RESULTS / ("_".join(["longmemeval", *variant]) + ".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    for table in render_tables(report):
        console.print(table)
    timing, cache = report["timing"], report["cache"]
    console.print(f"{timing['questions']} questions, wall {timing['wall_s']} s (indexing {timing['ingest_s']} s); "
                  f"retrieve ms {timing['retrieve_ms']}; cache {cache['hits']} hits / {cache['misses']} embedded")
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
