"""Engram as LangGraph's long-term store: ``EngramStore(memory)`` is a ``langgraph.store.base.BaseStore``.

How a LangGraph item lives in Engram (see docs/integrations.md):

- **user**: the namespace's first label (``("alice", "memories")`` is Engram user ``alice``), or every item
  under one user when the store is built with ``user_id=...``. A search or listing whose prefix does not
  name the first label asks every user in turn.
- **namespace**: one tag per prefix of it (``ns:alice``, ``ns:alice.memories``) plus ``langgraph`` on every
  item, so a prefix search is one tag filter inside the store. LangGraph forbids ``.`` in labels, so the
  joined prefixes cannot collide.
- **key**: the memory id is a digest of (namespace, key): putting a key again updates that memory, and
  ``put(..., None)`` deletes it.
- **value**: the memory's metadata is the value itself, plus one reserved key ``_langgraph`` (namespace,
  key, creation time), so equality filters on top-level fields run inside the store. The memory's content,
  which Engram embeds and indexes, is the value's text (its string fields, or the ``fields``/``index``
  paths given).
- **times**: the item's ``updated_at`` is the memory's ``created_at`` (a put refreshes it, so recency
  ranking sees the latest write); the first put's time is kept as ``created_at``.
- **index**: ``put(..., index=False)`` keeps the item out of query search (it is still read by ``get``,
  listed by a search without a query, and fills a query's page after the ranked items, as LangGraph's
  own stores do): its mark says so and the tag ``langgraph:noindex`` finds such items. ``index=[paths]``
  picks the text Engram indexes. Engram embeds with the ``Memory``'s embedder: a store's ``index``
  config gives ``fields``; its ``embed`` and ``dims`` have no use here.
- **ttl**: a put's ``ttl`` (minutes; the ``ttl`` config's ``default_ttl`` otherwise) sets the item's
  expiry in its mark; reads leave expired items out, a read refreshes the expiry unless told not to
  (``refresh_on_read``), and :meth:`EngramStore.sweep` deletes what has expired.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from engram import Memory, MemoryRecord, RetrievalConfig
from engram.errors import MemoryNotFound, ValidationError
from engram.extras import needs
from engram.integrations.filters import matches_filter, namespace_matches, split_filter
from engram.integrations.langgraph_items import (
    ALL_TAG,
    MARK,
    NOINDEX_TAG,
    TTL_KEYS,
    Namespace,
    check_op,
    checked,
    in_namespace,
    index_fields,
    item_of,
    item_text,
    mark_of,
    memory_id_for,
    namespace_tags,
    ttl_minutes,
    unindexed,
    value_of,
)

with needs("engram.integrations.langgraph", "langgraph"):
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )

__all__ = ["MARK", "NOINDEX_TAG", "EngramStore", "memory_id_for"]

_PAGE = 1000
_MAX_TOP_K = 1000  # RetrievalConfig.top_k's upper bound

#: A store answers with every match in score order: no token budget, clipping, score floor, dedup
#: (two keys may hold the same text), diversity reordering or deadline (the caller owns the time).
STORE_CONFIG = RetrievalConfig(
    max_tokens=None, clip_sentences=None, min_score=0.0, dedup=False, mmr_lambda=1.0,
    interleave="score_first", timeout_ms=None,
)


class EngramStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are Engram memories, searched by Engram's retrieval.

    >>> store = EngramStore(Memory("agent.db"))                                    # doctest: +SKIP
    >>> store.put(("alice", "memories"), "food", {"text": "Alice is vegetarian"})  # doctest: +SKIP
    >>> store.search(("alice", "memories"), query="what does alice eat?")         # doctest: +SKIP
    """

    supports_ttl = True

    def __init__(
        self, memory: Memory, *, user_id: str | None = None, fields: Sequence[str] | None = None,
        kind: str = "fact", config: RetrievalConfig | None = None, index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise TypeError(f"EngramStore needs an engram Memory, e.g. EngramStore(Memory('agent.db')); "
                            f"got {type(memory).__name__}")
        self.memory = memory
        self.user_id = user_id
        self.fields = list(fields) if fields is not None else index_fields(index)
        if fields is not None and index is not None and index.get("fields") is not None:
            raise ValueError("give the fields to index once: fields=... or index={'fields': ...}")
        self.kind = kind
        self.config = config or STORE_CONFIG
        self.ttl_config = checked(ttl, TTL_KEYS, "ttl")

    # -- the two methods every BaseStore call ends in ------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops in order; consecutive puts are written together (last one per key wins)."""
        results: list[Result] = []
        pending: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            check_op(op)
            if isinstance(op, PutOp):
                pending[(tuple(op.namespace), op.key)] = op
                results.append(None)
                continue
            self._apply_puts(pending)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation type: {type(op).__name__}")
        self._apply_puts(pending)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The engine is synchronous (SQLite, the embedder): a worker thread keeps the event loop free.
        return await asyncio.to_thread(self.batch, list(ops))

    # -- puts ---------------------------------------------------------------------------------------------
    def _apply_puts(self, pending: dict[tuple[Namespace, str], PutOp]) -> None:
        now = datetime.now(UTC)
        new: list[dict[str, Any]] = []
        for (namespace, key), op in pending.items():
            user = self._user(namespace)
            memory_id = memory_id_for(user, namespace, key)
            if op.value is None:
                self.memory.delete(memory_id, user_id=user)
                continue
            existing = self._record(user, memory_id)
            created = mark_of(existing)["created_at"] if existing is not None else now.isoformat()
            fields = self._fields(namespace, key, op, created, now)
            if op.ttl is not None:
                expires = now + timedelta(minutes=ttl_minutes(op.ttl))
                fields["metadata"][MARK].update(ttl=op.ttl, expires_at=expires.isoformat())
            if existing is None:
                new.append({"id": memory_id, "user_id": user, **fields})
            else:
                self.memory.update(memory_id, user_id=user, **fields)
        pending.clear()
        if not new:
            return
        try:
            self.memory.add_many(new)
        except ValidationError as exc:
            if exc.field != "id":
                raise
            # Another writer created one of these keys since we looked: write each, updating what exists.
            for item in new:
                try:
                    self.memory.add_many([item])
                except ValidationError as again:
                    if again.field != "id":
                        raise
                    fields = {k: v for k, v in item.items() if k not in ("id", "user_id")}
                    self.memory.update(item["id"], user_id=item["user_id"], **fields)

    def _fields(self, namespace: Namespace, key: str, op: PutOp, created: str, now: datetime) -> dict[str, Any]:
        value = op.value
        if not isinstance(value, Mapping):
            raise TypeError(f"a store value must be a mapping, got {type(value).__name__}")
        if MARK in value:
            raise ValueError(f"{MARK!r} is reserved by EngramStore and cannot be a key of a stored value")
        tags = namespace_tags(namespace)
        if len(tags) > self.memory.limits.max_tags:
            raise ValueError(f"namespace {namespace!r} is deeper than this store allows ({len(tags) - 1} labels)")
        paths = op.index if isinstance(op.index, list) else self.fields
        mark: dict[str, Any] = {"namespace": list(namespace), "key": key, "created_at": created}
        if op.index is False:
            mark["indexed"] = False
            tags.append(NOINDEX_TAG)
        return {
            "content": item_text(value, paths),
            "kind": self.kind,
            "tags": tags,
            "metadata": {**value, MARK: mark},
            "created_at": now,
        }

    # -- reads ----------------------------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        if not namespace:
            return None
        user = self._user(namespace)
        record = self._live(self._record(user, memory_id_for(user, namespace, op.key)))
        if record is None:
            return None
        found = item_of(self._refreshed(user, record) if op.refresh_ttl else record)
        return Item(
            value=found.value, key=found.key, namespace=found.namespace, created_at=found.created_at,
            updated_at=found.updated_at,
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        conditions = op.filter or {}
        pushed, rest = split_filter(conditions, MARK)
        filters = {"tags_all": [namespace_tags(prefix)[-1]], "metadata": pushed}
        wanted = max(op.offset + op.limit, 0)
        scored: list[tuple[float, MemoryRecord]] = []
        unscored: list[MemoryRecord] = []  # put with index=False: they only fill a query's page
        for user in self._users(prefix):
            if op.query:
                hidden = [r for r in self._scan(user, {**filters, "tags_all": [*filters["tags_all"], NOINDEX_TAG]})
                          if self._matches(r, prefix, conditions)]
                unscored.extend(hidden)
                # A condition the store cannot check leaves fewer matches in the top k: ask for all it gives.
                top_k = _MAX_TOP_K if rest else min(max(wanted, 1) + len(hidden), _MAX_TOP_K)
                found = self._retrieve(op.query, user, top_k, filters)
            else:
                found = ((0.0, r) for r in self._scan(user, filters))
            kept = 0
            for score, record in found:
                if self._matches(record, prefix, conditions) and not (op.query and unindexed(record)):
                    scored.append((score, record))
                    kept += 1
                    if kept >= wanted:
                        break
        if op.query:
            scored.sort(key=lambda pair: -pair[0])  # stable: one user's ranking is kept as retrieval gave it
        else:
            scored.sort(key=lambda pair: pair[1].created_at, reverse=True)  # most recently updated first
        page: list[tuple[float | None, MemoryRecord]] = list(scored[op.offset : op.offset + op.limit])
        if op.query and len(page) < op.limit:
            unscored.sort(key=lambda r: r.created_at, reverse=True)
            skipped = max(op.offset - len(scored), 0)
            page.extend((None, r) for r in unscored[skipped : skipped + op.limit - len(page)])
        if op.refresh_ttl:
            page = [(score, self._refreshed(record.user_id, record)) for score, record in page]
        return [item_of(record, score if op.query else None) for score, record in page]

    def _matches(self, record: MemoryRecord, prefix: Namespace, conditions: Mapping[str, Any]) -> bool:
        return (in_namespace(record, prefix) and self._live(record) is not None
                and matches_filter(value_of(record), conditions))

    def _retrieve(
        self, query: str, user: str, top_k: int, filters: Mapping[str, Any]
    ) -> Iterator[tuple[float, MemoryRecord]]:
        result = self.memory.retrieve(query, user_id=user, config=self.config.with_(top_k=top_k), filters=filters)
        error = result.metadata.error
        # An unknown user has no items; any other error would pass for "nothing matched".
        if error is not None and error.get("code") != "COLLECTION_NOT_FOUND":
            raise RuntimeError(f"Engram retrieval failed for user {user!r}: {dict(error)}")
        for entry in result.memories:
            record = entry.record or self._record(user, entry.id)
            if record is not None:
                yield entry.score, record

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        conditions = op.match_conditions or ()
        for condition in conditions:
            if condition.match_type not in ("prefix", "suffix"):
                raise ValueError(f"unsupported match type: {condition.match_type!r}")
        prefix: list[str] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    prefix.append(label)
                break
        tag = namespace_tags(tuple(prefix))[-1]
        found: set[Namespace] = set()
        for user in self._users(tuple(prefix)):
            for record in self._scan(user, {"tags_all": [tag]}):
                if self._live(record) is None:
                    continue
                namespace = tuple(mark_of(record)["namespace"])
                if all(namespace_matches(c.match_type, c.path, namespace) for c in conditions):
                    found.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- Engram side ------------------------------------------------------------------------------------------
    def _user(self, namespace: Namespace) -> str:
        if self.user_id is not None:
            return self.user_id
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        return namespace[0]

    def _users(self, prefix: Namespace) -> list[str]:
        if self.user_id is not None:
            return [self.user_id]
        if prefix:
            return [prefix[0]]
        return self.memory.store.users()

    def _record(self, user: str, memory_id: str) -> MemoryRecord | None:
        try:
            record = self.memory.get(memory_id, user_id=user)
        except MemoryNotFound:
            return None
        return record if isinstance(record.metadata.get(MARK), Mapping) else None

    def _live(self, record: MemoryRecord | None) -> MemoryRecord | None:
        """The record, or None once it has expired (unless the ttl config keeps expired items)."""
        if record is None or (self.ttl_config or {}).get("omit_expired", True) is False:
            return record
        expires = mark_of(record).get("expires_at")
        return record if expires is None or datetime.fromisoformat(expires) > datetime.now(UTC) else None

    def _refreshed(self, user: str, record: MemoryRecord) -> MemoryRecord:
        """A read of an item with a ttl starts its time to live again (LangGraph's ``refresh_ttl``)."""
        mark = mark_of(record)
        if mark.get("ttl") is None or (self.ttl_config or {}).get("refresh_on_read", True) is False:
            return record
        expires = datetime.now(UTC) + timedelta(minutes=ttl_minutes(mark["ttl"]))
        metadata = {**record.metadata, MARK: {**mark, "expires_at": expires.isoformat()}}
        return self.memory.update(record.id, user_id=user, metadata=metadata)

    def sweep(self) -> int:
        """Delete every expired item (of this store's user, or of every user); returns how many."""
        deleted = 0
        for user in self._users(()):
            expired = [r.id for r in self._scan(user, {"tags_all": [ALL_TAG]})
                       if mark_of(r).get("expires_at") and datetime.fromisoformat(mark_of(r)["expires_at"])
                       <= datetime.now(UTC)]
            deleted += sum(bool(self.memory.delete(memory_id, user_id=user)) for memory_id in expired)
        return deleted

    def _scan(self, user: str, filters: Mapping[str, Any]) -> Iterator[MemoryRecord]:
        """Every item of a user under the filters, most recently updated first, a page at a time."""
        offset = 0
        while True:
            page = self.memory.list(user_id=user, filters=filters, limit=_PAGE, offset=offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE
