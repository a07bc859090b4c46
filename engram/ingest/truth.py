"""Current truth: a new fact about the same subject and predicate supersedes the older one.

When a fact (subject, predicate, object) arrives and an active fact of the same user has the same
subject and predicate but another object, the one that happened earlier (``created_at``) becomes
``superseded``: its ``valid_to`` is set to when the newer became true, and the newer gets a
``supersedes`` and a ``contradicts`` link to it. Retrieval then returns current truth by default,
and ``as_of`` can still answer what was true at any time. Restating the same object supersedes
nothing (dedup handles the repetition).

Deleting a version undoes what it did (:func:`reinstate`, called by each store's ``delete`` in the
deleting transaction): the versions it superseded are walked again with the version that
superseded it, as if it had never been stored, so deleting the newest makes the previous one
current again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from engram.ext import Store
from engram.model import Filters, Link, MemoryRecord

__all__ = ["Supersession", "apply", "plan", "reinstate", "valid_at"]


@dataclass(frozen=True, slots=True)
class Supersession:
    newer: MemoryRecord
    older: MemoryRecord  # as it will be stored: status superseded, valid_to set


def _key(record: MemoryRecord) -> tuple[str, str] | None:
    if record.kind != "fact" or not record.subject or not record.predicate or record.status != "active":
        return None
    return record.subject.casefold().strip(), record.predicate.casefold().strip()


def _same_object(a: MemoryRecord, b: MemoryRecord) -> bool:
    return (a.object or a.content).casefold().strip() == (b.object or b.content).casefold().strip()


def _start(record: MemoryRecord) -> datetime:
    return record.valid_from or record.created_at


def plan(store: Store, records: Sequence[MemoryRecord]) -> tuple[list[MemoryRecord], list[Supersession]]:
    """The records to insert (some may arrive already superseded) and the stored ones to supersede."""
    by_key: dict[tuple[str, str, str], list[MemoryRecord]] = {}
    for record in records:
        key = _key(record)
        if key is not None:
            by_key.setdefault((record.user_id, *key), []).append(record)
    if not by_key:
        return list(records), []
    changed: dict[str, MemoryRecord] = {}
    supersessions: list[Supersession] = []
    for (user_id, _, _), incoming in by_key.items():
        first = incoming[0]
        existing = store.list(
            user_id,
            Filters(kinds=("fact",), subject=first.subject, predicate=first.predicate),
            limit=1000,
        )
        # Walk every version in time order; each differing object supersedes the current one.
        versions = sorted([*existing, *incoming], key=lambda r: (_start(r), r.recorded_at, r.id))
        current: MemoryRecord | None = None
        for version in versions:
            version = changed.get(version.id, version)
            if current is not None and not _same_object(current, version):
                older = replace(current, status="superseded", valid_to=_start(version))
                changed[older.id] = older
                supersessions.append(Supersession(newer=version, older=older))
            current = version
    incoming_ids = {r.id for r in records}
    to_insert = [changed.get(r.id, r) for r in records]
    stored = [s for s in supersessions if s.older.id not in incoming_ids]
    in_batch = [s for s in supersessions if s.older.id in incoming_ids]
    return to_insert, stored + in_batch


def apply(store: Store, supersessions: Sequence[Supersession], inserted: set[str]) -> None:
    """Mark stored older versions superseded and link every pair (after the inserts landed)."""
    for item in supersessions:
        if item.older.id not in inserted:
            store.replace(item.older, None)
        for link_type in ("supersedes", "contradicts"):
            store.add_link(item.older.user_id, Link(item.newer.id, item.older.id, link_type, 1.0))


def _order(record: MemoryRecord) -> tuple[datetime, datetime, str]:
    return _start(record), record.recorded_at, record.id


def reinstate(
    deleted: MemoryRecord, superseded: Sequence[MemoryRecord], successors: Sequence[MemoryRecord]
) -> tuple[list[MemoryRecord], list[Supersession]]:
    """What deleting a fact changes in its history.

    ``superseded`` are the versions ``deleted`` has ``supersedes`` links to, ``successors`` those
    with such a link to it. Returns the versions to store with a new status and ``valid_to``, and
    the pairs to link (``supersedes`` and ``contradicts``). Only facts marked ``superseded`` are
    touched: a status a caller set otherwise, or a hand-made link between other kinds, is left.
    """
    if deleted.kind != "fact":
        return [], []
    chain = sorted((r for r in superseded if r.kind == "fact" and r.status == "superseded"), key=_order)
    if not chain:
        return [], []
    successor = min((r for r in successors if r.kind == "fact"), key=_order, default=None)
    ended_by_deleted = _start(deleted)
    changed: list[MemoryRecord] = []
    pairs: list[Supersession] = []
    for i, version in enumerate(chain):
        after = chain[i + 1] if i + 1 < len(chain) else successor
        if after is not None and not _same_object(version, after):
            now = replace(version, valid_to=_start(after))
            pairs.append(Supersession(newer=after, older=now))
        else:
            # Current again (or restated by what follows, which supersedes nothing). A valid_to that
            # the deleted version set goes; one it did not set was the caller's and stays.
            ended = None if version.valid_to == ended_by_deleted else version.valid_to
            now = replace(version, status="active", valid_to=ended)
        if now != version:
            changed.append(now)
    return changed, pairs


def valid_at(record: MemoryRecord, when: datetime) -> bool:
    """Whether a memory existed and was true at ``when`` (for ``as_of`` retrieval)."""
    if record.created_at > when:
        return False
    if record.valid_from is not None and record.valid_from > when:
        return False
    return record.valid_to is None or record.valid_to > when
