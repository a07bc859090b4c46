"""Stored memories' entity ids brought up to the user's entity table and the extractor of today.

A memory's extracted ids are derived from its text when it is written. Registering an entity after
the fact ("Acme Corp" becomes ``customer:acme``) re-tags the memories that name it by one of its
names (:func:`retag_named`: their ``mention:acme corp`` becomes ``customer:acme``), so a question
about the customer finds what was said before it was registered. ``engram upgrade`` re-extracts
every memory (:func:`backfill`): the rest of what the table changes (a name inside a longer one, a
typo) and what a newer extractor reads differently. Ids a caller gave by hand are kept
(``caller_entities``). Only the ids change, and only while the text is the one read: a store that
can set them alone (both bundled ones, ``set_entities``) writes no history row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from engram.config import Limits
from engram.ingest.entities import EntityIndex, caller_entities, name_id, tag_record
from engram.ingest.entity_index import load_entities
from engram.model import STATUSES, Entity, Filters, MemoryRecord

if TYPE_CHECKING:
    from engram.ext import Store

__all__ = ["RETAG_LIMIT", "backfill", "changed", "retag", "retag_named"]

#: The most memories one registration re-tags (the newest naming the entity by one of its names):
#: each is a row rewritten in the registering call (on PostgreSQL ~1 ms each, with its indexes);
#: ``engram upgrade`` re-tags the rest.
RETAG_LIMIT = 1_000

log = logging.getLogger("engram")


def retag_named(store: Store, user_id: str, entity: Entity) -> int:
    """Swap, in the memories of ``user_id`` that name ``entity`` by its name or an alias, the
    ``mention:`` ids extraction gave those names for the entity's id; returns how many changed.
    At most :data:`RETAG_LIMIT` memories, the newest; a warning says when more are left."""
    names = [n for n in (entity.name, *entity.aliases) if isinstance(n, str) and n.strip()]
    mentions = {i for n in names if (i := name_id(n)) is not None and i != entity.id}
    if not mentions:
        return 0
    hits = store.by_entities(user_id, sorted(mentions), RETAG_LIMIT + 1, Filters(statuses=STATUSES))
    if len(hits) > RETAG_LIMIT:
        log.warning("entity %s: re-tagged the newest %d memories naming it; run `engram upgrade` for the rest",
                    entity.id, RETAG_LIMIT)
    records = store.fetch(user_id, [memory_id for memory_id, _ in hits[:RETAG_LIMIT]])
    changes = [(record, tuple(dict.fromkeys(entity.id if e in mentions else e for e in record.entities)))
               for record in records]
    return _rewrite(store, user_id, [(record, ids) for record, ids in changes if ids != record.entities])


def backfill(store: Store, user_id: str, *, limits: Limits | None = None, page: int = 500) -> int:
    """Re-extract the entities of every memory of ``user_id`` (any status); returns how many changed.

    Extracted ids are recomputed against the user's current entity table. A memory whose set of ids
    is unchanged is not written, so a second run writes nothing. Callers holding a ``Memory``
    should drop its cached retrievals after.
    """
    limits = limits or Limits()
    index = EntityIndex(load_entities(store, user_id))
    everything = Filters(statuses=STATUSES)
    done = offset = 0
    while True:
        # The order (created_at, id) is unchanged by re-tagging, so paging stays stable.
        records = store.list(user_id, everything, limit=page, offset=offset)
        done += retag(store, user_id, records, index, limits)
        if len(records) < page:
            return done
        offset += page


def retag(store: Store, user_id: str, records: Sequence[MemoryRecord], index: EntityIndex, limits: Limits) -> int:
    """Re-extract the entities of ``records`` (of ``user_id``) against ``index`` and write those
    that changed; returns how many did."""
    return _rewrite(store, user_id, changed(records, index, limits))


def changed(records: Iterable[MemoryRecord], index: EntityIndex,
            limits: Limits) -> list[tuple[MemoryRecord, tuple[str, ...]]]:
    """(record, its new entity ids) for every record whose extracted entities, against ``index``,
    differ from its stored ones (ids a caller gave kept). Also what the numbered migrations apply."""
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
    if callable(setter):  # only where the text is still the one read (an edit meanwhile tagged it anew)
        return int(setter(user_id, [(record.id, record.content_hash, ids) for record, ids in changes]))
    for record, ids in changes:  # any other store: the whole row again, its vector kept
        store.replace(replace(record, entities=ids), None)
    return len(changes)
