"""LangChain on Engram: ``EngramRetriever`` (a ``BaseRetriever``), ``add_messages`` (chat history in) and
``EngramChatMessageHistory`` (a ``BaseChatMessageHistory``).

The retriever answers with Engram's ranked, explained memories as ``Document``s; the ``Document``'s
metadata carries what the ranking saw (score, signals, reasons) so a chain can show or filter on it, and
the ``retrieval_id`` that ``Memory.feedback`` takes. ``add_messages`` stores LangChain messages as
Engram ``message`` memories, one per message, with the speaker and session that retrieval uses; the
chat history is those memories of one session read back in order, so what a conversation said is
also what later retrievals find.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from engram import Filters, MemoryEntry, MemoryRecord, RetrievalConfig
from engram.api import MemoryAPI
from engram.extras import needs
from engram.validate import to_utc

with needs("engram.integrations.langchain", "langchain"):
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field

__all__ = ["SEARCH_KWARGS", "EngramChatMessageHistory", "EngramRetriever", "add_messages", "entry_document",
           "message_role", "record_message"]


#: ``search_kwargs`` a LangChain retriever takes (``as_retriever(search_kwargs=...)``), and what each
#: is in Engram: ``k`` the number of memories, ``filter`` equality on the memories' metadata,
#: ``score_threshold`` the score floor.
SEARCH_KWARGS = ("k", "filter", "score_threshold")


class EngramRetriever(BaseRetriever):
    """Engram's retrieval as a LangChain retriever: ``EngramRetriever(memory, user_id="maya")``.

    ``memory`` is any ``MemoryAPI``: a ``Memory``, or an ``EngramClient`` of the service. ``config`` (a
    ``RetrievalConfig``: top_k, token budget, ...), ``session_id``, ``kinds`` and ``filters``
    (``{"tags_all": [...]}``, ``{"metadata": {...}}``, ...) are passed to ``retrieve`` on every query;
    ``search_kwargs`` takes LangChain's names (:data:`SEARCH_KWARGS`) over them. An unknown argument is
    refused (``tags`` and ``metadata`` are BaseRetriever's own fields: they label LangChain's traces).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    memory: Any  # a MemoryAPI, checked in __init__ (a Protocol is no pydantic type)
    user_id: str
    config: Any = None  # a RetrievalConfig; Any so pydantic keeps the frozen dataclass as given
    session_id: str | None = None
    kinds: Sequence[str] | None = None
    filters: Mapping[str, Any] | None = None
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, memory: MemoryAPI | None = None, /, **data: Any) -> None:
        if memory is not None:
            data["memory"] = memory
        super().__init__(**data)
        if not isinstance(self.memory, MemoryAPI):
            raise TypeError(f"memory must be an engram Memory or EngramClient, got {type(self.memory).__name__}")
        if self.config is not None and not isinstance(self.config, RetrievalConfig):
            raise TypeError(f"config must be a RetrievalConfig, got {type(self.config).__name__}")
        unknown = sorted(set(self.search_kwargs) - set(SEARCH_KWARGS))
        if unknown:
            raise ValueError(f"unknown search_kwargs {unknown}; EngramRetriever takes {list(SEARCH_KWARGS)}")
        self._arguments()  # a wrong k, filter or score_threshold fails here, not at the first query

    def _arguments(self) -> dict[str, Any]:
        """What ``retrieve`` is called with: the fields, then ``search_kwargs`` over them."""
        given = self.search_kwargs
        config, filters, top_k = self.config, dict(self.filters or {}), None
        if "k" in given:
            top_k = given["k"]
            if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
                raise ValueError(f"search_kwargs['k'] must be a positive integer, got {top_k!r}")
        if "filter" in given:
            if not isinstance(given["filter"], Mapping):
                raise ValueError("search_kwargs['filter'] must be a dict of metadata values")
            filters["metadata"] = {**filters.get("metadata", {}), **given["filter"]}
        if "score_threshold" in given:
            base = config or getattr(self.memory, "config", None) or RetrievalConfig()
            config = base.with_(min_score=given["score_threshold"])  # ConfigError names a bad value
        return {"config": config, "session_id": self.session_id, "kinds": self.kinds, "filters": filters or None,
                "top_k": top_k}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        # The async path is BaseRetriever's: it runs this in an executor, so the event loop stays free.
        result = self.memory.retrieve(query, user_id=self.user_id, **self._arguments())
        retrieval_id = result.metadata.retrieval_id
        return [entry_document(entry, retrieval_id=retrieval_id) for entry in result.memories]


def entry_document(entry: MemoryEntry, *, retrieval_id: str | None = None) -> Document:
    """One retrieved memory as a ``Document``: its (clipped, redacted) text and why it was chosen."""
    record = entry.record
    metadata: dict[str, Any] = {
        "id": entry.id,
        "score": entry.score,
        "type": entry.type,
        "timestamp": entry.timestamp,
        "session_id": entry.session_id,
        "role": entry.role,
        "signals": dict(entry.signals),
        "reasons": list(entry.reasons),
        "retrieval_id": retrieval_id,
    }
    if record is not None:
        metadata["tags"] = list(record.tags)
        metadata["metadata"] = dict(record.metadata)
    return Document(page_content=entry.content, metadata=metadata, id=entry.id)


