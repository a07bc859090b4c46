"""``MemoryAPI``: the methods ``Memory`` and ``EngramClient`` share, with the same types.

Code written against this Protocol runs unchanged in-process (``Memory``) or against the HTTP
service (``engram.client.EngramClient``); ``tests/service/test_congruence.py`` runs one script
through both and compares the answers. ``Memory`` has more (tuning, the ontology, keyword search,
file ingest by path): those are not part of the shared surface.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, Unpack, overload, runtime_checkable

from engram.config import RetrievalConfig
from engram.conversation import Messages
from engram.documents import Document
from engram.feedback import FeedbackResult
from engram.model import Entity, Filters, HistoryEvent, Link, MemoryChanges, MemoryFields, MemoryRecord
from engram.recall_types import Recall
from engram.retrieve.types import Retrieval

__all__ = ["MemoryAPI"]


@runtime_checkable
class MemoryAPI(Protocol):
    """Store what an agent learns and ask what matters now, wherever the memory lives."""

    def close(self) -> None: ...

    # -- writes
    @overload
    def add(
        self, content: str, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]
    ) -> MemoryRecord: ...

    @overload
    def add(
        self, content: Messages, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]
    ) -> builtins.list[MemoryRecord]: ...

    def add_many(self, items: Iterable[Mapping[str, Any]]) -> builtins.list[MemoryRecord]: ...

    def update(
        self, memory_id: str, data: str | None = None, *, user_id: str, **changes: Unpack[MemoryChanges]
    ) -> MemoryRecord: ...

    def delete(self, memory_id: str, *, user_id: str) -> bool: ...

    def forget_user(self, user_id: str) -> int: ...

    def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any]: ...

    def reset(self) -> int: ...

    def link(self, from_id: str, to_id: str, type: str, strength: float = 1.0, *, user_id: str) -> Link: ...

    def add_entity(
        self, entity_id: str, *, user_id: str, type: str | None = None, name: str | None = None,
        aliases: Sequence[str] = (),
    ) -> Entity: ...

    def feedback(self, retrieval_id: str, used_ids: Sequence[str], *, user_id: str) -> FeedbackResult: ...

    # -- reads
    def get(self, memory_id: str, *, user_id: str) -> MemoryRecord: ...

    def list(
        self, *, user_id: str, filters: Filters | Mapping[str, Any] | None = None, limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[MemoryRecord]: ...

    def links(self, memory_id: str, *, user_id: str) -> builtins.list[Link]: ...

    def history(self, memory_id: str, *, user_id: str) -> builtins.list[HistoryEvent]: ...

    def stats(self) -> Mapping[str, Any]: ...

    def retrieve(
        self, query: str, *, user_id: str, config: RetrievalConfig | None = None, now: datetime | str | None = None,
        session_id: str | None = None, kinds: Sequence[str] | None = None, tags: Sequence[str] | None = None,
        filters: Filters | Mapping[str, Any] | None = None, use_memory: bool = True,
        as_of: datetime | str | None = None, limit: int | None = None, top_k: int | None = None,
        also: Sequence[str] | None = None,
    ) -> Retrieval: ...

    def search(
        self, query: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        limit: int = 100, filters: Mapping[str, Any] | None = None, threshold: float | None = None,
        config: RetrievalConfig | None = None, top_k: int | None = None,
    ) -> dict[str, Any]: ...

    def get_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
        filters: Mapping[str, Any] | None = None, limit: int = 100, top_k: int | None = None,
    ) -> dict[str, Any]: ...

    def recall(
        self, query: str | None = None, *, user_id: str, mode: str = "relevant", max_results: int = 10,
        kind: str | None = None, min_salience: float = 0.0, project_id: str | None = None,
        include_archived: bool = False,
    ) -> Recall: ...

    def recall_temporal(
        self, start: datetime | str, end: datetime | str, *, user_id: str, topic: str | None = None
    ) -> Recall: ...

    def recall_by_kind(self, kind: str, *, user_id: str, limit: int = 10) -> Recall: ...

    def recall_linked(
        self, memory_id: str, *, user_id: str, link_types: Sequence[str] | None = None, depth: int = 1
    ) -> Recall: ...

    def get_document(
        self, meta: Mapping[str, Any], *, user_id: str, k: int = 50, default_tags: Sequence[str] | None = None,
        strategy: str = "latest", as_of: str | datetime | None = None,
    ) -> Document: ...

    def document_versions(self, filename_or_doc_key: str, *, user_id: str) -> builtins.list[Document]: ...
