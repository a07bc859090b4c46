"""``engram``: a thin command line over the ``Memory`` facade."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engram.config import RetrievalConfig
from engram.errors import EngramError

if TYPE_CHECKING:
    from engram.model import MemoryRecord

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


def local_time(value: str | None) -> str | None:
    """A date or a time as people type it: without an offset it is this machine's local time.

    Anything that does not parse is passed on unchanged, for the typed error that names the field.
    """
    if value is None:
        return None
    from datetime import datetime

    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # a naive datetime is taken as local time, given its offset
    return parsed.isoformat()


@cli.command(help="Store one memory.")
@click.argument("content")
@click.option("--user", "user_id", required=True, help="Owner of the memory.")
@click.option("--kind", default="message", show_default=True, help="message, fact, episode, procedure, summary...")
@click.option("--role", default=None, help="user, assistant, system, tool or a speaker name.")
@click.option("--session", "session_id", default=None, help="Session the memory came from.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--entity", "entities", multiple=True, help="A canonical entity id such as customer:acme (repeatable).")
@click.option("--importance", type=float, default=None, help="Importance in [0, 1].")
@click.option("--created-at", default=None,
              help="When it happened: ISO-8601; a date (2026-11-10) or a time without offset is local time.")
@click.option("--db", default=None, help=DB_HELP)
def add(content: str, user_id: str, kind: str, role: str | None, session_id: str | None,
        tags: tuple[str, ...], entities: tuple[str, ...], importance: float | None,
        created_at: str | None, db: str | None) -> None:
    with open_memory(db, create=True) as memory:
        record = memory.add(
            content, user_id=user_id, kind=kind, role=role, session_id=session_id, tags=list(tags),
            entities=list(entities), importance=importance, created_at=local_time(created_at),
        )
        click.echo(record.id)


@cli.command(name="import", help=(
    "Import memories from a JSON Lines file (one object per line). The whole file is checked first: "
    "one bad line (reported as FILE:LINE: field: problem) imports nothing. Rows already stored for "
    "their user (same id, or same content, kind and created_at) are skipped, so a re-run, or a run "
    "after a failure while writing, adds only what is missing."
))
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--user", "user_id", default=None, help="Owner for lines that name none.")
@click.option("--batch", default=256, show_default=True, type=click.IntRange(1, 10_000),
              help="Memories per batch.")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--from", "source", type=click.Choice(["engram", "mem0"]), default="engram", show_default=True,
              help="mem0: FILE is a Mem0 export (get_all JSON, {\"results\": [...]}); each memory comes in as a fact.")
def import_(path: Path, user_id: str | None, batch: int, db: str | None, source: str = "engram") -> None:
    from rich.progress import Progress

    if source == "mem0":  # the export as Engram's JSON Lines, then the one import path below
        import tempfile

        from engram.mem0 import from_export

        try:
            items = from_export(json.loads(path.read_text(encoding="utf-8")), default_user=user_id)
        except (ValueError, EngramError) as exc:
            raise click.ClickException(f"{path}: not a Mem0 export: {exc}") from exc
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as out:
            out.writelines(json.dumps(item, default=str) + "\n" for item in items)
        click.get_current_context().call_on_close(Path(out.name).unlink)
        path = Path(out.name)
    rows = _import_rows(path, user_id)  # before opening: a bad file must not even create the database
    with open_memory(db, create=True) as memory:
        fresh, skipped = _not_yet_stored(memory.store, rows)
        added = 0
        with Progress(transient=False) as progress:
            task = progress.add_task("importing", total=len(fresh))
            for start in range(0, len(fresh), batch):
                chunk = fresh[start : start + batch]
                try:
                    added += len(memory.add_many([item for _, item, _ in chunk]))
                except EngramError as exc:
                    raise click.ClickException(
                        f"{path}:{chunk[0][0]}-{chunk[-1][0]}: {exc}; {added} rows before line {chunk[0][0]} "
                        "were imported: fix the problem and run the import again (stored rows are skipped)"
                    ) from exc
                progress.update(task, advance=len(chunk))
    click.echo(f"imported {added} memories, skipped {skipped} already stored")
    unmatched = sum(1 for _, item, _ in fresh if item.get("id") is None and item.get("created_at") is None)
    if unmatched:
        click.echo(f"note: {unmatched} rows name neither id nor created_at; a re-run cannot tell them from new ones")


# One line of an import file: its number, the item as add_many takes it, the record it validated to.
_ImportRow = tuple[int, dict[str, Any], "MemoryRecord"]
_MAX_REPORTED = 20  # problems listed before the import gives up reading


def _import_rows(path: Path, user_id: str | None) -> list[_ImportRow]:
    """Every non-blank line parsed and validated as ``add`` would; problems as ``FILE:LINE: field: problem``."""
    from datetime import UTC, datetime

    from engram.config import Limits
    from engram.errors import ValidationError
    from engram.ingest.normalize import normalize

    limits, now = Limits(), datetime.now(UTC)
    rows: list[_ImportRow] = []
    problems: list[str] = []
    first_line_of: dict[str, int] = {}
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if len(problems) >= _MAX_REPORTED:
            problems.append(f"{path}: stopped after {_MAX_REPORTED} problems")
            break
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{path}:{number}: not UTF-8 text (byte {exc.start + 1})")
            continue
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{number}: not JSON: {exc.msg} at column {exc.colno}")
            continue
        if not isinstance(item, dict):
            problems.append(f"{path}:{number}: must be a JSON object, got {type(item).__name__}")
            continue
        if user_id and "user_id" not in item:
            item["user_id"] = user_id
        try:
            record = normalize(item, limits=limits, now=now)
        except ValidationError as exc:
            problems.append(f"{path}:{number}: {exc}")
            continue
        if item.get("id") is not None:
            if record.id in first_line_of:
                problems.append(f"{path}:{number}: id: repeats the id of line {first_line_of[record.id]}")
                continue
            first_line_of[record.id] = number
        rows.append((number, item, record))
    if problems:
        raise click.ClickException("\n".join([*problems, "nothing imported"]))
    return rows


def _not_yet_stored(store: Any, rows: list[_ImportRow]) -> tuple[list[_ImportRow], int]:
    """The rows to write, and how many were skipped: a row is stored already when its user has its
    id, or a memory with its content hash, kind and created_at (for rows that give created_at)."""
    from engram.model import STATUSES, Filters

    by_user: dict[str, list[_ImportRow]] = {}
    for row in rows:
        by_user.setdefault(row[2].user_id, []).append(row)
    stored_ids: set[tuple[str, str]] = set()
    stored_keys: set[tuple[str, str, str, Any]] = set()
    for user, mine in by_user.items():
        given = [record.id for _, item, record in mine if item.get("id") is not None]
        for start in range(0, len(given), 500):
            stored_ids.update((user, r.id) for r in store.fetch(user, given[start : start + 500]))
        times = [record.created_at for _, item, record in mine if item.get("created_at") is not None]
        if not times:
            continue
        # One scan of the user's memories over the file's time span, whatever their status.
        span = Filters(statuses=STATUSES, created_after=min(times), created_before=max(times))
        offset = 0
        while page := store.list(user, span, limit=10_000, offset=offset):
            stored_keys.update((user, r.content_hash, r.kind, r.created_at) for r in page)
            offset += len(page)
    fresh = [
        row for row in rows
        if (row[2].user_id, row[2].id) not in stored_ids
        and (row[1].get("created_at") is None
             or (row[2].user_id, row[2].content_hash, row[2].kind, row[2].created_at) not in stored_keys)
    ]
    return fresh, len(rows) - len(fresh)


@cli.command(help="Retrieve what matters for a query, formatted for a prompt (or as JSON).")
@click.argument("query")
@click.option("--user", "user_id", required=True, help="Whose memory to search.")
@click.option("--top-k", default=8, show_default=True, help="How many memories at most.")
@click.option("--search-type", type=click.Choice(["hybrid", "semantic", "keyword"]), default="hybrid",
              show_default=True, help="Which candidate sources lead.")
@click.option("--now", default=None,
              help="Reference time for time expressions: ISO-8601; without an offset, local time.")
@click.option("--format", "fmt", type=click.Choice(["policy", "augmentation", "json", "explain"]),
              default="explain", show_default=True, help="Output format.")
@click.option("--db", default=None, help=DB_HELP)
def search(query: str, user_id: str, top_k: int, search_type: str, now: str | None, fmt: str,
           db: str | None) -> None:
    config = RetrievalConfig(top_k=top_k, search_type=search_type)
    with open_memory(db, create=False) as memory:
        result = memory.retrieve(query, user_id=user_id, config=config, now=local_time(now))
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
