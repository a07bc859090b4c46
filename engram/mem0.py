"""Mem0's open-source ``Memory`` and ``AsyncMemory``, call for call and shape for shape, over Engram.

A Mem0 script runs with its import changed from ``from mem0 import Memory`` to
``from engram.mem0 import Memory``: ``add`` answers ``{"results": [{"id", "memory", "event"}]}``,
``get`` a dict (None for a missing id), ``update``/``delete``/``delete_all`` Mem0's messages,
``history`` a list of dicts, and ``search``/``get_all`` Mem0's items (``hash``, ``updated_at``,
``metadata`` None when empty). ``engram.Memory`` keeps Engram's own calls (records, not dicts);
this class holds one as ``.engram`` for everything Mem0 has no call for.

Where Engram answers differently on purpose, docs/from-mem0.md says so and why: no LLM runs (so
``infer`` stores what was said), a scope without a ``user_id`` is its own user
(``agent:<agent_id>`` or ``run:<run_id>``), and a search ranks with Engram's signals.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from engram import mem0_calls
from engram.attachments import ATTACHMENT_KEYS
from engram.config import RetrievalConfig
from engram.conversation import MESSAGE_FIELDS
from engram.errors import MemoryNotFound, ValidationError, short_repr
from engram.memory import Memory as EngramMemory
from engram.metadata_filter import check
from engram.model import HistoryEvent, plain
from engram.text import ROLE_WORDS
from engram.validate import to_utc

__all__ = ["AsyncMemory", "Memory", "MemoryNotFoundError", "scope", "scoped"]


class MemoryNotFoundError(MemoryNotFound, ValueError):
    """A missing id: Engram's MemoryNotFound, and a ValueError as Mem0's is, so a migrated
    ``except ValueError:`` around ``update`` or ``delete`` still catches it."""


UPDATED = "Memory updated successfully!"
DELETED = "Memory deleted successfully!"
ALL_DELETED = "Memories deleted successfully!"
#: Mem0's one memory_type, and the Engram kind it is stored as.
PROCEDURAL = "procedural_memory"
_EXPIRES = "expiration_date"
#: Keys ``update``'s metadata cannot change: a memory's scope is fixed when it is added, and its
#: expiry is ``expiration_date``'s to set.
_SCOPE_KEYS = frozenset(["user_id", "agent_id", "run_id", "actor_id", _EXPIRES])
_UNSET: Any = object()


class Memory:
    """Mem0's ``Memory`` over an Engram store: ``Memory()`` is ./engram.db, ``Memory("agent.db")``
    or ``Memory("postgresql://...")`` another; keyword arguments go to ``engram.Memory``."""

    def __init__(self, path_or_url: str | os.PathLike[str] | None = None, **options: Any) -> None:
        self.engram = EngramMemory(path_or_url, **options)
        self.config: RetrievalConfig | None = None

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> Memory:
        """Mem0 configures a vector store, an LLM and an embedder; Engram has one store and no LLM."""
        raise ValidationError("config_dict", "Engram has no vector store, LLM or embedder providers to configure: "
                              "use Memory(path_or_url), e.g. Memory('agent.db') or Memory('postgresql://...')")

    @classmethod
    def over(cls, memory: EngramMemory, config: RetrievalConfig | None = None) -> Memory:
        """Mem0's calls over an Engram memory the caller opened and closes (the service's), searching
        with ``config`` (the service's admin settings over the memory's) instead of its own."""
        wrapped = cls.__new__(cls)
        wrapped.engram, wrapped.config = memory, config
        return wrapped

    def close(self) -> None:
        self.engram.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes
    def add(
        self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None, infer: bool = True, memory_type: str | None = None,
        prompt: str | None = None, timestamp: Any = None, expiration_date: Any = None,
    ) -> dict[str, Any]:
        """Store each message as it was said (``infer`` or not: no LLM runs), one memory each."""
        if prompt is not None:
            raise ValidationError("prompt", "Engram runs no LLM on the write path, so there is nothing to prompt")
        if memory_type not in (None, PROCEDURAL):
            raise ValidationError("memory_type", f"allowed: {PROCEDURAL} (or none)")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        elif isinstance(messages, Mapping):
            messages = [messages]
        if not isinstance(messages, Sequence) or isinstance(messages, str):
            raise ValidationError("messages", "must be a text, a message or a list of messages")
        said = _said(messages)
        if not said:
            return {"results": []}
        fields: dict[str, Any] = dict(zip(("agent_id", "run_id"), _trimmed(agent_id, run_id), strict=True))
        extra = dict(_mapping(metadata, "metadata"))
        if expiration_date is not None:
            extra[_EXPIRES] = _day(expiration_date, "expiration_date")
        if extra:
            fields["metadata"] = extra
        if timestamp is not None:
            fields["created_at"] = _when(timestamp, "timestamp")
        kind = "procedure" if memory_type == PROCEDURAL else "message"
        records = self.engram.add(said, user_id=scope(user_id, agent_id, run_id), kind=kind,
                                  **{k: v for k, v in fields.items() if v is not None})
        return {"results": [{"id": r.id, "memory": r.content, "event": "ADD", "actor_id": m.get("name"),
                             "role": m.get("role", r.role), "metadata": _metadata(r.metadata)}
                            for r, m in zip(records, said, strict=True)]}

    def update(self, memory_id: str, data: str | None = None, metadata: Mapping[str, Any] | None = None, *,
               text: str | None = None, timestamp: Any = None, expiration_date: Any = _UNSET) -> dict[str, str]:
        """New text (``data``, or ``text`` as Mem0 now names it), metadata merged into the memory's
        (its scope's keys left out, as Mem0 leaves them), and ``expiration_date`` (None clears it);
        a new text re-embeds."""
        changes: dict[str, Any] = {}
        content = data if data is not None else text
        if content is not None:
            changes["content"] = content
        if timestamp is not None:
            changes["created_at"] = _when(timestamp, "timestamp")
        if not changes and metadata is None and expiration_date is _UNSET:
            raise ValidationError("data", "give the new text (data=...), metadata or expiration_date")
        try:
            if metadata is not None or expiration_date is not _UNSET:
                merged = {**self.engram.get(memory_id).metadata,
                          **{k: v for k, v in _mapping(metadata, "metadata").items() if k not in _SCOPE_KEYS}}
                if expiration_date is None:
                    merged.pop(_EXPIRES, None)
                elif expiration_date is not _UNSET:
                    merged[_EXPIRES] = _day(expiration_date, "expiration_date")
                changes["metadata"] = merged
            self.engram.update(memory_id, **changes)
        except MemoryNotFound as exc:
            raise MemoryNotFoundError(str(exc)) from exc
        return {"message": UPDATED}

    def delete(self, memory_id: str) -> dict[str, str]:
        """Delete one memory; a missing id raises MemoryNotFoundError (Mem0 raises a ValueError)."""
        if not self.engram.delete(memory_id):
            raise MemoryNotFoundError(f"no memory {memory_id!r}")
        return {"message": DELETED}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:
        user = scope(user_id, agent_id, run_id)
        agent_id, run_id = _trimmed(agent_id, run_id)
        mem0_calls.delete_all(self.engram, user_id=user, agent_id=agent_id, run_id=run_id)
        return {"message": ALL_DELETED}

    def reset(self) -> None:
        """DESTRUCTIVE: forget every memory of every user in this store."""
        self.engram.reset()

    # -- reads
    def get(self, memory_id: str) -> dict[str, Any] | None:
        try:
            record = self.engram.get(memory_id)
        except MemoryNotFound:
            return None
        return {**self._item(mem0_calls.record_result(record), record.user_id), "score": None}

    def get_all(self, *, filters: Mapping[str, Any] | None = None, top_k: int = 20, user_id: str | None = None,
                agent_id: str | None = None, run_id: str | None = None, limit: int | None = None,
                **unsupported: Any) -> dict[str, Any]:
        """The scope's memories, newest first, at most ``top_k`` (or ``limit``, Mem0's older name)."""
        _refuse(unsupported)
        user, agent, run, where = scoped(filters, user_id, agent_id, run_id)
        wanted = limit if limit is not None else top_k
        if wanted == 0:
            return {"results": []}
        found = mem0_calls.get_all(self.engram, user_id=user, agent_id=agent, run_id=run, filters=_unexpired(where),
                                   limit=wanted)
        return {"results": [self._item(r, user) for r in found["results"]]}

    def search(self, query: str, *, top_k: int = 20, filters: Mapping[str, Any] | None = None,
               threshold: float | None = 0.1, rerank: bool = False, explain: bool = False, user_id: str | None = None,
               agent_id: str | None = None, run_id: str | None = None, limit: int | None = None,
               **unsupported: Any) -> dict[str, Any]:
        """The scope's memories that matter for ``query``, best first; ``filters`` narrow the
        candidates before ranking, ``threshold`` is the floor. Engram's ranking fuses its signals
        already, so ``rerank`` runs no second model; ``explain`` adds each result's ``score_details``."""
        _refuse(unsupported)
        user, agent, run, where = scoped(filters, user_id, agent_id, run_id)
        if (limit if limit is not None else top_k) == 0:
            return {"results": []}
        config = (self.config or self.engram.config).with_(clip_sentences=None, max_tokens=None)  # whole memories
        # Without a filter of the caller's, expiry is checked on the results: a query on every
        # memory's metadata for the rare expired one would slow each search down.
        found = mem0_calls.search(self.engram, query, user_id=user, agent_id=agent, run_id=run,
                                  limit=limit if limit is not None else top_k,
                                  filters=_unexpired(where) if where else None, threshold=threshold, config=config,
                                  explain=explain)
        today = _today()
        return {"results": [self._item(r, user) for r in found["results"]
                            if str((r["metadata"] or {}).get(_EXPIRES, today)) >= today]}

    def history(self, memory_id: str) -> builtins.list[dict[str, Any]]:
        """Mem0's history rows, oldest first (Engram erases a deleted memory's texts from its log);
        none for an id it has no record of, as Mem0 answers."""
        try:
            events = self.engram.history(memory_id)
        except MemoryNotFound:
            return []
        return [_history_row(i, event) for i, event in enumerate(events, 1)]

    # -- shapes
    def _item(self, result: Mapping[str, Any], user: str) -> dict[str, Any]:
        item: dict[str, Any] = {"id": result["id"], "memory": result["memory"],
                                "hash": hashlib.md5(result["memory"].encode(), usedforsecurity=False).hexdigest()}
        metadata = dict(result.get("metadata") or {})
        expires = metadata.pop(_EXPIRES, None)
        item["metadata"] = metadata or None
        if "score" in result:
            item["score"] = result["score"]
        item["created_at"] = result["created_at"]
        events = self.engram.history(result["id"], user_id=user)
        changed = [e.at for e in events if e.event == "update"]
        item["updated_at"] = changed[-1].isoformat() if changed else result["created_at"]
        if not user.startswith(("agent:", "run:")):
            item["user_id"] = user
        for name in ("agent_id", "run_id", "role"):
            if result.get(name) is not None:
                item[name] = result[name]
        role = result.get("role")
        if isinstance(role, str) and role.strip().casefold() not in ROLE_WORDS:
            item["actor_id"] = role  # a message's ``name``: Engram keeps the speaker as its role
        if expires is not None:
            item[_EXPIRES] = expires
        if "score_details" in result:
            item["score_details"] = result["score_details"]
        return item


