"""Stored memories' entity ids brought up to the user's entity table and the extractor of today.

A memory's extracted ids are derived from its text when it is written. Registering an entity after
the fact ("Acme Corp" becomes ``customer:acme``) re-tags the memories that name it
(:func:`retag_named`), so a question about the customer finds what was said before it was
registered; ``engram upgrade`` re-tags every memory (:func:`backfill`), for what a newer extractor
reads differently. Ids a caller gave by hand are kept (``caller_entities``). Only the ids change: a
store that can set them alone (both bundled ones, ``set_entities``) writes no history row, since
the text is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from engram.config import Limits
from engram.ingest.entities import EntityIndex, caller_entities, name_id, tag_record
from engram.ingest.entity_index import load_entities
from engram.model import STATUSES, Entity, Filters, MemoryRecord

if TYPE_CHECKING:
    from engram.ext import Store

__all__ = ["RETAG_LIMIT", "backfill", "retag_named"]

#: The most memories one registration re-tags (those naming the entity, by any of its names);
#: ``engram upgrade`` re-tags the rest.
RETAG_LIMIT = 10_000


def retag_named(store: Store, user_id: str, entity: Entity, *, limits: Limits | None = None) -> int:
    """Re-tag the memories of ``user_id`` that name ``entity`` by its name or an alias (as the
    ``mention:`` ids extraction gave them) or by its id; returns how many changed."""
    names = [n for n in (entity.name, *entity.aliases) if isinstance(n, str) and n.strip()]
    ids = list(dict.fromkeys([*(i for n in names if (i := name_id(n)) is not None), entity.id]))
    hits = store.by_entities(user_id, ids, RETAG_LIMIT, Filters(statuses=STATUSES))
    if not hits:
        return 0
    records = store.fetch(user_id, [memory_id for memory_id, _ in hits])
    return _rewrite(store, user_id, _changed(records, EntityIndex(load_entities(store, user_id)), limits or Limits()))


def backfill(store: Store, user_id: str, *, limits: Limits | None = None, page: int = 500) -> int:
    """Re-extract the entities of every memory of ``user_id`` (any status); returns how many changed.

    Extracted ids are recomputed against the user's current entity table. A memory whose set of ids
    is unchanged is not written, so a second run writes nothing. Callers holding a ``Memory``
    should drop its cached retrievals after.
    """
    limits = limits or Limits()
    index = EntityIndex(load_entities(store, user_id))
    everything = Filters(statuses=STATUSES)
    changed = offset = 0
    while True:
        # The order (created_at, id) is unchanged by re-tagging, so paging stays stable.
        records = store.list(user_id, everything, limit=page, offset=offset)
        changed += _rewrite(store, user_id, _changed(records, index, limits))
        if len(records) < page:
            return changed
        offset += page


def _changed(records: Sequence[MemoryRecord], index: EntityIndex,
             limits: Limits) -> list[tuple[MemoryRecord, tuple[str, ...]]]:
    out: list[tuple[MemoryRecord, tuple[str, ...]]] = []
    for record in records:
        tagged = tag_record(record, index, limits=limits, given=caller_entities(record, index))
        if set(tagged.entities) != set(record.entities):
            out.append((record, tagged.entities))
    return out


def _rewrite(store: Store, user_id: str, changes: Sequence[tuple[MemoryRecord, tuple[str, ...]]]) -> int:
    if not changes:
        return 0
    setter = getattr(store, "set_entities", None)
    if callable(setter):
        setter(user_id, [(record.id, ids) for record, ids in changes])
    else:  # any other store: the whole row again, its vector kept
        for record, ids in changes:
            store.replace(replace(record, entities=ids), None)
    return len(changes)
