"""``EngramClient``: the ``Memory`` methods over HTTP (``engram.api.MemoryAPI``), answering with
the same types as ``Memory`` and raising the same ``engram.errors`` types.

>>> with EngramClient("http://127.0.0.1:8000", api_key) as client:        # doctest: +SKIP
...     client.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
...     client.retrieve("How does Acme pay?", user_id="u1").to_prompt()
"""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, overload
from urllib.parse import quote

from engram import mem0_calls as mem0
from engram.api import MemoryAPI
from engram.config import RetrievalConfig
from engram.conversation import Messages, is_conversation
from engram.documents import Document
from engram.errors import Forbidden, MemoryNotFound, ServiceError, Unauthorized, ValidationError
from engram.extras import needs
from engram.feedback import FeedbackResult
from engram.ingest.files import IngestReport
from engram.model import Entity, Filters, HistoryEvent, Link, MemoryRecord
from engram.recall_types import Recall
from engram.retrieve.types import Retrieval
from engram.validate import aware_time, top_k_shortcut

with needs("EngramClient", "service"):  # httpx, and pydantic under engram.wire
    import httpx

    from engram.wire import (
        config_overrides,
        decode,
        decode_retrieval,
        error_from,
        jsonable,
        list_params,
        retrieve_filters,
        to_camel,
    )

