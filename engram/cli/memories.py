"""``engram add``, ``list``, ``get``, ``history``, ``update``, ``delete``, ``stats``, ``forget-user`` and
``upgrade``: one memory at a time. ``add``, ``update`` and ``upgrade`` are thin calls of the ``Memory``
method of the same name (they may embed); the others call the store those methods call through to
(:func:`.common.open_store`)."""

from __future__ import annotations

from typing import Any

import click

from engram.cli.common import (
    LOCAL_TIME,
    checked_user,
    db_option,
    existing_db,
    local_time,
    open_memory,
    open_store,
    user_option,
)
from engram.cli.output import (
    HISTORY_COLUMNS,
    LIST_COLUMNS,
    at_terminal,
    plural,
    print_history,
    print_record,
    print_records,
)
from engram.model import STATUSES

__all__ = ["add", "delete", "forget_user", "get", "history", "list_memories", "stats", "update", "upgrade"]

JSON_HELP = "Print JSON (one object per line) instead of a table or tab-separated lines."


@click.command(help="Store one memory and print its id.", epilog="""\b
Example:
  engram add "Acme prefers NET30 payment terms" --user alice --kind fact --created-at 2026-11-10""")
@click.argument("content")
@user_option("Owner of the memory")
@click.option("--kind", default="message", show_default=True, help="message, fact, episode, procedure, summary...")
@click.option("--role", default=None, help="user, assistant, system, tool or a speaker name.")
@click.option("--session", "session_id", default=None, help="Session the memory came from.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--entity", "entities", multiple=True, help="A canonical entity id such as customer:acme (repeatable).")
@click.option("--importance", type=float, default=None, help="Importance in [0, 1].")
@click.option("--created-at", default=None, help=f"When it happened: {LOCAL_TIME}.")
@db_option
def add(content: str, user_id: str, kind: str, role: str | None, session_id: str | None,
        tags: tuple[str, ...], entities: tuple[str, ...], importance: float | None,
        created_at: str | None, db: str | None) -> None:
    with open_memory(db, create=True) as memory:
        record = memory.add(
            content, user_id=user_id, kind=kind, role=role, session_id=session_id, tags=list(tags),
            entities=list(entities), importance=importance, created_at=local_time(created_at),
        )
        click.echo(record.id)


@click.command(name="list", help=(
    "List a user's memories, newest first. At a terminal: a table; piped: one tab-separated line per "
    f"memory ({', '.join(LIST_COLUMNS)}); --json: the full records as JSON Lines."
), epilog="""\b
Examples:
  engram list --user alice --kind fact --since 2026-11-01
  engram list --user alice --status superseded --tag billing --json | jq -r .content
  engram list --user alice --limit 50 --offset 50        # the second page""")
@user_option("Whose memories")
@click.option("--kind", "kinds", multiple=True, help="Only this kind (repeatable: any of them).")
@click.option("--tag", "tags", multiple=True, help="Only memories carrying this tag (repeatable: all of them).")
@click.option("--session", "session_id", default=None, help="Only memories of this session.")
@click.option("--status", "statuses", multiple=True, type=click.Choice([*STATUSES, "all"]),
              help="Only this status (repeatable; default active; all: every status).")
