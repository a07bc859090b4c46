"""``engram eval``: retrieval benchmarks from the command line (``engram.cli`` registers the group)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

__all__ = ["eval_group", "parse_overrides", "render_tables"]

METRIC_LABELS = (("recall", "R"), ("recall_all", "R_all"), ("recall_any", "R_any"), ("ndcg_any", "nDCG"))


def _ks(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        ks = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as exc:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from exc
    if not ks or any(k < 1 or k > 1000 for k in ks):
        raise click.BadParameter("every k must be in [1, 1000]")
    return ks


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are JSON where they parse (numbers, true, null, objects), else text."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint="--config")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key.strip()] = value
    return out


def render_tables(report: Mapping[str, Any]) -> list[Any]:
    """One rich table per level: rows are question types (then overall) x systems, columns metrics@k."""
    from rich.table import Table

    protocol = report["protocol"]
    tables = []
    for level in protocol["levels"]:
        ks = protocol["session_k"] if level == "session" and protocol["granularity"] == "turn" else protocol["k"]
        roles = protocol["index_roles"]
        index = roles if isinstance(roles, str) else "+".join(roles)
        mode = protocol.get("mode", "ranked")
        table = Table(title=f"{level} level ({protocol['granularity']} granularity, {index} turns indexed, "
                            f"engram {'with the defaults' if mode == 'defaults' else 'raw ranking'})")
        table.add_column("question type")
        table.add_column("n", justify="right")
        table.add_column("system")
        for k in ks:
            for _, label in METRIC_LABELS:
                table.add_column(f"{label}@{k}", justify="right")
        first = report["summary"][protocol["systems"][0]][level]
        groups = [(t, "by_type") for t in sorted(first["by_type"])] + [("overall", "overall")]
        for group, where in groups:
            for position, system in enumerate(protocol["systems"]):
                block = report["summary"][system][level]
                cell = block["overall"] if where == "overall" else block["by_type"][group]
                keys = [f"{name}@{k}" for k in ks for name, _ in METRIC_LABELS]
                values = [f"{cell[key]:.3f}" if key in cell else "-" for key in keys]
                style = "bold" if where == "overall" else None
                table.add_row(group if position == 0 else "", str(cell["n"]) if position == 0 else "", system, *values,
                              style=style, end_section=position == len(protocol["systems"]) - 1)
        tables.append(table)
    return tables


@click.group(name="eval", help="Measure retrieval quality on labelled benchmarks.")
def eval_group() -> None:
    pass


def _common(command: Any) -> Any:
    """The options every benchmark command shares."""
    options = [
        click.option("--k", "k", default=None, help="Cutoffs at the indexed level [turn: 5,10,50; session: 5,10]."),
        click.option("--limit", type=click.IntRange(min=1), default=None, help="Evaluate only the first N questions."),
        click.option("--systems", default="engram,bm25,dense,rrf", show_default=True,
                     help="Comma-separated systems to score (engram, bm25, dense, rrf)."),
        click.option("--defaults", "defaults", is_flag=True,
                     help="Score Engram exactly as a user calls it, retrieve(q, config=RetrievalConfig(top_k=k)), "
                          "the k returned memories as a set; without it, its raw ranking."),
        click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Write the full report (summary and per-question rankings) here."),
        click.option("--config", "config", multiple=True, metavar="KEY=VALUE",
                     help="A RetrievalConfig setting for the engram system (repeatable), e.g. fusion=rrf."),
        click.option("--cache", "cache_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Embedding cache file [default: $ENGRAM_CACHE_DIR or ~/.cache/engram/embeddings.sqlite]."),
        click.option("--no-cache", is_flag=True, help="Embed everything afresh; nothing read or written."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _evaluate(path: Path, load: Any, *, granularity: str, k: str | None, session_k: str, index_roles: Any,
              systems: str, defaults: bool, json_out: Path | None, config: tuple[str, ...],
              cache_path: Path | None, no_cache: bool) -> None:
    from rich.console import Console
    from rich.progress import Progress

    from engram.embedders import default_embedder
    from engram.eval.cached_embedder import CachedEmbedder
    from engram.eval.runner import run
    from engram.ext import Embedder

    console = Console()
    if not console.is_terminal:
        console = Console(width=240)  # tables are wide; a pipe or file should not squeeze them
    try:
        cases = list(load())
    except (OSError, ValueError, KeyError) as exc:
        raise click.ClickException(f"cannot read {path}: {exc}") from exc
    if defaults and config:
        raise click.ClickException("--defaults scores the default configuration; drop --config")
    base = default_embedder()
    cached = None if no_cache else CachedEmbedder(base, cache_path)
    embedder: Embedder = cached if cached is not None else base
    try:
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("evaluating", total=len(cases))
            report = run(
                cases, embedder,
                systems=[s.strip() for s in systems.split(",") if s.strip()],
                k=_ks(k), session_k=_ks(session_k) or (5, 10), granularity=granularity,
                index_roles=index_roles, overrides=parse_overrides(config),
                mode="defaults" if defaults else "ranked",
                on_case=lambda n, case: progress.update(task, completed=n, description=case.question_id),
            )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        cache_stats = cached.stats() if cached is not None else None
        if cached is not None:
            cached.close()
    report["dataset"] = str(path)
    report["cache"] = cache_stats
    for table in render_tables(report):
        console.print(table)
    timing = report["timing"]
    latency = ", ".join(f"{s} {v['mean']:.1f} ms" for s, v in timing["retrieve_ms"].items())
    console.print(f"{timing['questions']} questions in {timing['wall_s']:.1f} s (indexing {timing['ingest_s']:.1f} s); "
                  f"mean retrieval: {latency}")
    if cache_stats is not None:
        console.print(f"embedding cache {cache_stats['path']}: {cache_stats['hits']} hits, "
                      f"{cache_stats['misses']} embedded, {cache_stats['entries']} entries")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
        console.print(f"wrote {json_out}")


@eval_group.command(name="longmemeval", help="LongMemEval retrieval protocol: Engram vs BM25, dense and their fusion.")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--granularity", type=click.Choice(["turn", "session"]), default="turn", show_default=True,
              help="Index each turn, or each session's turns joined into one document.")
@click.option("--session-k", default="5,10", show_default=True,
              help="Session-level cutoffs derived from turn rankings.")
@click.option("--index", "index", type=click.Choice(["user", "all"]), default="user", show_default=True,
              help="Index user turns only (the paper's default) or assistant turns too.")
@_common
def longmemeval(path: Path, granularity: str, k: str | None, session_k: str, limit: int | None, index: str,
                systems: str, defaults: bool, json_out: Path | None, config: tuple[str, ...],
                cache_path: Path | None, no_cache: bool) -> None:
    from engram.eval import longmemeval as adapter

    _evaluate(path, lambda: adapter.cases(path, limit=limit), granularity=granularity, k=k, session_k=session_k,
              index_roles=("user",) if index == "user" else None, systems=systems, defaults=defaults,
              json_out=json_out, config=config, cache_path=cache_path, no_cache=no_cache)


@eval_group.command(name="locomo", help="LoCoMo turn evidence recall: Engram vs BM25, dense and their fusion.")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_common
def locomo(path: Path, k: str | None, limit: int | None, systems: str, defaults: bool, json_out: Path | None,
           config: tuple[str, ...], cache_path: Path | None, no_cache: bool) -> None:
    from engram.eval import locomo as adapter

    _evaluate(path, lambda: adapter.cases(path, limit=limit), granularity="turn", k=k or "5,10,25",
              session_k="5,10", index_roles=None, systems=systems, defaults=defaults, json_out=json_out,
              config=config, cache_path=cache_path, no_cache=no_cache)
