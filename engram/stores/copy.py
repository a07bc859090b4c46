"""Copy every user's memories, vectors, links and entities from one store to another.

Vectors, and the facet vectors of parts of a memory, travel as stored: nothing is re-embedded. The
read side uses only the Store protocol (``users``, ``list`` over every status, ``vectors``,
``facets``, ``links``, ``entities``). A destination with an
``analyze()`` (PostgreSQL) refreshes its planner statistics once the copy is in.

    engram copy engram.db postgresql://engram@db:5432/engram
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click
import numpy as np

from engram.errors import StoreError
from engram.ext import Store
from engram.model import STATUSES, Filters, Link

__all__ = ["CopyReport", "copy_command", "copy_store", "store_users"]

ALL_STATUSES = Filters(statuses=STATUSES)


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What was copied; ``without_vector`` lists ids that could not be copied (no stored vector)."""

    users: int
    memories: int
    links: int
    entities: int
    without_vector: tuple[str, ...] = field(default_factory=tuple)


def store_users(store: Store) -> builtins.list[str]:
    """Every user id the store holds, sorted."""
    return sorted(store.users())


def copy_store(
    src: Store, dst: Store, *, batch: int = 1000, progress: Callable[[int, int], None] | None = None
) -> CopyReport:
    """Copy everything in ``src`` into ``dst`` (which must not already hold those ids); verify counts."""
    if batch <= 0:
        raise ValueError("batch must be positive")
    model_id = src.stats().get("model_id")
    users = store_users(src)
    total = src.count()
    done = 0
    copied = links_copied = entities_copied = 0
    missing: builtins.list[str] = []
    skipped: dict[str, int] = {}
    bound = False
    before = {user: dst.count(user) for user in users}
    if progress is not None:
        progress(0, total)
    for user in users:
        offset = 0
        links: dict[tuple[str, str, str], Link] = {}
        while True:
            records = src.list(user, ALL_STATUSES, limit=batch, offset=offset)
            if not records:
                break
            offset += len(records)
            vectors = src.vectors(user, [r.id for r in records])
            kept = [r for r in records if r.id in vectors]
            lacking = [r.id for r in records if r.id not in vectors]
            missing.extend(lacking)
            skipped[user] = skipped.get(user, 0) + len(lacking)
            if kept:
                matrix = np.stack([vectors[r.id] for r in kept]).astype(np.float32)
                if model_id and not bound:
                    dst.bind_embedder(str(model_id), int(matrix.shape[1]))
                    bound = True
                facets = src.facets(user, [r.id for r in kept])
                dst.put_many(kept, matrix, facets=[facets.get(r.id) for r in kept])
                copied += len(kept)
            for record in records:
                for link in src.links(user, record.id):
                    links[(link.from_id, link.to_id, link.type)] = link
            done += len(records)
            if progress is not None:
                progress(done, total)
        for link in links.values():
            dst.add_link(user, link)
        links_copied += len(links)
        for entity in src.entities(user):
            dst.upsert_entity(user, entity)
            entities_copied += 1
    analyze = getattr(dst, "analyze", None)
    if callable(analyze):  # PostgreSQL: the planner sees the copied rows now, not when autovacuum runs
        analyze()
    for user in users:
        expected = before[user] + src.count(user) - skipped.get(user, 0)
        if dst.count(user) != expected:
            raise StoreError(f"copy of user {user!r}: destination has {dst.count(user)}, expected {expected}")
        if len(dst.entities(user)) < len(src.entities(user)):
            raise StoreError(f"copy of user {user!r}: entities missing in the destination")
    return CopyReport(len(users), copied, links_copied, entities_copied, tuple(missing))


@click.command(name="copy", help="Copy every memory (with its vector), link and entity from SRC to DST.")
@click.argument("src")
@click.argument("dst")
@click.option("--batch", default=1000, show_default=True, help="Memories read and written per batch.")
def copy_command(src: str, dst: str, batch: int) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from engram.stores.open import open_store

    source = open_store(src)
    try:
        target = open_store(dst)
        try:
            columns: Any = (TextColumn("copying"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
            with Progress(*columns) as bar:
                task = bar.add_task("copy", total=None)

                def report(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                result = copy_store(source, target, batch=batch, progress=report)
        finally:
            target.close()
    finally:
        source.close()
    click.echo(
        f"copied {result.memories} memories, {result.links} links and {result.entities} entities "
        f"of {result.users} users"
    )
    if result.without_vector:
        click.echo(f"skipped {len(result.without_vector)} memories without a stored vector", err=True)