class AsyncMemory:
    """Mem0's ``AsyncMemory``: each call of :class:`Memory` awaited in a worker thread."""

    def __init__(self, path_or_url: str | os.PathLike[str] | None = None, **options: Any) -> None:
        self.sync = Memory(path_or_url, **options)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> AsyncMemory:
        """As :meth:`Memory.from_config`: refused, naming what Engram has instead."""
        Memory.from_config(config_dict)
        raise AssertionError("unreachable")  # pragma: no cover

    # Each call takes what :class:`Memory`'s does, positional arguments included, as Mem0's twin does.
    async def add(self, *args: Any, **options: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.add, *args, **options)

    async def search(self, *args: Any, **options: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.search, *args, **options)

    async def get_all(self, **options: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.get_all, **options)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.sync.get, memory_id)

    async def update(self, *args: Any, **options: Any) -> dict[str, str]:
        return await asyncio.to_thread(self.sync.update, *args, **options)

    async def delete(self, memory_id: str) -> dict[str, str]:
        return await asyncio.to_thread(self.sync.delete, memory_id)

    async def delete_all(self, *args: Any, **scope: Any) -> dict[str, str]:
        return await asyncio.to_thread(self.sync.delete_all, *args, **scope)

    async def history(self, memory_id: str) -> builtins.list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.history, memory_id)

    async def reset(self) -> None:
        await asyncio.to_thread(self.sync.reset)

    def close(self) -> None:
        self.sync.close()


def scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> str:
    """The Engram user of a Mem0 scope: the user, else the agent's or run's own (Engram scopes
    every memory by one user, and one user never sees another's)."""
    user_id, agent_id, run_id = _trimmed(user_id, agent_id, run_id)
    for name, given in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if given is not None and not isinstance(given, str):
            raise ValidationError(name, f"must be a string, got {type(given).__name__}")
    if user_id is not None:
        return user_id  # an empty one is refused downstream, never read as no user
    if agent_id is not None:
        return f"agent:{agent_id}"
    if run_id is not None:
        return f"run:{run_id}"
    raise ValidationError("user_id", "at least one of user_id, agent_id or run_id is required")


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    """``value`` when it is a mapping (None: an empty one); anything else is refused by name."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a mapping of key to value, got {type(value).__name__}")
    return value


def _trimmed(*ids: Any) -> tuple[Any, ...]:
    """Each id without surrounding spaces, as Mem0 trims them (None stays None)."""
    return tuple(value.strip() if isinstance(value, str) else value for value in ids)


def scoped(filters: Mapping[str, Any] | None, user_id: str | None, agent_id: str | None,
            run_id: str | None) -> tuple[str, str | None, str | None, dict[str, Any]]:
    """The call's Engram user, agent, run and remaining filter: Mem0 names a scope as arguments or
    as plain values in ``filters`` (an operator on them stays a filter)."""
    where = dict(check(filters)) if filters is not None else {}
    ids = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    for name, given in ids.items():
        named = where.get(name)
        if given is None and isinstance(named, str) and named != "*":
            ids[name] = where.pop(name)
    agent, run = _trimmed(ids["agent_id"], ids["run_id"])
    return scope(**ids), agent, run, where


def _said(messages: Sequence[Any]) -> list[Any]:
    """The messages Mem0 would store: no system message, none without content (an assistant's tool
    call: None or ""), and of each only the keys Engram reads (Mem0 ignores the others: ``id``,
    ``tool_calls``). One with an attachment but no text, or with spaces only, is refused by name."""
    out: list[Any] = []
    for message in messages:
        if not isinstance(message, Mapping):
            out.append(message)  # refused by name downstream
        elif message.get("role") != "system" and (message.get("content") not in (None, "")
                                                  or any(message.get(k) for k in ATTACHMENT_KEYS)):
            out.append({k: v for k, v in message.items() if k in MESSAGE_FIELDS})
    return out


def _refuse(unsupported: Mapping[str, Any]) -> None:
    """An argument given (not None) that Engram cannot honour is a ValueError naming it, rather than
    an answer that silently ignores it (Mem0 ignores some, refuses ``reference_date``)."""
    given = sorted(name for name, value in unsupported.items() if value is not None)
    if given:
        name = given[0]
        raise ValidationError(name, "is not an argument Engram's Mem0 API honours; see docs/from-mem0.md")


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def _unexpired(where: Mapping[str, Any]) -> dict[str, Any]:
    """``where`` and: not past its ``expiration_date`` (``YYYY-MM-DD`` texts order as the days do)."""
    alive = {"OR": [{_EXPIRES: None}, {_EXPIRES: {"gte": _today()}}]}
    return {**where, "AND": [*where.get("AND", []), alive]}


def _when(value: Any, field: str) -> datetime:
    """A Unix time (seconds) or an ISO 8601 time, as UTC."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):  # out of datetime's range, or not finite
            raise ValidationError(field, f"must be a Unix time in datetime's range, got {value!r}") from None
    return to_utc(value, field)


def _day(value: Any, field: str) -> str:
    """An expiration date as ``YYYY-MM-DD`` (Mem0's form), from a date, a datetime or an ISO text."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
        try:  # an ISO time: its day (in UTC when it names its zone)
            when = datetime.fromisoformat(value)
            return (when.astimezone(UTC) if when.tzinfo else when).date().isoformat()
        except ValueError:
            pass
    raise ValidationError(field, f"must be a date such as '2025-12-31', got {short_repr(value)}")


def _metadata(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    return {k: plain(v) for k, v in metadata.items() if k != _EXPIRES} or None


def _history_row(n: int, event: HistoryEvent) -> dict[str, Any]:
    return {"id": n, "memory_id": event.memory_id, "old_memory": event.before, "new_memory": event.after,
            "event": event.event.upper(), "created_at": event.at.isoformat(), "updated_at": None,
            "is_deleted": event.event == "delete", "actor_id": None, "role": None}
