"""Mem0's calls (``search``, ``get_all``, ``delete_all``) over any ``MemoryAPI``, in Mem0's shapes.

Written once against the Protocol, so ``Memory`` and ``EngramClient`` answer alike: each is a
composition of Engram's own calls (``retrieve``, ``list``, ``delete``, ``forget_user``), never a
second read path. A result is ``{"id", "memory", "score"?, "metadata", "created_at",
"updated_at", "user_id", "agent_id", "run_id", "role", "kind"}``; search results add the
``reasons`` a memory was ranked for, which Mem0 does not have. Engram keeps no update time
(``updated_at`` is None) and ``run_id`` is the memory's session.

A search answers at most ``SEARCH_TOP_K`` (20, Mem0's default ``top_k``) results whatever its
``limit``: ``retrieve(top_k=...)`` ranks more in-process. ``filters`` (engram.metadata_filter)
narrow the candidates inside the store, before ranking. ``memory`` in a search result is the text as
retrieval rendered it, clipped to the config's ``clip_sentences`` (pass
``config=RetrievalConfig(clip_sentences=None)`` for whole texts).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.config import RetrievalConfig
from engram.errors import MemoryNotFound, ValidationError
from engram.metadata_filter import check, matches
from engram.model import STATUSES, HistoryEvent, MemoryRecord, plain
from engram.retrieve.types import MemoryEntry
from engram.validate import integer, number

if TYPE_CHECKING:
    from engram.api import MemoryAPI
    from engram.ext import Store

__all__ = ["DELETED", "delete_all", "from_export", "get_all", "owner_of", "record_result", "search", "top_k_or"]

DELETED = "Memories deleted successfully!"
PAGE = 500
#: The most a search ranks: the top_k a non-admin key may ask the HTTP service for (the admin
#: range), so a search answers the same in-process and over HTTP. Over HTTP a filtered search
#: ranks this many before filtering (the service takes no filter tree), to fill ``limit`` when it can.
SEARCH_TOP_K = 20


def top_k_or(top_k: int | None, limit: int) -> int:
    """How many results a call asked for: ``top_k`` (Mem0's newer name) when given, else ``limit``."""
    return limit if top_k is None else top_k


def entry_result(entry: MemoryEntry, user_id: str, explain: bool = False) -> dict[str, Any]:
    result = {
        "id": entry.id, "memory": entry.content, "score": entry.score, "metadata": plain(entry.metadata),
        "created_at": entry.timestamp, "updated_at": None, "user_id": user_id, "agent_id": entry.agent_id,
        "run_id": entry.session_id, "role": entry.role, "kind": entry.type, "reasons": list(entry.reasons),
    }
    if explain:  # each signal's value and weight: what the score is made of
        result["score_details"] = {name: {"value": value, "weight": entry.weights.get(name)}
                                   for name, value in entry.signals.items()}
    return result


def record_result(record: MemoryRecord) -> dict[str, Any]:
    return {
        "id": record.id, "memory": record.content, "metadata": plain(record.metadata),
        "created_at": record.created_at.isoformat(), "updated_at": None, "user_id": record.user_id,
        "agent_id": record.agent_id, "run_id": record.session_id, "role": record.role, "kind": record.kind,
    }


def search(
    api: MemoryAPI, query: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
    limit: int = 100, filters: Mapping[str, Any] | None = None, threshold: float | None = None,
    config: RetrievalConfig | None = None, in_store: bool = True, explain: bool = False,
) -> dict[str, Any]:
    """The user's memories that matter for ``query``, best first, as ``{"results": [...]}``.

    ``in_store`` (the default): ``api`` takes ``Filters.where`` (the embedded Memory, and the service
    through EngramClient), so ``filters`` narrow the candidates inside the store before ranking and
    ``threshold`` is the ranking's floor (``min_score``, lower or higher than the configured one).
    Without it the filter runs over the ranked results.
    """
    integer("limit", limit, 1, 1000)
    wanted = check(filters) if filters is not None else None
    user = _user(user_id, wanted)
    if threshold is not None:
        number("threshold", threshold, 0.0, 1.0)
    narrowing: dict[str, Any] = {"agent_id": agent_id} if agent_id is not None else {}
    if in_store and wanted:
        narrowing["where"] = dict(wanted)
    top_k = min(limit, SEARCH_TOP_K) if in_store or not wanted else SEARCH_TOP_K
    if in_store and threshold is not None:
        config = (config or getattr(api, "config", None) or RetrievalConfig()).with_(min_score=threshold)
    if config is not None:
        config = config.with_(top_k=top_k)
    found = api.retrieve(query, user_id=user, session_id=run_id, config=config, filters=narrowing or None,
                         top_k=None if config is not None else top_k)
    results = [entry_result(entry, user, explain) for entry in found.memories]
    kept = [r for r in results if (in_store or matches(wanted, r)) and (threshold is None or r["score"] >= threshold)]
    return {"results": kept[:limit]}


def get_all(
    api: MemoryAPI, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
    filters: Mapping[str, Any] | None = None, limit: int = 100, in_store: bool = True,
) -> dict[str, Any]:
    """The user's active memories (within the agent or run), as ``{"results": [...]}``, oldest first.

    With ``in_store`` the filter is part of the store's query; else it runs over each page listed."""
    integer("limit", limit, 1, 10_000)
    wanted = check(filters) if filters is not None else None
    kept: list[dict[str, Any]] = []
    where = wanted if in_store and wanted else None
    for record in _every(api, _user(user_id, wanted), agent_id, run_id, statuses=("active",), where=where):
        result = record_result(record)
        if where is not None or matches(wanted, result):
            kept.append(result)
            if len(kept) == limit:
                break
    return {"results": kept}


def delete_all(
    api: MemoryAPI, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
) -> dict[str, Any]:
    """Delete the user's memories (within the agent or run, when given): every version, whatever its status.

    Without ``agent_id`` and ``run_id`` this is ``forget_user``: the user's entities, links and
    feedback go too. Engram scopes every memory by a user, so ``user_id`` is required.
    """
    if user_id is None:
        raise ValidationError("user_id", "is required: every Engram memory belongs to one user "
                              "(agent_id and run_id narrow within it)")
    if agent_id is None and run_id is None:
        return {"message": DELETED, "deleted": api.forget_user(user_id)}
    ids = [r.id for r in _every(api, user_id, agent_id, run_id, statuses=STATUSES)]
    # A document's deletion takes its passages with it: those are then already gone.
    deleted = sum(api.delete(memory_id, user_id=user_id) for memory_id in ids)
    return {"message": DELETED, "deleted": deleted}


def _user(user_id: str | None, filters: Mapping[str, Any] | None) -> str:
    """The call's user: ``user_id``, else the one Mem0 >= 1.0 lets a caller name in ``filters``."""
    named = (filters or {}).get("user_id")
    if user_id is None and isinstance(named, str):
        return named
    if user_id is None:
        raise ValidationError("user_id", "is required (or filters={'user_id': ...}): every memory belongs to a user")
    return user_id


def _every(
    api: MemoryAPI, user_id: str, agent_id: str | None, run_id: str | None, *, statuses: tuple[str, ...],
    where: Mapping[str, Any] | None = None,
) -> Iterator[MemoryRecord]:
    scope = {"agent_id": agent_id, "session_id": run_id, "statuses": statuses, "where": where}
    offset = 0
    while page := api.list(user_id=user_id, filters={k: v for k, v in scope.items() if v is not None},
                           limit=PAGE, offset=offset):
        yield from page
        offset += len(page)


def owner_of(store: Store, memory_id: str) -> str:
    """The user a memory id belongs to, for the embedded API's id-only calls (the process owns the
    file, so every user's memories are its own to read). Asks each user in turn: a lookup across
    users is no store primitive, and id-only calls are for scripts, not hot paths."""
    for user in store.users():
        if store.get(user, memory_id) is not None:
            return user
    raise MemoryNotFound(f"no memory {memory_id!r}")


def history(store: Store, memory_id: str, user_id: str | None) -> list[HistoryEvent]:
    """Mem0's ``history(memory_id)``: the store's audit log of the memory, oldest first.

    Without ``user_id`` the owner is looked for as :func:`owner_of` does, among the users the store
    lists; a deleted memory's log is found that way only while its user has other data. Raises
    MemoryNotFound when there is neither a log nor a memory (one stored before the log began has
    an empty log).
    """
    for user in [user_id] if user_id is not None else store.users():
        events = store.history(user, memory_id)
        if events or store.get(user, memory_id) is not None:
            return events
    raise MemoryNotFound(f"no memory {memory_id!r}" + (" for this user" if user_id is not None else ""))


def from_export(data: Any, *, default_user: str | None = None) -> list[dict[str, Any]]:
    """``add_many`` items for a Mem0 export: ``get_all``'s ``{"results": [...]}``, or a list of its results.

    Mem0 stores what its LLM extracted, so each memory comes in as a ``fact``; its id, hash and
    update time are kept in ``metadata["mem0"]`` (an Engram id is assigned). A time without an
    offset is read as UTC, which is what Mem0 writes when it is not given a timezone.
    """
    results = data.get("results", data.get("memories")) if isinstance(data, Mapping) else data
    if not isinstance(results, list):
        raise ValidationError("results", "a Mem0 export is {\"results\": [...]} or a list of memories")
    items = []
    for i, result in enumerate(results):
        if not isinstance(result, Mapping):
            raise ValidationError(f"results[{i}]", f"must be an object, got {type(result).__name__}")
        origin = {k: result[k] for k in ("id", "hash", "updated_at") if result.get(k) is not None}
        item: dict[str, Any] = {
            "content": result.get("memory"), "user_id": result.get("user_id") or default_user, "kind": "fact",
            "agent_id": result.get("agent_id"), "session_id": result.get("run_id"),
            "metadata": {**(result.get("metadata") or {}), **({"mem0": origin} if origin else {})},
            "created_at": _aware(result.get("created_at")),
        }
        items.append({k: v for k, v in item.items() if v is not None})
    return items


def _aware(when: Any) -> Any:
    """An ISO time without an offset as UTC; anything else as given (``normalize`` checks it)."""
    if not isinstance(when, str):
        return when
    try:
        parsed = datetime.fromisoformat(when)
    except ValueError:
        return when
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
