"""``engram search``: ``Memory.retrieve`` with its filters, printed for a prompt, a person or a program."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from engram.cli.common import LOCAL_TIME, db_option, local_time, open_memory, user_option
from engram.config import RetrievalConfig

__all__ = ["explain", "search"]

DEFAULTS = RetrievalConfig()


@click.command(help="Retrieve what matters for a query, formatted for a prompt (or as JSON).", epilog="""\b
Examples:
  engram search "How does Acme pay?" --user alice
  engram search "what changed last week" --user alice --kind fact --tag billing --min-score 0.3
  engram search "Acme terms" --user alice --as-of 2026-11-01 --format json""")
@click.argument("query")
@user_option("Whose memory to search")
@click.option("--top-k", default=DEFAULTS.top_k, show_default=True, type=click.IntRange(1, 1000),
              help="How many memories at most.")
@click.option("--min-score", type=click.FloatRange(0, 1), default=DEFAULTS.min_score, show_default=True,
              help="Leave out memories scoring below this.")
@click.option("--kind", "kinds", multiple=True, help="Only this kind (repeatable: any of them).")
@click.option("--tag", "tags", multiple=True, help="Only memories carrying this tag (repeatable: all of them).")
@click.option("--session", "session_id", default=None, help="Only memories of this session.")
@click.option("--as-of", default=None,
              help=f"Answer as the memory stood at this time (what was current then): {LOCAL_TIME}.")
@click.option("--search-type", type=click.Choice(["hybrid", "semantic", "keyword"]), default="hybrid",
              show_default=True, help="Which candidate sources lead.")
@click.option("--now", default=None, help=f"Reference time for time expressions such as 'last week' (default: "
              f"now, at this machine's UTC offset, whose days 'today' and 'last week' are): {LOCAL_TIME}.")
@click.option("--format", "fmt", type=click.Choice(["policy", "policy_spec", "augmentation", "json", "explain"]),
              default="explain", show_default=True, help="Output format.")
@db_option
def search(query: str, user_id: str, top_k: int, min_score: float, kinds: tuple[str, ...],
           tags: tuple[str, ...], session_id: str | None, as_of: str | None, search_type: str, now: str | None,
           fmt: str, db: str | None) -> None:
    config = RetrievalConfig(top_k=top_k, search_type=search_type, min_score=min_score)
    with open_memory(db, create=False) as memory:
        asked = local_time(now) or datetime.now().astimezone()
        result = memory.retrieve(query, user_id=user_id, config=config, now=asked,
                                 session_id=session_id, kinds=kinds or None, tags=tags or None,
                                 as_of=local_time(as_of))
    if fmt == "json":
        import json

        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    elif fmt == "explain":
        click.echo(explain(result))
    else:
        click.echo(result.to_prompt(style=fmt))


def explain(result: Any) -> str:
    """One block per memory: score, content and why it was recalled."""
    meta = result.metadata
    lines = [f"{meta.included_results} of {meta.total_results} candidates in {meta.query_time_ms:.1f} ms "
             f"(query type {meta.query_type}, strategy {meta.strategy}, "
             f"weights {meta.config.get('weightsSource', 'default')})"]
    if meta.time_range is not None:
        span = meta.time_range
        said = f" ('{span.expression}')" if span.expression else ""
        lines.append(f"time range{said}: {span.start.isoformat()} .. {span.end.isoformat()}")
    if meta.meaning_without:
        lines.append("meaning read half without: " + ", ".join(meta.meaning_without))
    dropped = [(meta.below_min_score, "below min score"), (meta.dedup_removed, "duplicates"),
               (meta.mmr_removed, "replaced for diversity"), (meta.beyond_top_k, "beyond top k"),
               (meta.budget_removed, "over the token budget")]
    if any(n for n, _ in dropped):
        lines.append("left out: " + ", ".join(f"{n} {why}" for n, why in dropped if n))
    for i, entry in enumerate(result.memories, start=1):
        lines.append(f"{i}. [{entry.score:.3f}] ({entry.type}) {entry.content}")
        lines.append(f"   why: {'; '.join(entry.reasons) or '-'}")
    if meta.error:
        lines.append(f"error: {meta.error['code']} (fallback {meta.error['fallback']})")
    if meta.cut_stages:
        lines.append("cut at the deadline: " + ", ".join(meta.cut_stages))
    return "\n".join(lines)
