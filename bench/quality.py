"""Retrieval quality on every labelled set, with the defaults a user gets, beside the baselines.

Runs the LongMemEval and LoCoMo dev sets (read from ``../shared/data/`` beside the repository, never
copied into it; a set that is absent is skipped with a message) as raw rankings and with
``--defaults`` semantics (``retrieve(q, config=RetrievalConfig(top_k=k))``), the everyday
scenario set and the probe sets written blind to the code, then prints one summary: the headline
metric per set for engram, BM25, dense and their reciprocal rank fusion, all from the same run and
the same vectors.

    python bench/quality.py [--out bench/results/quality.json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from engram.embedders import default_embedder
from engram.eval import EvalCase, instructions, locomo, longmemeval
from engram.eval.cached_embedder import CachedEmbedder
from engram.eval.runner import SYSTEMS, run

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"

#: (set, loader, index roles, turn cutoffs, the metric that set is scored by)
SETS: tuple[tuple[str, Callable[[Path], Iterable[EvalCase]], Any, tuple[int, ...], str], ...] = (
    ("longmemeval", lambda p: longmemeval.cases(p / "longmemeval_s_dev.json.gz"), ("user",), (5, 10, 50), "recall_all"),
    # The long-message shape: assistant turns (~1,700 characters on average, code and instructions)
    # are indexed too, and the single-session-assistant questions can be answered only from them.
    ("longmemeval-all", lambda p: longmemeval.cases(p / "longmemeval_s_dev.json.gz"), None, (5, 10, 50),
     "recall_all"),
    ("locomo", lambda p: locomo.cases(p / "locomo_dev.json"), None, (5, 10, 25), "recall"),
    # Standing instructions asked for by later requests, inside those long-message haystacks.
    ("instructions", lambda p: instructions.cases(p / "longmemeval_s_dev.json.gz"), None, (5, 10, 50),
     "recall_all"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "quality.json")
    parser.add_argument("--sets", nargs="+", choices=[s[0] for s in SETS], default=[s[0] for s in SETS])
    parser.add_argument("--modes", nargs="+", choices=("ranked", "defaults"), default=["ranked", "defaults"])
    parser.add_argument("--no-scenarios", action="store_true", help="skip the everyday scenario set")
    parser.add_argument("--no-probes", action="store_true", help="skip the probe sets (tests/quality/probes)")
    parser.add_argument("--by-type", action="store_true", help="also print each question type or category")
    args = parser.parse_args()
    embedder = CachedEmbedder(default_embedder())
    summary: dict[str, Any] = {}
    try:
        for name, load, roles, ks, metric in SETS:
            if name not in args.sets:
                continue
            try:
                cases = list(load(args.data))
            except FileNotFoundError as exc:
                print(f"{name}: skipped, {exc}")
                continue
            for mode in args.modes:
                report = run(cases, embedder, systems=SYSTEMS, k=ks, index_roles=roles, mode=mode)
                turn = {s: report["summary"][s]["turn"]["overall"] for s in SYSTEMS}
                session = {s: report["summary"][s]["session"]["overall"] for s in SYSTEMS}
                summary[f"{name}/{mode}"] = {"turn": turn, "session": session, "metric": metric, "k": list(ks)}
                print(f"{name} ({mode}, n={turn['engram']['n']}), turn {metric}@{'/'.join(map(str, ks))}:")
                for system in SYSTEMS:
                    cells = "/".join(f"{turn[system][f'{metric}@{k}']:.3f}" for k in ks)
                    sess = session[system].get("recall_all@5", float("nan"))
                    print(f"  {system:7s} {cells}   session recall_all@5 {sess:.3f}")
                if args.by_type:
                    _print_types(report, metric, ks)
    finally:
        embedder.close()

    if not args.no_scenarios:
        from engram.eval.scenarios import main as scenarios_main

        scenarios_main([])
    if not args.no_probes:
        from engram.eval.probes import overall, run_probes, scores

        for k in (5, 10):
            reports = [report for _, report in run_probes(k)]
            summary[f"probes/recall@{k}"] = scores(reports)
            print(f"all probe sets, recall@{k} / hit@1: {overall(reports)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def _print_types(report: dict[str, Any], metric: str, ks: tuple[int, ...]) -> None:
    """Each question type (LongMemEval) or category (LoCoMo) at the middle cutoff, every system."""
    k = ks[len(ks) // 2]
    types = report["summary"]["engram"]["turn"]["by_type"]
    for qtype in sorted(types):
        row = report["summary"]
        cells = "  ".join(
            f"{s} {row[s]['turn']['by_type'][qtype].get(f'{metric}@{k}', float('nan')):.3f}" for s in SYSTEMS
        )
        print(f"    {qtype[:26]:26s} n={types[qtype]['n']:3d} @{k}: {cells}")


if __name__ == "__main__":
    raise SystemExit(main())
