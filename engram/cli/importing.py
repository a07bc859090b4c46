"""``engram import``: memories from a JSON Lines file, checked whole before anything is written.

Reading a file into rows (``_import_rows``) is kept apart from writing them, so another source
format only needs its own reader producing the same rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from engram.cli.common import db_option, open_memory
from engram.cli.output import at_terminal, plural
from engram.errors import EngramError

if TYPE_CHECKING:
    from pathlib import Path

    from engram.model import MemoryRecord

__all__ = ["import_"]


@click.command(name="import", help=(
    "Import memories from a JSON Lines file (one object per line). The whole file is checked first: "
    "one bad line (reported as FILE:LINE: field: problem) imports nothing. Rows already stored for "
    "their user (same id, or same content, kind and created_at) are skipped, so a re-run, or a run "
    "after a failure while writing, adds only what is missing. A line may bring its vector "
    "(\"vector\": [...], \"embedding_model\": the model that made it, which must be the store's): "
    "it is stored as it is instead of being embedded again."
), epilog="""\b
Example:
  echo '{"content": "Acme prefers NET30", "kind": "fact", "created_at": "2026-11-10T09:00:00Z"}' > m.jsonl
  engram import m.jsonl --user alice""")
@click.argument("path_text", metavar="PATH", type=click.Path(exists=True, dir_okay=False))
@click.option("--user", "user_id", default=None, help="Owner for lines that name none.")
@click.option("--batch", default=256, show_default=True, type=click.IntRange(1, 10_000),
              help="Memories per batch.")
@click.option("--from", "source", type=click.Choice(["engram", "mem0"]), default="engram", show_default=True,
              help="mem0: PATH is a Mem0 export (get_all JSON, {\"results\": [...]}); each memory comes in as a fact.")
@db_option
def import_(path_text: str, user_id: str | None, batch: int, db: str | None, source: str = "engram") -> None:
    from pathlib import Path

    from rich.progress import Progress

    path = Path(path_text)
    if source == "mem0":  # the export as Engram's JSON Lines, then the one import path below
        path = _mem0_as_jsonl(path, user_id)
    rows = _import_rows(path, user_id)  # before opening: a bad file must not even create the database
    with open_memory(db, create=True) as memory:
        fresh, skipped = _not_yet_stored(memory.store, rows)
        added = 0
        with Progress(transient=False, disable=not at_terminal()) as progress:
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
    click.echo(f"imported {plural(added, 'memory', 'memories')}, skipped {skipped} already stored")
    unmatched = sum(1 for _, item, _ in fresh if item.get("id") is None and item.get("created_at") is None)
    if unmatched:
        click.echo(f"note: {unmatched} rows name neither id nor created_at; a re-run cannot tell them from new ones")


def _mem0_as_jsonl(path: Path, user_id: str | None) -> Path:
    """A Mem0 export rewritten as a temporary JSON Lines file (removed when the command ends)."""
    import json
    import tempfile
    from pathlib import Path

    from engram.mem0_calls import from_export

    try:
        items = from_export(json.loads(path.read_text(encoding="utf-8")), default_user=user_id)
    except (ValueError, EngramError) as exc:
        raise click.ClickException(f"{path}: not a Mem0 export: {exc}") from exc
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as out:
        out.writelines(json.dumps(item, default=str) + "\n" for item in items)
    click.get_current_context().call_on_close(Path(out.name).unlink)
    return Path(out.name)


# One line of an import file: its number, the item as add_many takes it, the record it validated to.
_ImportRow = tuple[int, dict[str, Any], "MemoryRecord"]
_MAX_REPORTED = 20  # problems listed before the import gives up reading


#: Fields of a stored memory that the store sets, not a writer: dropped from an imported line.
_STORED_ONLY = ("recorded_at", "content_hash", "last_accessed_at", "access_count")


def _import_rows(path: Path, user_id: str | None) -> list[_ImportRow]:
    """Every non-blank line parsed and validated as ``add`` would; problems as ``FILE:LINE: field: problem``."""
    import json
    from datetime import UTC, datetime

    from engram.config import Limits
    from engram.errors import ValidationError
    from engram.ingest.given_vectors import VECTOR_FIELDS
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
        except RecursionError:
            problems.append(f"{path}:{number}: nested too deeply to read")
            continue
        if not isinstance(item, dict):
            problems.append(f"{path}:{number}: must be a JSON object, got {type(item).__name__}")
            continue
        for derived in _STORED_ONLY:  # a line of `engram list --json` imports as it is
            item.pop(derived, None)
        if user_id and "user_id" not in item:
            item["user_id"] = user_id
        try:  # a vector the line brings is checked against the store's embedder when written
            record = normalize({k: v for k, v in item.items() if k not in VECTOR_FIELDS}, limits=limits, now=now)
        except ValidationError as exc:
            hint = " (give --user, or a user_id on the line)" if exc.field == "user_id" and not user_id else ""
            problems.append(f"{path}:{number}: {exc}{hint}")
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