@click.option("--since", default=None, help=f"Created at or after this time: {LOCAL_TIME}.")
@click.option("--until", default=None, help=f"Created at or before this time: {LOCAL_TIME}; a date includes that day.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="Memories per page.")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0), help="Memories to skip (paging).")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@db_option
def list_memories(user_id: str, kinds: tuple[str, ...], tags: tuple[str, ...], session_id: str | None,
                  statuses: tuple[str, ...], since: str | None, until: str | None, limit: int, offset: int,
                  as_json: bool, db: str | None) -> None:
    filters: dict[str, Any] = {
        "kinds": kinds or None, "tags_all": tags, "session_id": session_id,
        "statuses": STATUSES if "all" in statuses else statuses or ("active",),
        "created_after": local_time(since), "created_before": local_time(until, end_of_day=True),
    }
    from engram.validate import as_filters

    with open_store(db) as store:
        records = store.list(checked_user(user_id), as_filters(filters), limit=limit, offset=offset)
    print_records(records, as_json=as_json)
    if at_terminal() and not as_json:
        more = f"; more with --offset {offset + limit}" if len(records) == limit else ""
        click.echo(f"{plural(len(records), 'memory', 'memories')} from {offset + 1 if records else offset}{more}",
                   err=True)


@click.command(help="Show one memory: every field that has a value, and its links.", epilog="""\b
Example:
  engram get 01JC3Z8W6Q2M4T5V7X9Y0A1B2C --user alice --json""")
@click.argument("memory_id", metavar="ID")
@user_option("Owner of the memory")
@click.option("--json", "as_json", is_flag=True, help="Print the record as one JSON object.")
@db_option
def get(memory_id: str, user_id: str, as_json: bool, db: str | None) -> None:
    with open_store(db) as store:
        record = _get(store, memory_id, user_id)
        links = [] if as_json else store.links(checked_user(user_id), memory_id)
    print_record(record, links, as_json=as_json)


@click.command(help=(
    "Show every change to one memory, oldest first: add, update, supersede, restore, delete, with when, the "
    f"fields changed and the content before and after. Piped: one tab-separated line per change "
    f"({', '.join(HISTORY_COLUMNS)}); --json: JSON Lines. A deleted memory keeps its changes but not their text."
), epilog="""\b
Example:
  engram history 01JC3Z8W6Q2M4T5V7X9Y0A1B2C --user alice --json""")
@click.argument("memory_id", metavar="ID")
@user_option("Owner of the memory")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@db_option
def history(memory_id: str, user_id: str, as_json: bool, db: str | None) -> None:
    with open_store(db) as store:
        events = store.history(checked_user(user_id), memory_id)
        if not events:  # a memory stored before the log began has none, and is still found
            _get(store, memory_id, user_id)
    print_history(events, as_json=as_json)


def _get(store: Any, memory_id: str, user_id: str) -> Any:
    """The memory from ``store`` (``Memory.get``'s read), or the one line saying there is none."""
    record = store.get(checked_user(user_id), memory_id)
    if record is None:
        raise click.ClickException(f"no memory {memory_id} for user {user_id}")
    return record


@click.command(help="Change fields of one memory and show the result; a new content is embedded again.",
               epilog="""\b
Examples:
  engram update 01JC3Z8W6Q2M4T5V7X9Y0A1B2C --user alice --content "Acme pays NET45"
  engram update 01JC3Z8W6Q2M4T5V7X9Y0A1B2C --user alice --tag billing --tag acme --importance 0.9""")
@click.argument("memory_id", metavar="ID")
@user_option("Owner of the memory")
@click.option("--content", default=None, help="The new text.")
@click.option("--kind", default=None, help="The new kind.")
@click.option("--role", default=None, help="The new role.")
@click.option("--session", "session_id", default=None, help="The new session.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable): the tags given replace the old ones.")
@click.option("--no-tags", is_flag=True, help="Remove every tag.")
@click.option("--entity", "entities", multiple=True,
              help="A canonical entity id (repeatable): the entities given replace the old ones.")
@click.option("--importance", type=float, default=None, help="Importance in [0, 1].")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="The new status (archived hides it).")
@click.option("--created-at", default=None, help=f"When it happened: {LOCAL_TIME}.")
@click.option("--json", "as_json", is_flag=True, help="Print the updated record as one JSON object.")
@db_option
def update(memory_id: str, user_id: str, content: str | None, kind: str | None, role: str | None,
           session_id: str | None, tags: tuple[str, ...], no_tags: bool, entities: tuple[str, ...],
           importance: float | None, status: str | None, created_at: str | None, as_json: bool,
           db: str | None) -> None:
    if tags and no_tags:
        raise click.UsageError("give --tag or --no-tags, not both")
    given = {"content": content, "kind": kind, "role": role, "session_id": session_id, "importance": importance,
             "status": status, "created_at": local_time(created_at),
             "tags": [] if no_tags else list(tags) or None, "entities": list(entities) or None}
    changes = {name: value for name, value in given.items() if value is not None}
    if not changes:
        raise click.UsageError("nothing to change: give at least one of --content, --kind, --role, --session, "
                               "--tag, --no-tags, --entity, --importance, --status, --created-at")
    with open_memory(db, create=False) as memory:
        _get(memory.store, memory_id, user_id)
        record = memory.update(memory_id, user_id=user_id, **changes)
    print_record(record, as_json=as_json)


@click.command(help="Delete one memory (asks first unless --yes). Deleting a fact's newest version makes the "
               "one it superseded current again.", epilog="""\b
Example:
  engram delete 01JC3Z8W6Q2M4T5V7X9Y0A1B2C --user alice --yes""")
@click.argument("memory_id", metavar="ID")
@user_option("Owner of the memory")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@db_option
def delete(memory_id: str, user_id: str, yes: bool, db: str | None) -> None:
    from engram.ingest import truth

    with open_store(db) as store:
        record = _get(store, memory_id, user_id)
        preview = record.content if len(record.content) <= 60 else record.content[:57] + "..."
        if not yes and not click.confirm(f"Delete {record.kind} {memory_id} ({preview!r})?", default=False):
            click.echo("nothing deleted")
            return
        truth.delete(store, checked_user(user_id), memory_id)
    click.echo(f"deleted {memory_id}")


@click.command(help="Show what a store holds, as JSON.", epilog="""\b
Example:
  engram stats --db engram.db""")
@db_option
def stats(db: str | None) -> None:
    import json

    with open_store(db) as store:
        click.echo(json.dumps(dict(store.stats()), indent=2))


@click.command(name="forget-user", help="Delete every memory of one user, and nothing of anyone else.",
               epilog="""\b
Example:
  engram forget-user alice --yes""")
@click.argument("user_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@db_option
def forget_user(user_id: str, yes: bool, db: str | None) -> None:
    existing_db(db)  # before asking: a mistyped path has nothing to delete
    if not yes and not click.confirm(f"Delete every memory of {user_id!r}?", default=False):
        click.echo("nothing deleted")
        return
    with open_store(db) as store:
        count = store.forget_user(checked_user(user_id))
    click.echo(f"deleted {plural(count, 'memory', 'memories')} of {user_id}")


@click.command(help=(
    "Bring memories an older version of engram stored up to what this one derives when writing "
    "(the vectors of standing instructions said inside a longer message, and the entity ids today's "
    "extractor reads); safe to run again."),
    epilog="""\b
Example:
  engram upgrade --db engram.db
  engram upgrade --user alice""")
@click.option("--user", "user_id", default=None, help="Only this user's memories (default: every user's).")
@db_option
def upgrade(user_id: str | None, db: str | None) -> None:
    with open_memory(db, create=False) as memory:
        count = memory.upgrade(None if user_id is None else checked_user(user_id))
    click.echo(f"upgraded {plural(count, 'memory', 'memories')}")
