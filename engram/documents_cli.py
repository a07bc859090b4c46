"""``engram ingest`` and ``engram doc``: files in, one document version out, through ``Memory``'s methods."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from engram.cli.common import DB_HELP, LOCAL_TIME, local_time, open_memory
from engram.cli.output import at_terminal, plural, print_table
from engram.documents import STRATEGIES

if TYPE_CHECKING:
    from engram.ingest.files import FileResult
    from engram.memory import Memory

__all__ = ["doc_group", "ingest_command"]

USER_HELP = "Whose memory (default: $ENGRAM_USER)."


def _memory(db: str | None, *, create: bool) -> Memory:
    memory: Memory = open_memory(db, create=create)
    return memory


@click.command(name="ingest", help="Ingest files, directories (recursively) and glob patterns as versioned documents.",
               epilog="""\b
Example:
  engram ingest docs/ 'notes/**/*.md' --user alice --tag handbook""")
@click.argument("paths", nargs=-1, required=True)
@click.option("--user", "user_id", required=True, envvar="ENGRAM_USER", help=USER_HELP)
@click.option("--tag", "tags", multiple=True, help="A tag for every document and chunk (repeatable).")
@click.option("--topic", default=None, help="What the documents are about.")
@click.option("--note", default=None, help="A note kept with each version.")
@click.option("--provider", default=None, help="Who supplied the files.")
@click.option("--force", is_flag=True, help="Add a version even when the content is unchanged.")
@click.option("--follow-symlinks", is_flag=True,
              help="Follow symlinks that lead out of a directory or pattern being ingested (by default they fail).")
@click.option("--db", default=None, help=DB_HELP)
def ingest_command(paths: tuple[str, ...], user_id: str, tags: tuple[str, ...], topic: str | None,
                   note: str | None, provider: str | None, force: bool, follow_symlinks: bool,
                   db: str | None) -> None:
    from rich.progress import Progress

    with _memory(db, create=True) as memory, Progress(transient=True, disable=not at_terminal()) as bar:
        task = bar.add_task("ingesting", total=None)

        def advance(result: FileResult, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=f"ingesting {done}/{total}")

        report = memory.ingest(paths, user_id=user_id, tags=tags, topic=topic, note=note, provider=provider,
                               force=force, progress=advance, follow_symlinks=follow_symlinks)
    rows = [(result.path, result.status, result.version or "-", result.chunks or "-", result.reason or "")
            for result in report.files]
    print_table(("file", "status", "version", "chunks", "reason"), rows,
                title=f"ingested in {report.seconds:.2f} s")
    summary = ", ".join(f"{n} {status}" for status, n in report.counts.items() if n)
    # On a pipe the summary goes to stderr, leaving stdout one line per file.
    click.echo(f"{summary or 'nothing to ingest'}; {plural(report.documents_added, 'version')}, "
               f"{plural(report.chunks_added, 'chunk')} added", err=not at_terminal())
    if report.failed:
        raise click.exceptions.Exit(1)


@click.group(name="doc", help="Retrieve ingested documents.")
def doc_group() -> None:
    pass


@doc_group.command(name="get", help="Print the one document version the description selects.", epilog="""\b
Example:
  engram doc get --user alice --filename memory_storage.md --as-of 2026-11-01""")
@click.option("--user", "user_id", required=True, envvar="ENGRAM_USER", help=USER_HELP)
@click.option("--filename", default=None, help="Basename of the file, e.g. memory_storage.md.")
@click.option("--topic", default=None, help="What the document is about.")
@click.option("--note", default=None, help="Notes that describe it.")
@click.option("--provider", default=None, help="Who supplied it.")
@click.option("--query", default=None, help="An explicit search query (overrides the fields above).")
@click.option("--tag", "tags", multiple=True, help="A tag the document must carry (repeatable).")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="latest", show_default=True,
              help="Which version to pick.")
@click.option("--as-of", default=None,
              help=f"With latest: the newest version ingested at or before this time (none was: the newest of all, as "
                   f"the document specification falls back): {LOCAL_TIME}.")
@click.option("--k", default=50, show_default=True, help="Candidates to consider.")
@click.option("--db", default=None, help=DB_HELP)
def doc_get(user_id: str, filename: str | None, topic: str | None, note: str | None, provider: str | None,
            query: str | None, tags: tuple[str, ...], strategy: str, as_of: str | None, k: int,
            db: str | None) -> None:
    meta = {"filename": filename, "topic": topic, "note": note, "provider": provider, "query": query,
            "tags": list(tags)}
    with _memory(db, create=False) as memory:
        document = memory.get_document({key: value for key, value in meta.items() if value},
                                       user_id=user_id, k=k, strategy=strategy, as_of=local_time(as_of))
    click.echo(document.content)


@doc_group.command(name="versions", help=(
    "List every stored version of a file (by filename or doc_key). At a terminal: a table; piped: one "
    "tab-separated line per version (version, ingested_at, chars, doc_key, path, memory id)."
), epilog="""\b
Example:
  engram doc versions memory_storage.md --user alice""")
@click.argument("name")
@click.option("--user", "user_id", required=True, envvar="ENGRAM_USER", help=USER_HELP)
@click.option("--db", default=None, help=DB_HELP)
def doc_versions(name: str, user_id: str, db: str | None) -> None:
    with _memory(db, create=False) as memory:
        versions = memory.document_versions(name, user_id=user_id)
    if not versions:
        raise click.ClickException(f"no ingested document named {name!r} for user {user_id!r}")
    rows = [(doc.version or "-", doc.ingested_at.isoformat(), len(doc.content), doc.doc_key or "-", doc.path,
             doc.memory_id) for doc in versions]
    print_table(("version", "ingested_at", "chars", "doc_key", "path", "memory id"), rows,
                title=f"{name}: {plural(len(versions), 'version')}")
