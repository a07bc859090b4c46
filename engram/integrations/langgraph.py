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
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from engram import Memory, MemoryRecord, RetrievalConfig
from engram.errors import MemoryNotFound, ValidationError
from engram.extras import needs
from engram.integrations.filters import matches_filter, namespace_matches, split_filter

with needs("engram.integrations.langgraph", "langgraph"):
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        tokenize_path,
    )

__all__ = ["MARK", "EngramStore"]

#: The metadata key that holds an item's namespace, key and creation time; values may not use it.
MARK = "_langgraph"
ALL_TAG = "langgraph"
_TAG = "ns:"
_MAX_TAG_CHARS = 200  # Limits.max_tag_chars' default: a longer prefix is named by its digest
_PAGE = 1000
_MAX_TOP_K = 1000  # RetrievalConfig.top_k's upper bound
Namespace = tuple[str, ...]

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

    def __init__(
        self, memory: Memory, *, user_id: str | None = None, fields: Sequence[str] | None = None,
        kind: str = "fact", config: RetrievalConfig | None = None,
    ) -> None:
        self.memory = memory
        self.user_id = user_id
        self.fields = list(fields) if fields is not None else None
        self.kind = kind
        self.config = config or STORE_CONFIG

    # -- the two methods every BaseStore call ends in ------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops in order; consecutive puts are written together (last one per key wins)."""
        results: list[Result] = []
        pending: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            _check_op(op)
            if isinstance(op, PutOp):
                pending[(tuple(op.namespace), op.key)] = op
                results.append(None)
                continue
            self._apply_puts(pending)
            if isinstance(op, GetOp):
                results.append(self._get(tuple(op.namespace), op.key))
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
            created = _mark(existing)["created_at"] if existing is not None else now.isoformat()
            fields = self._fields(namespace, key, op, created, now)
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
        return {
            "content": item_text(value, paths),
            "kind": self.kind,
            "tags": tags,
            "metadata": {**value, MARK: {"namespace": list(namespace), "key": key, "created_at": created}},
            "created_at": now,
        }

    # -- reads ----------------------------------------------------------------------------------------------
    def _get(self, namespace: Namespace, key: str) -> Item | None:
        if not namespace:
            return None
        user = self._user(namespace)
        record = self._record(user, memory_id_for(user, namespace, key))
        if record is None:
            return None
        found = _item(record)
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
        for user in self._users(prefix):
            if op.query:
                # A condition the store cannot check leaves fewer matches in the top k: ask for all it gives.
                top_k = _MAX_TOP_K if rest else min(max(wanted, 1), _MAX_TOP_K)
                found = self._retrieve(op.query, user, top_k, filters)
            else:
                found = ((0.0, r) for r in self._scan(user, filters))
            kept = 0
            for score, record in found:
                if _in_namespace(record, prefix) and matches_filter(_value(record), conditions):
                    scored.append((score, record))
                    kept += 1
                    if kept >= wanted:
                        break
        if op.query:
            scored.sort(key=lambda pair: -pair[0])  # stable: one user's ranking is kept as retrieval gave it
        else:
            scored.sort(key=lambda pair: pair[1].created_at, reverse=True)  # most recently updated first
        page = scored[op.offset : op.offset + op.limit]
        return [_item(record, score if op.query else None) for score, record in page]

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
                namespace = tuple(_mark(record)["namespace"])
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

    def _scan(self, user: str, filters: Mapping[str, Any]) -> Iterator[MemoryRecord]:
        """Every item of a user under the filters, most recently updated first, a page at a time."""
        offset = 0
        while True:
            page = self.memory.list(user_id=user, filters=filters, limit=_PAGE, offset=offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE


# -- mapping helpers (pure) ------------------------------------------------------------------------------------
def memory_id_for(user: str, namespace: Namespace, key: str) -> str:
    """The stable memory id of an item: the same (user, namespace, key) always lands on the same memory.

    The user is part of it because memory ids are unique across a whole Engram file: two stores with
    different ``user_id`` may hold the same namespace and key."""
    digest = hashlib.sha256(json.dumps([user, list(namespace), key], ensure_ascii=False).encode("utf-8"))
    return "lg-" + digest.hexdigest()[:32]


def namespace_tags(namespace: Namespace) -> list[str]:
    """``langgraph`` and one tag per prefix of the namespace, shortest first."""
    tags = [ALL_TAG]
    for depth in range(1, len(namespace) + 1):
        joined = ".".join(namespace[:depth])
        tag = _TAG + joined
        if len(tag) > _MAX_TAG_CHARS:
            tag = _TAG + "sha256:" + hashlib.sha256(joined.encode("utf-8")).hexdigest()
        tags.append(tag)
    return tags


def item_text(value: Mapping[str, Any], paths: Sequence[str] | None) -> str:
    """What Engram embeds and indexes for a value: its strings, or the text at the given paths."""
    if paths is None:
        texts = list(_strings(value))
    else:
        texts = [t for p in paths for t in get_text_at_path(value, p if p == "$" else tokenize_path(p))]
    text = "\n".join(t for t in texts if t.strip())
    return text or json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _check_op(op: Op) -> None:
    """Labels are checked here too: ops handed to ``batch`` directly skip BaseStore's own checks, and a
    label with a ``.`` would address another namespace's tag."""
    if isinstance(op, GetOp | PutOp):
        labels: Iterable[str] = op.namespace
        if isinstance(op, PutOp) and not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
    elif isinstance(op, SearchOp):
        labels = op.namespace_prefix
    elif isinstance(op, ListNamespacesOp):
        labels = [label for c in op.match_conditions or () for label in c.path if label != "*"]
    else:
        return
    for label in labels:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(f"Invalid namespace label {label!r}: labels are non-empty strings without '.'")


def _mark(record: MemoryRecord) -> Mapping[str, Any]:
    mark = record.metadata[MARK]
    assert isinstance(mark, Mapping)
    return mark


def _value(record: MemoryRecord) -> dict[str, Any]:
    return {k: v for k, v in record.metadata.items() if k != MARK}


def _in_namespace(record: MemoryRecord, prefix: Namespace) -> bool:
    mark = record.metadata.get(MARK)
    return isinstance(mark, Mapping) and tuple(mark["namespace"][: len(prefix)]) == prefix


def _item(record: MemoryRecord, score: float | None = None) -> SearchItem:
    mark = _mark(record)
    return SearchItem(
        namespace=tuple(mark["namespace"]), key=mark["key"], value=_value(record),
        created_at=datetime.fromisoformat(mark["created_at"]), updated_at=record.created_at, score=score,
    )
