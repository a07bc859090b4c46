"""``EngramClient``: the ``Memory`` methods over HTTP, raising the same ``engram.errors`` types."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from engram import errors
from engram.config import RetrievalConfig
from engram.model import Entity, Link, MemoryRecord

__all__ = ["EngramClient", "Forbidden", "RemoteRetrieval", "ServiceError", "Unauthorized"]

_TIMES = ("created_at", "recorded_at", "valid_from", "valid_to", "last_accessed_at")
_OVERRIDES = {
    "top_k": "topK", "clip_sentences": "clipSentences", "max_tokens": "maxTokens", "search_type": "searchType",
    "min_score": "minScore", "interleave": "interleave", "mmr_lambda": "mmrLambda", "dedup": "dedup",
    "fusion": "fusion", "weights": "weights", "candidate_limit": "candidateLimit",
    "keyword_weight": "keywordWeight", "include_superseded": "includeSuperseded",
}


class ServiceError(errors.EngramError):
    """An answer of the service with no counterpart in ``engram.errors`` (413, 501, ...)."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class Unauthorized(ServiceError):
    pass


class Forbidden(ServiceError):
    pass


def _error_classes() -> dict[str, type[errors.EngramError]]:
    found: dict[str, type[errors.EngramError]] = {}
    for name in errors.__all__:
        cls = getattr(errors, name)
        found.setdefault(cls.code, cls)
    return found


_BY_CODE = _error_classes()


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        error = response.json().get("error", {})
    except ValueError:
        error = {}
    code = str(error.get("code", f"HTTP_{response.status_code}"))
    message = str(error.get("message", response.text[:200]))
    cls = _BY_CODE.get(code)
    if cls is not None and issubclass(cls, errors.ValidationError):
        name = str(error.get("field", "input"))
        prefix = f"{name}: "
        raise cls(name, message[len(prefix):] if message.startswith(prefix) else message)
    if cls is not None:
        raise cls(message)
    if response.status_code == 401:
        raise Unauthorized(code, message, 401)
    if response.status_code == 403:
        raise Forbidden(code, message, 403)
    raise ServiceError(code, message, response.status_code)


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def to_record(data: Mapping[str, Any]) -> MemoryRecord:
    values = {_snake(k): v for k, v in data.items()}
    for name in _TIMES:
        if isinstance(values.get(name), str):
            values[name] = datetime.fromisoformat(values[name])
    for name in ("tags", "entities"):
        values[name] = tuple(values.get(name) or ())
    known = MemoryRecord.__dataclass_fields__
    return MemoryRecord(**{k: v for k, v in values.items() if k in known})


