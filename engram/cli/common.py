"""What every ``engram`` command shares: which store it opens, the user it acts for, times as typed.

Nothing here imports the engine: ``engram --help`` loads this module, and must not pay for numpy.
Commands that neither embed nor rank (``list``, ``get``, ``history``, ``delete``, ``stats``,
``forget-user``) open the store alone (:func:`open_store`): ``Memory`` would import the retrieval
engine, the ingest pipeline and the model's runtime, half a second a call for nothing they use.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, time
from typing import Any, TypeVar

import click

__all__ = ["DB_HELP", "LOCAL_TIME", "checked_user", "db_option", "db_target", "existing_db", "local_time",
           "open_memory", "open_store", "user_option"]

F = TypeVar("F", bound=Callable[..., Any])

DB_HELP = "SQLite file or postgresql:// URL (default: $ENGRAM_DB or ./engram.db)."
DEFAULT_DB = "engram.db"
#: Said in the --help of every option that takes a time.
LOCAL_TIME = "ISO-8601; a date (2026-11-10) or a time without an offset is this machine's local time"


def db_target(db: str | None) -> str:
    """The store a command names: ``--db``, else ``$ENGRAM_DB``, else ``./engram.db``."""
    return db or os.environ.get("ENGRAM_DB") or DEFAULT_DB


def existing_db(db: str | None) -> str:
    """The store a command that only reads (or changes what exists) may open: a SQLite file must
    already exist. Opening one creates it, so a mistyped path would otherwise answer from a new,
    empty database and exit 0; only commands that write (add, import, ingest, keys create, mcp)
    create one."""
    from engram.stores.open import is_url  # the engine only once a command runs

    target = db_target(db)
    if target == ":memory:" or is_url(target):
        return target
    if not os.path.isfile(target):
        raise click.ClickException(
            f"no Engram database at {target} (check --db or $ENGRAM_DB); "
            "only commands that write (add, import, ingest, keys create) create one"
        )
    return target


def open_memory(db: str | None, *, create: bool) -> Any:
    """A ``Memory`` on the command's store; ``create=False`` refuses a SQLite file that does not exist."""
    from engram.memory import Memory

    return Memory(db_target(db) if create else existing_db(db))


@contextmanager
def open_store(db: str | None) -> Iterator[Any]:
    """The command's existing store alone, closed on leaving: what ``Memory``'s reads and deletes call
    through to, without the engine or the model."""
    from engram.stores.open import open_store as open_target

    store = open_target(existing_db(db))
    try:
        yield store
    finally:
        store.close()


def checked_user(user_id: str) -> str:
    """``--user`` checked as ``Memory`` checks it (ValidationError naming the field)."""
    from engram.config import Limits
    from engram.validate import user_id as valid_user

    return valid_user(user_id, Limits())


def db_option(command: F) -> F:
    return click.option("--db", default=None, help=DB_HELP)(command)


def user_option(what: str) -> Callable[[F], F]:
    """``--user``, required, falling back to ``$ENGRAM_USER`` as ``ingest``, ``doc`` and ``tune`` do."""
    return click.option("--user", "user_id", required=True, envvar="ENGRAM_USER",
                        help=f"{what} (default: $ENGRAM_USER).")


def local_time(value: str | None, *, end_of_day: bool = False) -> str | None:
    """A date or a time as people type it: without an offset it is this machine's local time.

    A bare date is the start of that day, or with ``end_of_day`` its last microsecond, so that
    ``--until 2026-11-10`` includes the 10th. Anything that does not parse is passed on unchanged,
    for the typed error that names the field.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return value
    if end_of_day and len(text) == 10:  # YYYY-MM-DD: fromisoformat gave midnight
        parsed = datetime.combine(parsed.date(), time.max)
    if parsed.tzinfo is None:
        try:
            parsed = parsed.astimezone()  # a naive datetime is taken as local time, given its offset
        except (ValueError, OverflowError):  # at the ends of the calendar ("0001-01-01" east of UTC)
            return value
    return parsed.isoformat()
