"""How a LangGraph item is kept as an Engram memory (``engram.integrations.langgraph``): its id, its
namespace tags, its text, and the mark in its metadata (namespace, key, times, index and ttl)."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from engram import MemoryRecord
from engram.extras import needs

with needs("engram.integrations.langgraph", "langgraph"):
    from langgraph.store.base import (
        GetOp,
        IndexConfig,
        InvalidNamespaceError,
        ListNamespacesOp,
        Op,
        PutOp,
        SearchItem,
        SearchOp,
        get_text_at_path,
        tokenize_path,
    )

__all__ = [
    "ALL_TAG", "MARK", "NOINDEX_TAG", "Namespace", "check_op", "checked", "in_namespace", "index_fields", "item_of",
    "item_text", "mark_of", "memory_id_for", "namespace_tags", "ttl_minutes", "unindexed", "value_of",
]

Namespace = tuple[str, ...]
#: The metadata key that holds an item's namespace, key and creation time; values may not use it.
MARK = "_langgraph"
ALL_TAG = "langgraph"
#: The tag of items put with ``index=False``: query search leaves them out.
NOINDEX_TAG = "langgraph:noindex"
INDEX_KEYS = {"dims", "embed", "fields"}
TTL_KEYS = {"refresh_on_read", "omit_expired", "default_ttl", "sweep_interval_minutes"}
NS_TAG = "ns:"
MAX_TAG_CHARS = 200  # Limits.max_tag_chars' default: a longer prefix is named by its digest


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
        tag = NS_TAG + joined
        if len(tag) > MAX_TAG_CHARS:
            tag = NS_TAG + "sha256:" + hashlib.sha256(joined.encode("utf-8")).hexdigest()
        tags.append(tag)
    return tags


def item_text(value: Mapping[str, Any], paths: Sequence[str] | None) -> str:
    """What Engram embeds and indexes for a value: its strings, or the text at the given paths."""
    if paths is None:
        texts = list(strings(value))
    else:
        texts = [t for p in paths for t in get_text_at_path(value, p if p == "$" else tokenize_path(p))]
    text = "\n".join(t for t in texts if t.strip())
    return text or json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def check_op(op: Op) -> None:
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


def index_fields(index: IndexConfig | None) -> list[str] | None:
    config = checked(index, INDEX_KEYS, "index")
    if config is None:
        return None
    if config.get("embed") is not None:
        warnings.warn("EngramStore embeds with its Memory's embedder: index['embed'] and index['dims'] are not used",
                      stacklevel=3)
    fields = config.get("fields")
    return list(fields) if fields is not None else None


def checked(config: Any, allowed: set[str], name: str) -> Any:
    """A LangGraph config dict (``index``, ``ttl``) with only the keys LangGraph defines."""
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise TypeError(f"{name} must be a dict (LangGraph's {name} config), got {type(config).__name__}")
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ValueError(f"unknown {name} config keys {unknown}; LangGraph's are {sorted(allowed)}")
    return config


def ttl_minutes(ttl: Any) -> float:
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < 1e8:
        raise ValueError(f"ttl must be a positive number of minutes, got {ttl!r}")
    return float(ttl)


def unindexed(record: MemoryRecord) -> bool:
    return mark_of(record).get("indexed") is False


def mark_of(record: MemoryRecord) -> Mapping[str, Any]:
    mark = record.metadata[MARK]
    assert isinstance(mark, Mapping)
    return mark


def value_of(record: MemoryRecord) -> dict[str, Any]:
    return {k: v for k, v in record.metadata.items() if k != MARK}


def in_namespace(record: MemoryRecord, prefix: Namespace) -> bool:
    mark = record.metadata.get(MARK)
    return isinstance(mark, Mapping) and tuple(mark["namespace"][: len(prefix)]) == prefix


def item_of(record: MemoryRecord, score: float | None = None) -> SearchItem:
    mark = mark_of(record)
    return SearchItem(
        namespace=tuple(mark["namespace"]), key=mark["key"], value=value_of(record),
        created_at=datetime.fromisoformat(mark["created_at"]), updated_at=record.created_at, score=score,
    )
