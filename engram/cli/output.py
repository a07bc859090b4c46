"""How commands print: a table for a person at a terminal, plain lines for a pipe.

A table wrapped at 80 columns is unreadable once piped into ``cut``, ``grep`` or a file, so when
stdout is not a terminal rows are printed as tab-separated values (tabs and newlines inside a value
escaped as ``\\t`` and ``\\n``), one row per line, no header, and titles and summaries go to
stderr; ``--json`` prints JSON Lines. ``engram --help`` loads this module, so rich is imported only
when a table is drawn and json only when JSON is printed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from engram.model import HistoryEvent, MemoryRecord

__all__ = ["HISTORY_COLUMNS", "LIST_COLUMNS", "at_terminal", "plural", "print_history", "print_json_lines",
           "print_record", "print_records", "print_table", "tsv_cell"]

#: The columns of ``engram list``, in the order its piped lines give them.
LIST_COLUMNS = ("id", "created_at", "kind", "status", "tags", "content")
#: The columns of ``engram history``, likewise.
HISTORY_COLUMNS = ("at", "event", "fields", "before", "after")


def at_terminal() -> bool:
    """True when a person reads stdout; False for a pipe, a file, or a test runner."""
    return sys.stdout.isatty()


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 version``, ``2 versions``: headers and summaries read as sentences."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def tsv_cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None) -> None:
    """A rich table at a terminal; elsewhere tab-separated lines, no header, the title on stderr."""
    if not at_terminal():
        if title:
            click.echo(title, err=True)
        for row in rows:
            click.echo("\t".join(tsv_cell(value) for value in row))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if value is None else str(value) for value in row))
    Console().print(table)


def print_json_lines(items: Sequence[Mapping[str, Any]]) -> None:
    import json

    for item in items:
        click.echo(json.dumps(item, ensure_ascii=False, default=str))


def _when(moment: datetime, terminal: bool) -> str:
    # A person reads local time to the minute; a pipe gets the exact stored instant.
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if terminal else moment.isoformat()


def print_records(records: Sequence[MemoryRecord], *, as_json: bool) -> None:
    """``engram list``: one row per memory, in the order given."""
    if as_json:
        print_json_lines([record.to_dict() for record in records])
        return
    terminal = at_terminal()
    rows = [(r.id, _when(r.created_at, terminal), r.kind, r.status, ",".join(r.tags), r.content) for r in records]
    print_table(LIST_COLUMNS, rows)


def _field(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, Mapping):
        import json

        return json.dumps(dict(value), ensure_ascii=False, default=str)
    return str(value)


def print_history(events: Sequence[HistoryEvent], *, as_json: bool) -> None:
    """``engram history``: one row per change, oldest first."""
    if as_json:
        print_json_lines([{"memory_id": e.memory_id, "event": e.event, "at": e.at.isoformat(), "before": e.before,
                           "after": e.after, "fields": list(e.fields)} for e in events])
        return
    terminal = at_terminal()
    rows = [(_when(e.at, terminal), e.event, ",".join(e.fields), e.before, e.after) for e in events]
    print_table(HISTORY_COLUMNS, rows)


def print_record(record: MemoryRecord, links: Sequence[Any] = (), *, as_json: bool) -> None:
    """``engram get``: every field that has a value, then the memory's links."""
    if as_json:
        print_json_lines([record.to_dict()])
        return
    rows = [(name, _field(value)) for name, value in record.to_dict().items() if value not in (None, "", [], {})]
    # A link reads from this memory: "supersedes -> ID" it points at, "part_of <- ID" pointing here.
    rows += [("link", f"{link.type} -> {link.to_id}" if link.from_id == record.id else f"{link.type} <- {link.from_id}")
             for link in links]
    if not at_terminal():
        for name, value in rows:
            click.echo(f"{name}\t{tsv_cell(value)}")
        return
    from rich.console import Console
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for name, value in rows:
        grid.add_row(name, value)
    Console().print(grid)