#: LangChain message classes and the Engram role each is stored under (subclasses, such as the
#: streaming chunks, match their parent).
_ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"),
    (AIMessage, "assistant"),
    (SystemMessage, "system"),
    (ToolMessage, "tool"),
    (FunctionMessage, "tool"),
)


def message_role(message: BaseMessage) -> str:
    """The Engram role of a message: user, assistant, system, tool, or a ``ChatMessage``'s own role."""
    if isinstance(message, ChatMessage):
        return message.role
    for cls, role in _ROLES:
        if isinstance(message, cls):
            return role
    raise TypeError(f"unsupported message type: {type(message).__name__}")


def add_messages(
    memory: MemoryAPI,
    messages: Sequence[BaseMessage],
    *,
    user_id: str,
    session_id: str | None = None,
    agent_id: str | None = None,
    created_at: datetime | str | None = None,
    tags: Sequence[str] = (),
) -> list[MemoryRecord]:
    """Store chat messages as Engram ``message`` memories, in order, in one batch; returns what was stored.

    A message with a ``name`` is stored under that speaker (Engram embeds "Maya: ..." so questions about
    what Maya said find it); the LangChain type, name, id and tool call id go to the memory's metadata.
    Messages without text (an AI turn that only calls tools) are skipped. The n-th message is stored at
    ``created_at`` (default: now) plus n microseconds, as ``Memory.add`` does with chat messages: one
    timestamp for the whole batch would leave its order to chance.
    """
    start = to_utc(created_at, "created_at") if created_at is not None else datetime.now(UTC)
    items: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise TypeError(f"messages must be LangChain BaseMessage objects, got {type(message).__name__}")
        text = message.text
        if not text.strip():
            continue
        metadata: dict[str, Any] = {"message_type": message.type, "message_role": message_role(message)}
        if message.name:
            metadata["name"] = message.name
        if message.id:
            metadata["message_id"] = message.id  # Engram's retrieval entries report it as message_id
        if isinstance(message, ToolMessage):
            metadata["tool_call_id"] = message.tool_call_id
        item: dict[str, Any] = {
            "content": text,
            "user_id": user_id,
            "kind": "message",
            "role": message.name or message_role(message),
            "metadata": metadata,
            "tags": list(tags),
            "created_at": start + timedelta(microseconds=position),
        }
        for field, value in (("session_id", session_id), ("agent_id", agent_id)):
            if value is not None:
                item[field] = value
        items.append(item)
    return memory.add_many(items)


def record_message(record: MemoryRecord) -> BaseMessage:
    """A stored ``message`` memory as the LangChain message it was (its class, name, id, tool call id);
    one stored without LangChain becomes a message of its role (user, assistant, system, else a
    ``ChatMessage``). The text is the stored text: a multimodal message comes back as its text parts."""
    meta = record.metadata
    common: dict[str, Any] = {"content": record.content, "id": meta.get("message_id") or record.id}
    if meta.get("name"):
        common["name"] = meta["name"]
    kind = meta.get("message_type") or {"user": "human", "assistant": "ai", "system": "system"}.get(record.role or "")
    if kind == "human":
        return HumanMessage(**common)
    if kind == "ai":
        return AIMessage(**common)
    if kind == "system":
        return SystemMessage(**common)
    if kind == "tool" and meta.get("tool_call_id"):
        return ToolMessage(tool_call_id=meta["tool_call_id"], **common)
    if kind == "function" and meta.get("name"):
        return FunctionMessage(**common)
    return ChatMessage(role=meta.get("message_role") or record.role or "user", **common)


class EngramChatMessageHistory(BaseChatMessageHistory):
    """One conversation of one user, kept as Engram ``message`` memories of the session ``session_id``.

    ``EngramChatMessageHistory(memory, user_id="maya", session_id="chat-42")`` works with any ``MemoryAPI``
    (a ``Memory``, or an ``EngramClient`` of the service). ``add_messages`` stores through
    :func:`add_messages`; ``messages`` reads the session's messages oldest first; ``clear`` deletes them
    (the session's other memories, such as facts, stay). langchain-core 1.6.4 deprecated the base class
    in favour of LangGraph's persistence; this is for code that already uses it
    (``RunnableWithMessageHistory``); new agents can use ``EngramStore`` with LangGraph.
    """

    def __init__(self, memory: MemoryAPI, *, user_id: str, session_id: str, agent_id: str | None = None,
                 tags: Sequence[str] = ()) -> None:
        self.memory = memory
        self.user_id = user_id
        self.session_id = session_id
        self.agent_id = agent_id
        self.tags = tuple(tags)

    def _records(self) -> list[MemoryRecord]:
        filters = Filters(kinds=("message",), session_id=self.session_id, agent_id=self.agent_id)
        newest_first: list[MemoryRecord] = []
        while True:  # pages of the store's newest-first listing, until one comes back short
            page = self.memory.list(user_id=self.user_id, filters=filters, limit=1000, offset=len(newest_first))
            newest_first += page
            if len(page) < 1000:
                return newest_first[::-1]

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # a property, as the base documents
        return [record_message(r) for r in self._records()]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        add_messages(self.memory, messages, user_id=self.user_id, session_id=self.session_id,
                     agent_id=self.agent_id, tags=self.tags)

    def clear(self) -> None:
        for record in self._records():
            self.memory.delete(record.id, user_id=self.user_id)
