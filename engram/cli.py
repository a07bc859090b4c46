"""``engram``: a thin command line over the ``Memory`` facade."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import click

from engram.config import RetrievalConfig
from engram.errors import EngramError

__all__ = ["cli", "db_target", "existing_db", "main", "open_memory"]

DB_HELP = "SQLite file or postgresql:// URL (default: $ENGRAM_DB or ./engram.db)."
DEFAULT_DB = "engram.db"


def db_target(db: str | None) -> str:
    """The store a command names: ``--db``, else ``$ENGRAM_DB``, else ``./engram.db``."""
    return db or os.environ.get("ENGRAM_DB") or DEFAULT_DB


def existing_db(db: str | None) -> str:
    """The store a command that only reads (or changes what exists) may open: a SQLite file must
    already exist. Opening one creates it, so a mistyped path would otherwise answer from a new,
    empty database and exit 0; only commands that write (add, import, ingest, keys create, mcp)
    create one."""
    target = db_target(db)
    if target == ":memory:" or target.startswith(("postgresql://", "postgres://")):
        return target
    if not Path(target).is_file():
        raise click.ClickException(
            f"no Engram database at {target} (check --db or $ENGRAM_DB); "
            "only commands that write (add, import, ingest, keys create) create one"
        )
    return target


def open_memory(db: str | None, *, create: bool) -> Any:
    """A ``Memory`` on the command's store; ``create=False`` refuses a SQLite file that does not exist."""
    from engram.memory import Memory

    return Memory(db_target(db) if create else existing_db(db))


@click.group(help="Engram: memory retrieval for LLM agents.")
@click.version_option(package_name="engram-memory")
def cli() -> None:
    pass


@cli.command(help="Store one memory.")
@click.argument("content")
@click.option("--user", "user_id", required=True, help="Owner of the memory.")
@click.option("--kind", default="message", show_default=True, help="message, fact, episode, procedure, summary...")
@click.option("--role", default=None, help="user, assistant, system, tool or a speaker name.")
@click.option("--session", "session_id", default=None, help="Session the memory came from.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--entity", "entities", multiple=True, help="A canonical entity id such as customer:acme (repeatable).")
@click.option("--importance", type=float, default=None, help="Importance in [0, 1].")
@click.option("--created-at", default=None, help="When it happened (ISO-8601 with offset).")
@click.option("--db", default=None, help=DB_HELP)
def add(content: str, user_id: str, kind: str, role: str | None, session_id: str | None,
        tags: tuple[str, ...], entities: tuple[str, ...], importance: float | None,
        created_at: str | None, db: str | None) -> None:
    with open_memory(db, create=True) as memory:
        record = memory.add(
            content, user_id=user_id, kind=kind, role=role, session_id=session_id, tags=list(tags),
            entities=list(entities), importance=importance, created_at=created_at,
        )
        click.echo(record.id)


@cli.command(name="import", help="Import memories from a JSON Lines file (one object per line).")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--user", "user_id", default=None, help="Owner for lines that name none.")
@click.option("--batch", default=256, show_default=True, help="Memories per batch.")
@click.option("--db", default=None, help=DB_HELP)
def import_(path: Path, user_id: str | None, batch: int, db: str | None) -> None:
    from rich.progress import Progress

    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    added = 0
    with open_memory(db, create=True) as memory, Progress(transient=False) as progress:
        task = progress.add_task("importing", total=len(lines))
        for start in range(0, len(lines), batch):
            items = []
            for number, line in enumerate(lines[start : start + batch], start=start + 1):
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise click.ClickException(f"line {number}: not JSON: {exc}") from exc
                if user_id and "user_id" not in item:
                    item["user_id"] = user_id
                items.append(item)
            added += len(memory.add_many(items))
            progress.update(task, advance=len(items))
    click.echo(f"imported {added} memories")


@cli.command(help="Retrieve what matters for a query, formatted for a prompt (or as JSON).")
@click.argument("query")
@click.option("--user", "user_id", required=True, help="Whose memory to search.")
@click.option("--top-k", default=8, show_default=True, help="How many memories at most.")
@click.option("--search-type", type=click.Choice(["hybrid", "semantic", "keyword"]), default="hybrid",
              show_default=True, help="Which candidate sources lead.")
@click.option("--now", default=None, help="Reference time for time expressions (ISO-8601).")
@click.option("--format", "fmt", type=click.Choice(["policy", "augmentation", "json", "explain"]),
              default="explain", show_default=True, help="Output format.")
@click.option("--db", default=None, help=DB_HELP)
def search(query: str, user_id: str, top_k: int, search_type: str, now: str | None, fmt: str,
           db: str | None) -> None:
    config = RetrievalConfig(top_k=top_k, search_type=search_type)
    with open_memory(db, create=False) as memory:
        result = memory.retrieve(query, user_id=user_id, config=config, now=now)
    if fmt == "json":
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
    for i, entry in enumerate(result.memories, start=1):
        lines.append(f"{i}. [{entry.score:.3f}] ({entry.type}) {entry.content}")
        lines.append(f"   why: {'; '.join(entry.reasons) or '-'}")
    if meta.error:
        lines.append(f"error: {meta.error['code']} (fallback {meta.error['fallback']})")
    return "\n".join(lines)


@cli.command(help="Show what a store holds.")
@click.option("--db", default=None, help=DB_HELP)
def stats(db: str | None) -> None:
    with open_memory(db, create=False) as memory:
        click.echo(json.dumps(dict(memory.stats()), indent=2))


@cli.command(name="forget-user", help="Delete every memory of one user, and nothing of anyone else.")
@click.argument("user_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--db", default=None, help=DB_HELP)
def forget_user(user_id: str, yes: bool, db: str | None) -> None:
    existing_db(db)  # before asking: a mistyped path has nothing to delete
    if not yes and not click.confirm(f"Delete every memory of {user_id!r}?", default=False):
        click.echo("nothing deleted")
        return
    with open_memory(db, create=False) as memory:
        click.echo(f"deleted {memory.forget_user(user_id)} memories of {user_id}")


def main() -> None:
    try:
        cli(standalone_mode=True)
    except EngramError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except sqlite3.Error as exc:
        # A store should raise StoreError; a raw one (a file that is not a database, met while
        # opening it) still deserves one line rather than a traceback.
        click.echo(f"error: sqlite: {exc}", err=True)
        sys.exit(2)


def _register_extras() -> None:
    # Commands of other modules attach themselves here so cli.py stays a thin mirror.
    from engram.documents_cli import doc_group, ingest_command
    from engram.stores.copy import copy_command
    from engram.tune_cli import tune_command

    cli.add_command(copy_command)
    cli.add_command(tune_command)
    cli.add_command(ingest_command)
    cli.add_command(doc_group)
    try:
        from engram.service.cli import keys_group, mcp_command, serve_command
    except ImportError:  # the service extra is not installed
        pass
    else:
        cli.add_command(serve_command)
        cli.add_command(keys_group)
        cli.add_command(mcp_command)
    try:
        from engram.eval.cli import eval_group
    except ImportError:
        return
    cli.add_command(eval_group)


_register_extras()