# The error classes were the client's own; they are engram.errors' now, re-exported for old imports.
__all__ = ["EngramClient", "Forbidden", "ServiceError", "Unauthorized"]


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a 429's ``Retry-After`` asks for (whole seconds or an HTTP date); None if it has none."""
    value = response.headers.get("retry-after", "").strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class EngramClient:
    """One API key's view of an Engram service; every method is the ``Memory`` method of that name."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None, retries: int = 2, max_wait: float = 30.0) -> None:
        """``retries``: how many times a request the service refused with 429 (its rate limit) is sent
        again, each after the answer's ``Retry-After`` seconds; a wait longer than ``max_wait`` seconds
        is not waited: the call raises ``RateLimited`` (its ``retry_after`` says how long) at once."""
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise ValidationError("retries", f"must be an integer in [0, 10], got {retries!r}")
        self.retries = retries
        self.max_wait = max_wait
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"), timeout=timeout, transport=transport,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": "engram-client"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EngramClient:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        response = self._http.request(method, path, json=json, params=params)
        for _ in range(self.retries):
            # A 429 is answered before the route runs: nothing was done, so any request may go again.
            wait = retry_after(response) if response.status_code == 429 else None
            if wait is None or wait > self.max_wait:
                break
            time.sleep(wait)
            response = self._http.request(method, path, json=json, params=params)
        if not response.is_success:
            try:
                error = response.json().get("error", {})
            except ValueError:
                error = {"message": response.text[:200]}
            raise error_from(response.status_code, error, response.headers)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    # -- writes ---------------------------------------------------------------------------------------
    @overload
    def add(self, content: str, *, user_id: str, kind: str = "message", **fields: Any) -> MemoryRecord: ...

    @overload
    def add(
        self, content: Messages, *, user_id: str, kind: str = "message", **fields: Any
    ) -> builtins.list[MemoryRecord]: ...

    def add(
        self, content: str | Messages, *, user_id: str, kind: str = "message", **fields: Any
    ) -> MemoryRecord | builtins.list[MemoryRecord]:
        if not is_conversation(content):
            body = _body(content=content, kind=kind, **fields)
            return decode(MemoryRecord, self._call("POST", "/v1/memories", json=body, params=_user(user_id)))
        messages = [content] if isinstance(content, Mapping) else builtins.list(content)
        body = _body(messages=messages, kind=kind, **fields)
        data = self._call("POST", "/v1/memories", json=body, params=_user(user_id))
        return [decode(MemoryRecord, m) for m in data["memories"]]

    def add_many(self, items: Iterable[Mapping[str, Any]]) -> builtins.list[MemoryRecord]:
        memories = [_body(**item) for item in items]
        if not memories:
            return []
        data = self._call("POST", "/v1/memories/batch", json={"memories": memories})
        return [decode(MemoryRecord, m) for m in data["memories"]]

    def update(self, memory_id: str, data: str | None = None, *, user_id: str, **changes: Any) -> MemoryRecord:
        body = _body(content=data, **changes)
        path = f"/v1/memories/{_seg(memory_id)}"
        return decode(MemoryRecord, self._call("PATCH", path, json=body, params=_user(user_id)))

    def delete(self, memory_id: str, *, user_id: str) -> bool:
        try:
            self._call("DELETE", f"/v1/memories/{_seg(memory_id)}", params=_user(user_id))
        except MemoryNotFound:
            return False
        return True

    def forget_user(self, user_id: str) -> int:
        return int(self._call("DELETE", f"/v1/users/{_seg(user_id)}")["deleted"])

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, Any]:
        return mem0.delete_all(self, user_id=user_id, agent_id=agent_id, run_id=run_id)

    def reset(self) -> int:
        """DESTRUCTIVE: forget every user of the service's store; an admin key's privilege."""
        return int(self._call("POST", "/v1/admin/reset")["deleted"])

    def link(self, from_id: str, to_id: str, type: str, strength: float = 1.0, *, user_id: str) -> Link:
        body = _body(from_id=from_id, to_id=to_id, type=type, strength=strength)
        return decode(Link, self._call("POST", "/v1/links", json=body, params=_user(user_id)))

    def add_entity(self, entity_id: str, *, user_id: str, type: str | None = None, name: str | None = None,
                   aliases: Sequence[str] = ()) -> Entity:
        body = _body(entity_id=entity_id, type=type, name=name, aliases=builtins.list(aliases))
        return decode(Entity, self._call("POST", "/v1/entities", json=body, params=_user(user_id)))

    def feedback(self, retrieval_id: str, used_ids: Sequence[str], *, user_id: str) -> FeedbackResult:
        body = _body(retrieval_id=retrieval_id, used_ids=builtins.list(used_ids))
        return decode(FeedbackResult, self._call("POST", "/v1/feedback", json=body, params=_user(user_id))["result"])

    def ingest(self, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, user_id: str,
               tags: Sequence[str] = (), topic: str | None = None, note: str | None = None,
               force: bool = False) -> IngestReport:
        """Upload local files; the service keys a document's versions by its file name, not its path."""
        items = [paths] if isinstance(paths, (str, os.PathLike)) else builtins.list(paths)
        documents = [{"name": Path(p).name, "content": Path(p).read_text(encoding="utf-8")} for p in items]
        body = _body(documents=documents, tags=builtins.list(tags), topic=topic, note=note, force=force)
        return decode(IngestReport, self._call("POST", "/v1/documents", json=body, params=_user(user_id)))

    # -- reads ----------------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str) -> MemoryRecord:
        data = self._call("GET", f"/v1/memories/{_seg(memory_id)}", params=_user(user_id))
        return decode(MemoryRecord, data)

    def list(self, *, user_id: str, filters: Filters | Mapping[str, Any] | None = None, limit: int = 100,
             offset: int = 0) -> builtins.list[MemoryRecord]:
        params = {**_user(user_id), "limit": limit, "offset": offset, **list_params(filters)}
        return [decode(MemoryRecord, m) for m in self._call("GET", "/v1/memories", params=params)["memories"]]

    def links(self, memory_id: str, *, user_id: str) -> builtins.list[Link]:
        data = self._call("GET", f"/v1/memories/{_seg(memory_id)}/links", params=_user(user_id))
        return [decode(Link, d) for d in data["links"]]

    def history(self, memory_id: str, *, user_id: str) -> builtins.list[HistoryEvent]:
        """Every change to the memory, oldest first (the ``events`` of its history route)."""
        data = self._call("GET", f"/v1/memories/{_seg(memory_id)}/history", params=_user(user_id))
        return [decode(HistoryEvent, e) for e in data["events"]]

    def stats(self) -> Mapping[str, Any]:
        """Store-wide counts; an admin key's privilege, since they span every user."""
        result: Mapping[str, Any] = self._call("GET", "/v1/admin/stats")
        return result

    def retrieve(
        self, query: str, *, user_id: str, config: RetrievalConfig | Mapping[str, Any] | None = None,
        now: datetime | str | None = None, session_id: str | None = None, kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None, filters: Filters | Mapping[str, Any] | None = None,
        use_memory: bool = True, as_of: datetime | str | None = None, limit: int | None = None,
        top_k: int | None = None, also: Sequence[str] | None = None,
    ) -> Retrieval:
        """As ``Memory.retrieve``; ``to_prompt`` on the answer renders the prompt locally."""
        k = top_k_shortcut(limit, top_k, config)
        wire = retrieve_filters(filters)
        if session_id is not None:
            wire["sessionId"] = session_id
        body = _body(message=query, use_memory=use_memory, now=now, as_of=as_of,
                     kinds=wire.pop("kinds", None), tags=wire.pop("tags", None))
        if kinds is not None:
            body["kinds"] = builtins.list(kinds)
        if tags:
            body["tags"] = builtins.list(tags)
        if wire:
            body["filters"] = wire
        if also is not None:
            body["also"] = [also] if isinstance(also, str) else builtins.list(also)  # the server refuses a string
        if config is not None or k is not None:
            body["config"] = {**config_overrides(config or {}), **({"topK": k} if k is not None else {})}
        data = self._call("POST", "/v1/retrieve", json=body, params=_user(user_id))
        return decode_retrieval(data, query, aware_time(now, "now") if now is not None else None)

    def search(self, query: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
               limit: int = 100, filters: Mapping[str, Any] | None = None, threshold: float | None = None,
               config: RetrievalConfig | None = None, top_k: int | None = None) -> dict[str, Any]:
        return mem0.search(self, query, user_id=user_id, agent_id=agent_id, run_id=run_id,
                           limit=mem0.top_k_or(top_k, limit), filters=filters, threshold=threshold, config=config)

    def get_all(self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                filters: Mapping[str, Any] | None = None, limit: int = 100, top_k: int | None = None) -> dict[str, Any]:
        return mem0.get_all(self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters,
                            limit=mem0.top_k_or(top_k, limit))

    def recall(self, query: str | None = None, *, user_id: str, mode: str = "relevant", max_results: int = 10,
               kind: str | None = None, min_salience: float = 0.0, project_id: str | None = None,
               include_archived: bool = False) -> Recall:
        return self._recall(user_id=user_id, mode=mode, query=query, max_results=max_results, kind=kind,
                            min_salience=min_salience, project_id=project_id, include_archived=include_archived)

    def recall_temporal(self, start: datetime | str, end: datetime | str, *, user_id: str,
                        topic: str | None = None) -> Recall:
        return self._recall(user_id=user_id, mode="temporal", start=start, end=end, topic=topic)

    def recall_by_kind(self, kind: str, *, user_id: str, limit: int = 10) -> Recall:
        return self._recall(user_id=user_id, mode="by_kind", kind=kind, max_results=limit)

    def recall_linked(self, memory_id: str, *, user_id: str, link_types: Sequence[str] | None = None,
                      depth: int = 1) -> Recall:
        return self._recall(user_id=user_id, mode="linked", memory_id=memory_id, link_types=link_types, depth=depth)

    def _recall(self, *, user_id: str, **fields: Any) -> Recall:
        return decode(Recall, self._call("POST", "/v1/recall", json=_body(**fields), params=_user(user_id)))

    def get_document(self, meta: Mapping[str, Any] | str, *, user_id: str, k: int = 50,
                     default_tags: Sequence[str] | None = None, strategy: str = "latest",
                     as_of: datetime | str | None = None) -> Document:
        body = _body(meta=dict(meta) if isinstance(meta, Mapping) else meta, k=k, default_tags=default_tags,
                     strategy=strategy, as_of=as_of)
        return decode(Document, self._call("POST", "/v1/documents/query", json=body, params=_user(user_id)))

    def document_versions(self, filename_or_doc_key: str, *, user_id: str) -> builtins.list[Document]:
        data = self._call("GET", "/v1/documents/versions", params={**_user(user_id), "name": filename_or_doc_key})
        return [decode(Document, d) for d in data["versions"]]

    # -- the service's own ----------------------------------------------------------------------------
    def health(self) -> bool:
        return bool(self._call("GET", "/healthz").get("status") == "ok")

    def metrics(self) -> str:
        return str(self._call("GET", "/metrics"))

    def admin_settings(self, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Read, or with ``settings`` (``{"retrieval": {...}, "interleaving": {...}}``) change, AdminMemorySettings."""
        if settings is None:
            current: dict[str, Any] = self._call("GET", "/v1/admin/settings")
            return current
        changed: dict[str, Any] = self._call("PUT", "/v1/admin/settings", json=dict(settings))
        return changed


def _body(**fields: Any) -> dict[str, Any]:
    """A request body: the given fields in their wire spelling, unset ones left out."""
    return {to_camel(name): jsonable(value) for name, value in fields.items() if value is not None}


def _user(user_id: str) -> dict[str, str]:
    """The query parameter by which every route names its user (the service's one convention)."""
    return {"userId": user_id}


def _seg(value: str) -> str:
    return quote(value, safe="")


if TYPE_CHECKING:
    from engram.memory import Memory

    def _one_api(memory: Memory, client: EngramClient) -> tuple[MemoryAPI, MemoryAPI]:
        # mypy proves here that both implement MemoryAPI with compatible signatures.
        return memory, client
