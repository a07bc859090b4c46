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

Documents are versioned too (:mod:`engram.ingest.files`): a new version of a file supersedes the
previous document and its passages (``chunk`` memories ``part_of`` it). :func:`withdraw_document`,
called by ``Memory.delete`` before the store deletes a document, deletes its passages and applies
the same walk to the versions around it, passages included: deleting the newest version makes the
previous one, and what retrieval quotes of it, current again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from engram.errors import MemoryNotFound, ValidationError
from engram.ext import Store
from engram.model import Filters, Link, MemoryRecord

__all__ = [
    "VERSIONED_KINDS", "Supersession", "apply", "check_update", "delete", "follow_document", "list_all", "plan",
    "reinstate", "supersede_document", "valid_at", "withdraw_document",
]

#: Kinds whose versions supersede one another: facts by subject and predicate, documents by file.
VERSIONED_KINDS = ("fact", "document")
#: Rows per store read when every version is needed.
PAGE = 1000


def list_all(store: Store, user_id: str, filters: Filters) -> list[MemoryRecord]:
    """Every memory ``filters`` admit, read page by page: a version lookup that stopped at a cap
    would silently leave older versions current."""
    out: list[MemoryRecord] = []
    while True:
        page = store.list(user_id, filters, limit=PAGE, offset=len(out))
        out.extend(page)
        if len(page) < PAGE:
            return out


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
        existing = list_all(store, user_id, Filters(kinds=("fact",), subject=first.subject, predicate=first.predicate))
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


def supersede_document(
    store: Store, user_id: str, *, document_id: str, doc_key: str, version: int, previous_id: str, when: datetime
) -> None:
    """A new version of a file was stored: every active earlier version of it (by ``doc_key``), and
    their passages, become ``superseded`` from ``when``; the new document ``supersedes`` ``previous_id``.

    Raises MemoryNotFound if ``previous_id`` is gone (another writer deleted it since it was read).
    """
    if store.get(user_id, previous_id) is None:
        raise MemoryNotFound(f"no memory {previous_id!r} for this user")
    filters = Filters(kinds=("document", "chunk"), metadata={"doc_key": doc_key})
    # Read in full before changing any: each change drops a row from the (active) pages still to come.
    for old in list_all(store, user_id, filters):
        if (old.version or 0) < version:
            store.replace(replace(old, status="superseded", valid_to=when), None)
    store.add_link(user_id, Link(document_id, previous_id, "supersedes", 1.0))


def _order(record: MemoryRecord) -> tuple[datetime, datetime, str]:
    return _start(record), record.recorded_at, record.id


def reinstate(
    deleted: MemoryRecord, superseded: Sequence[MemoryRecord], successors: Sequence[MemoryRecord]
) -> tuple[list[MemoryRecord], list[Supersession]]:
    """What deleting a fact or a document version changes in its history.

    ``superseded`` are the versions ``deleted`` has ``supersedes`` links to, ``successors`` those
    with such a link to it. Returns the versions to store with a new status and ``valid_to``, and
    the pairs to link (``supersedes``, and ``contradicts`` for facts). Only versions of the same kind
    marked ``superseded`` are touched: a status a caller set otherwise, or a hand-made link between
    other kinds, is left. A fact restating the one before it supersedes nothing; a document version
    always supersedes the one before, whatever its text.
    """
    kind = deleted.kind
    if kind not in VERSIONED_KINDS:
        return [], []
    chain = sorted((r for r in superseded if r.kind == kind and r.status == "superseded"), key=_order)
    if not chain:
        return [], []
    successor = min((r for r in successors if r.kind == kind), key=_order, default=None)
    ended_by_deleted = _start(deleted)
    changed: list[MemoryRecord] = []
    pairs: list[Supersession] = []
    for i, version in enumerate(chain):
        after = chain[i + 1] if i + 1 < len(chain) else successor
        if after is not None and (kind == "document" or not _same_object(version, after)):
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


