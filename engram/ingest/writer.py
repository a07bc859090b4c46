"""The write path: every change to a user's memories goes through here, then invalidates once.

``add_many`` validates every item before anything is written, tags each record with the entities it
names, plans which stored facts it supersedes (:mod:`engram.ingest.truth`), embeds and stores in
batches of ``BATCH`` records, one transaction each, and only then marks the superseded versions.
Every function takes a :class:`~engram.context.Context` and ends with ``context.wrote(user)``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.errors import ValidationError
from engram.ext import Vector
from engram.ingest import truth
from engram.ingest.embed import embed_records
from engram.ingest.entities import EntityIndex, caller_entities, tag_record
from engram.ingest.entity_index import load_entities
from engram.ingest.facets import embed_facets, facet_texts
from engram.ingest.given_vectors import take_vector
from engram.ingest.normalize import FIELDS, normalize
from engram.ingest.retag import retag, retag_named
from engram.model import STATUSES, Entity, Filters, Link, MemoryRecord
from engram.retrieve.standing import standing_sentences
from engram.validate import unit, validate_id, validate_strings, validate_text

if TYPE_CHECKING:
    from engram.context import Context

__all__ = [
    "BATCH", "MAX_ALIASES", "MAX_ENTITY_TEXT_CHARS", "MAX_LINK_TYPE_CHARS", "add_entity", "add_many", "delete",
    "forget_user", "link", "update", "upgrade",
]

BATCH = 256  # records per transaction in add_many: bounded memory, few fsyncs
MAX_LINK_TYPE_CHARS = 64
MAX_ENTITY_TEXT_CHARS = 200  # an entity's type, name and each alias
MAX_ALIASES = 100  # every retrieve() scans all of a user's aliases


def add_many(context: Context, items: Iterable[Mapping[str, Any]], *, numbered: str | None = None,
             itemwise: Collection[str] | None = None) -> list[MemoryRecord]:
    """Validate every item first, then embed in batches and store; all or nothing per batch.
    ``numbered``: the name of the caller's list, by which a refused field names its item
    (``memories[17].content``, ``messages[1].role``); ``itemwise``: only these fields do (a
    conversation's messages give their text, role and time; the call gives the rest)."""
    limits = context.limits
    now = datetime.now(UTC)
    embedder = context.embedder()
    records: list[MemoryRecord] = []
    # By (user, id): the vectors items brought (engram.ingest.given_vectors). Ids are per user in
    # PostgreSQL, so two users' memories of one batch may share one.
    given: dict[tuple[str, str], Vector] = {}
    for i, item in enumerate(items):
        if len(records) >= limits.max_batch:
            raise ValidationError("items", f"at most {limits.max_batch} items per call (Limits.max_batch)")
        try:
            item, vector = take_vector(item, embedder)
            records.append(normalize(item, limits=limits, now=now))
            if vector is not None:
                given[records[-1].user_id, records[-1].id] = vector
        except ValidationError as exc:  # which item of the batch: the whole batch is refused
            if numbered is None or (itemwise is not None and re.split(r"[.\[]", exc.field)[0] not in itemwise):
                raise
            raise ValidationError(f"{numbered}[{i}].{exc.field}", str(exc).removeprefix(f"{exc.field}: ")) from None
    if not records:
        return []
    users = sorted({r.user_id for r in records})
    # Link each memory to the entities it names (extracted ids after any the caller gave).
    indexes = {user: context.caches.entity_index(user) for user in users}
    records = [tag_record(r, indexes[r.user_id], limits=limits) for r in records]
    records, supersessions = truth.plan(context.store, records)
    for start in range(0, len(records), BATCH):
        chunk = records[start : start + BATCH]
        vectors = embed_records(embedder, context.store, chunk, given)
        # A memory that brought its vector is not embedded at all: engram upgrade adds its facets.
        facets = embed_facets(embedder, chunk, [(r.user_id, r.id) not in given for r in chunk])
        context.store.put_many(chunk, vectors, facets=facets)
    truth.apply(context.store, supersessions, {r.id for r in records})
    for user in users:
        context.wrote(user)
    return records


def update(context: Context, memory_id: str, *, user_id: str, changes: Mapping[str, Any]) -> MemoryRecord:
    """Change fields of a memory; a content change re-embeds it."""
    old = context.get(context.user(user_id), memory_id)
    # Only what add accepts may change: anything else (access_count, last_accessed_at, which
    # reads and feedback keep) would be silently ignored, so it is refused by name.
    allowed = FIELDS - {"id", "user_id"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError(sorted(unknown)[0], f"cannot be updated; allowed: {', '.join(sorted(allowed))}")
    merged = {k: v for k, v in old.to_dict().items() if k in FIELDS and v is not None}
    merged.update({k: v for k, v in changes.items() if k in FIELDS})
    record = normalize(merged, limits=context.limits, now=old.recorded_at)
    record = replace(record, id=old.id, access_count=old.access_count, last_accessed_at=old.last_accessed_at)
    # Entities the caller passes replace the list; otherwise the hand-given ones stay and the
    # extracted ones are recomputed, so an edited text drops names it no longer mentions.
    index = context.caches.entity_index(record.user_id)
    given = record.entities if "entities" in changes else caller_entities(old, index)
    record = tag_record(record, index, limits=context.limits, given=given)
    truth.check_update(context.store, old, record)
    vector = facets = None
    if record.content_hash != old.content_hash:
        embedder = context.embedder()
        vector = embed_records(embedder, context.store, [record])[0]
        facets = embed_facets(embedder, [record])[0]
    elif facet_texts(record) != facet_texts(old):  # a new role or kind: other parts, or none
        vector = context.store.vectors(record.user_id, [record.id]).get(record.id)
        if vector is not None:
            facets = embed_facets(context.embedder(), [record])[0]
    context.store.replace(record, vector, facets=facets)
    if record.kind == "document" and record.status != old.status:
        truth.follow_document(context.store, record.user_id, record)
    context.wrote(record.user_id)
    return record


def delete(context: Context, memory_id: str, *, user_id: str) -> bool:
    """Remove a memory from every index at once; False if it was not there.

    Deleting a version makes the one it superseded current again (:mod:`engram.ingest.truth`); a
    document takes its passages with it.
    """
    user = context.user(user_id)
    deleted = truth.delete(context.store, user, memory_id)
    context.wrote(user)
    return deleted


def upgrade(context: Context, user_id: str, *, batch: int = BATCH) -> int:
    """Derive for one user's memories what this version derives at write time and an older one did
    not: the vectors of a message's standing sentences (:mod:`engram.ingest.facets`), also where an
    older version found fewer or more of them (its patterns differed), and the entity ids today's
    extractor and entity table give (:mod:`engram.ingest.retag`), one read of the memories for both.
    Returns how many memories changed; a second run finds none. A memory edited meanwhile is left as
    its edit wrote it."""
    user = context.user(user_id)
    everything = Filters(statuses=STATUSES)
    index = EntityIndex(load_entities(context.store, user))
    done = offset = 0
    while page := context.store.list(user, everything, limit=batch, offset=offset):
        offset += len(page)
        done += retag(context.store, user, page, index, context.limits)
        sentences = {r.id: len(found) for r in page if (found := standing_sentences(r))}
        if not sentences:
            continue
        eligible = [r for r in page if r.id in sentences]
        have = context.store.facets(user, [r.id for r in eligible])
        missing = [r for r in eligible if r.id not in have]
        # Facets an older version derived from other sentences (its patterns found more or fewer).
        stale = [r for r in eligible if r.id in have and len(have[r.id]) != sentences[r.id]]
        for todo, again in ((missing, False), (stale, True)):
            if todo:
                facets = embed_facets(context.embedder(), todo)
                done += context.store.put_facets(user, [(r.id, r.content_hash, matrix)
                                                        for r, matrix in zip(todo, facets, strict=True)
                                                        if matrix is not None], replace=again)
    if done:
        context.wrote(user)
    return done


def forget_user(context: Context, user_id: str) -> int:
    """Remove every row of one user from every table and index; returns memories removed."""
    user = context.user(user_id)
    count = context.store.forget_user(user)
    context.caches.invalidate(user, weights=True)
    return count


def link(context: Context, from_id: str, to_id: str, type: str, strength: float, *, user_id: str) -> Link:
    """Link two memories of one user (both must exist); ``strength`` in [0, 1]."""
    user = context.user(user_id)
    for memory_id in (from_id, to_id):
        context.get(user, memory_id)
    validate_text(type, "type", MAX_LINK_TYPE_CHARS)
    value = unit("strength", strength)
    new = Link(from_id, to_id, type, value)
    context.store.add_link(user, new)
    context.wrote(user)
    return new


def add_entity(
    context: Context, entity_id: str, *, user_id: str, type: str | None, name: str | None, aliases: Sequence[str],
) -> Entity:
    """Register a canonical entity (``customer:a1b2``) and the names queries may use for it."""
    user = context.user(user_id)
    entity_id = validate_id(entity_id, "entity_id", context.limits) or ""
    if type is not None:
        validate_text(type, "type", MAX_ENTITY_TEXT_CHARS)
    if name is not None:
        validate_text(name, "name", MAX_ENTITY_TEXT_CHARS)
    aliases = validate_strings(aliases, "aliases", MAX_ALIASES, MAX_ENTITY_TEXT_CHARS)
    # Updating a registered entity is always allowed; only a new one counts against the bound.
    # (Two processes adding at once may both pass at bound - 1: the bound is a cost cap, not a quota.)
    # Both bundled stores count from the primary key; another Store is asked for its entities.
    bound = context.limits.max_entities_per_user
    count = getattr(context.store, "count_entities", None)
    others: int = (
        count(user, excluding=entity_id) if callable(count)
        else sum(e.id != entity_id for e in context.store.entities(user))
    )
    if others >= bound:
        raise ValidationError(
            "entity_id", f"user already has {others} entities; at most {bound} per user "
            "(Limits.max_entities_per_user): update or reuse a registered entity",
        )
    entity = Entity(
        id=entity_id,
        type=type or entity_id.split(":", 1)[0],
        name=name or entity_id.split(":", 1)[-1],
        aliases=tuple(aliases),
    )
    context.store.upsert_entity(user, entity)
    # What was said before the entity was registered names it too ("Acme Corp" -> customer:acme).
    retag_named(context.store, user, entity)
    context.wrote(user)
    return entity