@dataclass(frozen=True)
class RemoteRetrieval:
    """A retrieval answered over HTTP: the seed 001 payload, and the prompt when one was asked for."""

    payload: Mapping[str, Any]
    prompt: str | None = None
    memories: tuple[Mapping[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"memories": list(self.payload.get("memories", [])), "metadata": dict(self.payload["metadata"])}

    def ids(self) -> builtins.list[str]:
        return [str(m["id"]) for m in self.payload.get("memories", [])]

    @property
    def metadata(self) -> Mapping[str, Any]:
        return dict(self.payload["metadata"])

    def to_prompt(self, style: str = "policy") -> str:
        if self.prompt is None:
            raise ValueError("ask retrieve(..., format='policy') to have the service render the prompt")
        return self.prompt


class EngramClient:
    """>>> client = EngramClient("http://127.0.0.1:8000", api_key)          # doctest: +SKIP"""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
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
        _raise_for(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    # -- the Memory methods -------------------------------------------------------------------------
    def add(self, content: str, *, user_id: str, kind: str = "message", **fields: Any) -> MemoryRecord:
        return to_record(self._call("POST", "/v1/memories", json=_body(content=content, user_id=user_id,
                                                                      kind=kind, **fields)))

    def add_many(self, items: Iterable[Mapping[str, Any]]) -> builtins.list[MemoryRecord]:
        memories = [_body(**item) for item in items]
        if not memories:
            return []
        data = self._call("POST", "/v1/memories/batch", json={"memories": memories})
        return [to_record(m) for m in data["memories"]]

    def get(self, memory_id: str, *, user_id: str) -> MemoryRecord:
        return to_record(self._call("GET", f"/v1/memories/{_seg(memory_id)}", params={"userId": user_id}))

    def update(self, memory_id: str, *, user_id: str, **changes: Any) -> MemoryRecord:
        body = _body(user_id=user_id, **changes)
        return to_record(self._call("PATCH", f"/v1/memories/{_seg(memory_id)}", json=body))

    def delete(self, memory_id: str, *, user_id: str) -> bool:
        try:
            self._call("DELETE", f"/v1/memories/{_seg(memory_id)}", params={"userId": user_id})
        except errors.MemoryNotFound:
            return False
        return True

    def forget_user(self, user_id: str) -> int:
        return int(self._call("DELETE", f"/v1/users/{_seg(user_id)}")["deleted"])

    def list(self, *, user_id: str, kind: str | None = None, limit: int = 100,
             offset: int = 0) -> builtins.list[MemoryRecord]:
        params: dict[str, Any] = {"userId": user_id, "limit": limit, "offset": offset}
        if kind:
            params["kind"] = kind
        return [to_record(m) for m in self._call("GET", "/v1/memories", params=params)["memories"]]

    def link(self, from_id: str, to_id: str, type: str, strength: float = 1.0, *, user_id: str) -> Link:
        data = self._call("POST", "/v1/links", json={"userId": user_id, "fromId": from_id, "toId": to_id,
                                                     "type": type, "strength": strength})
        return Link(data["fromId"], data["toId"], data["type"], data["strength"])

    def links(self, memory_id: str, *, user_id: str) -> builtins.list[Link]:
        data = self._call("GET", f"/v1/memories/{_seg(memory_id)}/links", params={"userId": user_id})
        return [Link(d["fromId"], d["toId"], d["type"], d["strength"]) for d in data["links"]]

    def add_entity(self, entity_id: str, *, user_id: str, type: str | None = None, name: str | None = None,
                   aliases: Sequence[str] = ()) -> Entity:
        data = self._call("POST", "/v1/entities", json=_body(user_id=user_id, entity_id=entity_id, type=type,
                                                             name=name, aliases=list(aliases)))
        return Entity(data["id"], data["type"], data["name"], tuple(data.get("aliases") or ()))

    def history(self, memory_id: str, *, user_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/memories/{_seg(memory_id)}/history",
                                            params={"userId": user_id})
        return result

    def stats(self) -> Mapping[str, Any]:
        """Store-wide counts; an admin key's privilege, since they span every user."""
        result: Mapping[str, Any] = self._call("GET", "/v1/admin/stats")
        return result

    def retrieve(
        self, query: str, *, user_id: str, config: RetrievalConfig | Mapping[str, Any] | None = None,
        now: datetime | str | None = None, session_id: str | None = None, kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None, use_memory: bool = True, format: str | None = None,
    ) -> RemoteRetrieval:
        body: dict[str, Any] = {"userId": user_id, "message": query, "useMemory": use_memory}
        if config is not None:
            body["config"] = _overrides(config)
        if now is not None:
            body["now"] = now.isoformat() if isinstance(now, datetime) else now
        if session_id is not None:
            body["filters"] = {"sessionId": session_id}
        if kinds is not None:
            body["kinds"] = builtins.list(kinds)
        if tags:
            body["tags"] = builtins.list(tags)
        if format is not None:
            body["format"] = format
        data = self._call("POST", "/v1/retrieve", json=body)
        return RemoteRetrieval(payload=data, prompt=data.get("prompt"), memories=tuple(data["memories"]))

    def recall(self, query: str | None = None, *, user_id: str, mode: str = "relevant", max_results: int = 10,
               kind: str | None = None, min_salience: float = 0.0, project_id: str | None = None,
               include_archived: bool = False) -> Any:
        return self._call("POST", "/v1/recall", json=_body(
            user_id=user_id, mode=mode, query=query, max_results=max_results, kind=kind, min_salience=min_salience,
            project_id=project_id, include_archived=include_archived))

    def recall_temporal(self, start: datetime | str, end: datetime | str, *, user_id: str,
                        topic: str | None = None) -> Any:
        return self._call("POST", "/v1/recall", json=_body(user_id=user_id, mode="temporal", start=start, end=end,
                                                           topic=topic))

    def recall_by_kind(self, kind: str, *, user_id: str, limit: int = 10) -> Any:
        return self._call("POST", "/v1/recall", json=_body(user_id=user_id, mode="by_kind", kind=kind,
                                                           max_results=limit))

    def recall_linked(self, memory_id: str, *, user_id: str, link_types: Sequence[str] | None = None,
                      depth: int = 1) -> Any:
        return self._call("POST", "/v1/recall", json=_body(
            user_id=user_id, mode="linked", memory_id=memory_id,
            link_types=builtins.list(link_types) if link_types is not None else None, depth=depth))

    def ingest(self, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, user_id: str,
               tags: Sequence[str] = (), topic: str | None = None, note: str | None = None,
               force: bool = False) -> Any:
        """Upload local files; the service keys a document's versions by its file name."""
        items = [paths] if isinstance(paths, (str, os.PathLike)) else builtins.list(paths)
        documents = [{"name": Path(p).name, "content": Path(p).read_text(encoding="utf-8")} for p in items]
        return self._call("POST", "/v1/documents", json=_body(
            user_id=user_id, documents=documents, tags=builtins.list(tags), topic=topic, note=note, force=force))

    def get_document(self, meta: Mapping[str, Any] | str, *, user_id: str, k: int = 50,
                     default_tags: Sequence[str] | None = None, strategy: str = "latest",
                     as_of: datetime | str | None = None) -> Any:
        return self._call("POST", "/v1/documents/query", json=_body(
            user_id=user_id, meta=dict(meta) if isinstance(meta, Mapping) else meta, k=k,
            default_tags=builtins.list(default_tags) if default_tags is not None else None,
            strategy=strategy, as_of=as_of))

    def feedback(self, retrieval_id: str, used_ids: Sequence[str], *, user_id: str) -> Any:
        return self._call("POST", "/v1/feedback", json={"userId": user_id, "retrievalId": retrieval_id,
                                                        "usedIds": builtins.list(used_ids)})

    # -- the service's own --------------------------------------------------------------------------
    def health(self) -> bool:
        return bool(self._call("GET", "/healthz").get("status") == "ok")

    def metrics(self) -> str:
        return str(self._call("GET", "/metrics"))

    def admin_settings(self, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Read, or with ``settings`` (seed 001 shape) change, AdminMemorySettings."""
        if settings is None:
            current: dict[str, Any] = self._call("GET", "/v1/admin/settings")
            return current
        changed: dict[str, Any] = self._call("PUT", "/v1/admin/settings", json=dict(settings))
        return changed


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _body(**fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple):
            value = builtins.list(value)
        out[_camel(name)] = value
    return out


def _overrides(config: RetrievalConfig | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(config, RetrievalConfig):
        values = {name: getattr(config, name) for name in _OVERRIDES}
        values["weights"] = dict(config.weights) if config.weights is not None else None
        return {_OVERRIDES[k]: v for k, v in values.items() if v is not None}
    return {_OVERRIDES.get(k, k): v for k, v in config.items()}


def _seg(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")