def delete(store: Store, user_id: str, memory_id: str) -> bool:
    """Delete one memory of ``user_id`` from the store; False if it was not there. A document takes its
    passages with it and the version it superseded becomes current (:func:`withdraw_document`); the
    store itself makes a fact's previous version current."""
    record = store.get(user_id, memory_id)
    if record is not None and record.kind == "document":
        withdraw_document(store, user_id, record)
    return store.delete(user_id, memory_id)


def withdraw_document(store: Store, user_id: str, deleted: MemoryRecord) -> None:
    """Before ``deleted`` (a document version) is deleted: delete its passages, and make the version it
    superseded current again with its passages (or superseded by the version after ``deleted``).

    Not one transaction, so ordered to be safe to repeat: passages first, then the earlier version;
    if the process dies in between, deleting the document again finishes the job.
    """
    links = store.links(user_id, deleted.id)
    older = [link.to_id for link in links if link.type == "supersedes" and link.from_id == deleted.id]
    newer = [link.from_id for link in links if link.type == "supersedes" and link.to_id == deleted.id]
    passages = [chunk.id for chunk in _passages(store, user_id, deleted.id)]
    # One transaction and one erasure for all of them where the store offers it (SQLite: each
    # delete's erasure costs tens of ms, so a 150-passage file took ~10 s one by one).
    delete_many = getattr(store, "delete_many", None)
    if callable(delete_many):
        delete_many(user_id, passages)
    else:
        for passage in passages:
            store.delete(user_id, passage)
    changed, pairs = reinstate(deleted, store.fetch(user_id, older), store.fetch(user_id, newer))
    for version in changed:
        store.replace(version, None)
        for chunk in _passages(store, user_id, version.id):
            if chunk.status == "superseded":  # one the caller archived stays archived
                store.replace(replace(chunk, status=version.status, valid_to=version.valid_to), None)
    for pair in pairs:
        store.add_link(user_id, Link(pair.newer.id, pair.older.id, "supersedes", 1.0))


#: Kinds that hold a document's text: the document (a version) and its passages.
_DOCUMENT_KINDS = ("document", "chunk")


def check_update(store: Store, old: MemoryRecord, new: MemoryRecord) -> None:
    """Refuse an edit that would leave two current truths, or a document and its passages saying
    different things: an ingested document's text is searched through its passages, so an edit of
    either (its text or its kind) changes by a new version (ingested again under its ``doc_key``),
    which rebuilds them; and a superseded version is current again only when the version that
    replaced it is deleted."""
    changed = new.kind != old.kind or new.content_hash != old.content_hash
    if changed and old.kind in _DOCUMENT_KINDS and any(
            link.type == "part_of" for link in store.links(old.user_id, old.id)):  # an ingested document's
        field = "kind" if new.kind != old.kind else "content"
        raise ValidationError(field, "a document's text changes by a new version: ingest it again under its "
                                     "doc_key, which rebuilds its passages")
    revived = old.status == "superseded" and new.status == "active"
    if revived and any(link.type == "supersedes" and link.to_id == old.id for link in store.links(old.user_id, old.id)):
        raise ValidationError("status", "a superseded version is current again only when the version that "
                                        "replaced it is deleted")


def follow_document(store: Store, user_id: str, document: MemoryRecord) -> None:
    """After ``document``'s status changed: its passages take it, so an archived document is left
    out of retrieval whole and an active one is searched again."""
    for chunk in _passages(store, user_id, document.id):
        if chunk.status != document.status:
            store.replace(replace(chunk, status=document.status, valid_to=document.valid_to), None)


def _passages(store: Store, user_id: str, document_id: str) -> list[MemoryRecord]:
    links = store.links(user_id, document_id)
    ids = [link.from_id for link in links if link.type == "part_of" and link.to_id == document_id]
    return [r for r in store.fetch(user_id, ids) if r.kind == "chunk"]


def valid_at(record: MemoryRecord, when: datetime) -> bool:
    """Whether a memory existed and was true at ``when`` (for ``as_of`` retrieval)."""
    if record.created_at > when:
        return False
    if record.valid_from is not None and record.valid_from > when:
        return False
    return record.valid_to is None or record.valid_to > when
