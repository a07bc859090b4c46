"""The MCP tools over one user's memory: write, read, search, recall and documents.

Every argument is described, with its range or its choices in the input schema; every tool says
whether it only reads, and whether it can destroy (``ToolAnnotations``), so a host can let an
agent search freely and ask before a delete. Answers are JSON (compact where an agent reads many),
failures JSON error results (``engram.mcp.results``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.types import ToolAnnotations
from pydantic import Field

from engram.config import RetrievalConfig
from engram.errors import ValidationError
from engram.mcp.results import EngramMCP, answered, brief, compact, document_meta, full, typed_errors
from engram.wire import encode

if TYPE_CHECKING:
    from engram.api import MemoryAPI

__all__ = ["INSTRUCTIONS", "build_server"]

# Module level: the SDK reads the annotations to build each input schema.
AddKind = Literal["fact", "message", "episode", "procedure", "summary"]
Kind = Literal["message", "fact", "episode", "procedure", "summary", "document", "chunk"]
Status = Literal["active", "archived", "superseded", "deleted"]
Mode = Literal["relevant", "recent", "important", "frequent", "temporal", "by_kind", "linked"]
Style = Literal["policy", "policy_spec", "augmentation"]
Strategy = Literal["latest", "earliest", "longest", "score"]

MemoryId = Annotated[str, Field(min_length=1, max_length=256, description="A memory's id, as a tool returned it.")]
Query = Annotated[str, Field(min_length=1, max_length=2000, description="What to look for, in plain words.")]
TopK = Annotated[int, Field(ge=1, le=20, description="How many memories at most.")]
Tags = Annotated[list[Annotated[str, Field(max_length=256)]] | None,
                 Field(max_length=100, description="Tags (short labels); a filter needs every one of them.")]
Time = Annotated[str | None, Field(max_length=64, description="An ISO-8601 time, e.g. 2026-03-01T09:00:00+00:00.")]
Importance = Annotated[float | None, Field(ge=0.0, le=1.0, description="0-1; default 0.5 (procedures 0.8).")]
Session = Annotated[str | None, Field(max_length=256, description="The conversation this belongs to.")]

F = TypeVar("F", bound=Callable[..., Any])
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
#: Reads that count what they return as used (access counts, which ``recall``'s frequent mode and
#: the reinforcement signal read): a second call's answer may differ, so neither read-only nor idempotent.
USES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

INSTRUCTIONS = (
    "Engram keeps this user's long-term memory. Call retrieve_context before answering anything that may "
    "depend on earlier conversations, facts or documents; search_memories for ranked results with ids; "
    "add_memory for facts worth keeping; update_memory or forget_memory when the user corrects or retracts one. "
    "Failed calls answer {\"error\": {\"code\", \"message\", \"field\"}}: fix the named argument and retry."
)


def build_server(memory: MemoryAPI, user_id: str, config: RetrievalConfig | None = None) -> EngramMCP:
    """The tools over ``memory``: a ``Memory``, or an ``EngramClient`` of a service (any ``MemoryAPI``).

    ``config`` is what ``retrieve_context`` and ``search_memories`` start from (default:
    ``RetrievalConfig()``). The user is fixed: no tool takes a user id.
    """
    base = config or RetrievalConfig()
    server = EngramMCP("engram", instructions=INSTRUCTIONS)

    def tool(annotations: ToolAnnotations, title: str) -> Callable[[F], F]:
        def register(fn: F) -> F:
            server.tool(title=title, annotations=annotations)(typed_errors(fn))
            # The schema says what call_tool enforces: no argument beyond its properties.
            registered = server._tool_manager.get_tool(fn.__name__)
            if registered is not None:
                registered.parameters["additionalProperties"] = False
            return fn
        return register

    @tool(WRITE, "Remember")
    def add_memory(
        content: Annotated[str | None, Field(max_length=200_000,
                                             description="The memory's text (or give messages).")] = None,
        kind: Annotated[AddKind, Field(description="fact: a lasting truth; procedure: how to do something; "
                                                   "episode: what happened; message: a chat turn.")] = "fact",
        tags: Tags = None, importance: Importance = None, session_id: Session = None,
        messages: Annotated[list[dict[str, Any]] | None, Field(
            min_length=1, max_length=1000,
            description="Instead of content, a conversation: [{role, content, name?, created_at?}], one message "
                        "memory each, in order.")] = None,
    ) -> dict[str, Any]:
        """Store one memory and return its id; or, given messages instead of content, store each
        message as a memory and return their ids."""
        fields: dict[str, Any] = {"tags": tags or []}
        if importance is not None:
            fields["importance"] = importance
        if session_id is not None:
            fields["session_id"] = session_id
        if (content is None) == (messages is None):
            raise ValidationError("content", "give either content (one memory) or messages (a conversation)")
        if messages is not None:
            records = memory.add(messages, user_id=user_id, kind="message", **fields)
            return {"ids": [r.id for r in records], "kind": "message"}
        record = memory.add(content or "", user_id=user_id, kind=kind, **fields)
        return {"id": record.id, "kind": record.kind}

    @tool(READ, "Recall context for a prompt")
    def retrieve_context(
        query: Query, top_k: TopK = 8, now: Time = None,
        style: Annotated[Style, Field(description="policy: rules to follow; augmentation: background.")] = "policy",
        as_of: Annotated[str | None, Field(max_length=64, description="Answer from memory as recorded by this "
                                                                      "ISO-8601 time.")] = None,
    ) -> str:
        """What this user's memory holds that matters for the query, as a prompt section to read."""
        result = memory.retrieve(query, user_id=user_id, config=base.with_(top_k=top_k), now=now, as_of=as_of)
        answered(result.metadata.error)
        return str(result.to_prompt(style=style)) or "(no relevant memories)"

    @tool(READ, "Search memories")
    def search_memories(
        query: Query, top_k: TopK = 8,
        kinds: Annotated[list[Kind] | None, Field(max_length=7, description="Only these kinds.")] = None,
        tags: Tags = None, session_id: Session = None,
        min_score: Annotated[float | None, Field(ge=0.0, le=1.0, description="Leave out results scored "
                                                                             "below this (default 0.1).")] = None,
    ) -> dict[str, Any]:
        """Ranked memories for the query, each with its id, text, kind, time, score and why it was
        chosen; the retrieval_id names this search (feedback on it goes through the library or the HTTP service)."""
        config = base.with_(top_k=top_k) if min_score is None else base.with_(top_k=top_k, min_score=min_score)
        result = memory.retrieve(query, user_id=user_id, config=config, kinds=kinds, tags=tags,
                                 filters={"session_id": session_id} if session_id else None)
        answered(result.metadata.error)
        return {"retrieval_id": result.metadata.retrieval_id, "memories": [
            {**compact(e.id, e.content, e.timestamp, e.type, e.score), "reasons": list(e.reasons)}
            for e in result.memories]}

    @tool(READ, "Get a memory")
    def get_memory(memory_id: MemoryId) -> dict[str, Any]:
        """One memory, every field (text, kind, tags, importance, times, status, metadata)."""
        return full(memory.get(memory_id, user_id=user_id))

    @tool(READ, "List memories")
    def list_memories(
        kind: Annotated[Kind | None, Field(description="Only this kind.")] = None, tags: Tags = None,
        status: Annotated[Status, Field(description="active (default), or earlier values: superseded, "
                                                    "archived.")] = "active",
        session_id: Session = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Memories per page.")] = 20,
        offset: Annotated[int, Field(ge=0, le=1_000_000, description="Memories to skip: next_offset of the "
                                                                     "page before.")] = 0,
    ) -> dict[str, Any]:
        """A page of this user's memories, newest first; next_offset is null on the last page."""
        filters: dict[str, Any] = {"statuses": [status]}
        if kind:
            filters["kinds"] = [kind]
        if tags:
            filters["tags_all"] = tags
        if session_id:
            filters["session_id"] = session_id
        page = memory.list(user_id=user_id, filters=filters, limit=limit, offset=offset)
        return {"memories": [brief(r) for r in page], "next_offset": offset + len(page) if len(page) == limit else None}

    @tool(CHANGE, "Correct a memory")
    def update_memory(
        memory_id: MemoryId,
        content: Annotated[str | None, Field(min_length=1, max_length=200_000, description="The new text.")] = None,
        tags: Tags = None, importance: Importance = None,
        status: Annotated[Literal["active", "archived"] | None, Field(
            description="archived: keep it but leave it out of retrieval; active: bring it back.")] = None,
    ) -> dict[str, Any]:
        """Change the given fields of a memory (the rest keep their values). A new text replaces the
        old one for good: the history records that it changed, not what it said."""
        changes: dict[str, Any] = {k: v for k, v in {"content": content, "tags": tags, "importance": importance,
                                                      "status": status}.items() if v is not None}
        if not changes:
            raise ValidationError("content", "give at least one of content, tags, importance, status")
        return brief(memory.update(memory_id, user_id=user_id, **changes))

    @tool(CHANGE, "Forget a memory")
    def forget_memory(memory_id: MemoryId) -> dict[str, Any]:
        """Delete one memory of this user by id (deleted is false if there was none); its history
        keeps that it existed, not its text."""
        return {"deleted": bool(memory.delete(memory_id, user_id=user_id)), "id": memory_id}

    @tool(READ, "A memory's history")
    def memory_history(memory_id: MemoryId) -> dict[str, Any]:
        """Every change to a memory, oldest first (add, update, supersede, restore, delete): when, which
        fields changed, and the text after it (an edit or a delete erases the text it replaced)."""
        return {"events": [full(e) for e in memory.history(memory_id, user_id=user_id)]}

    @tool(USES, "Recall by mode")
    def recall(
        query: Annotated[str | None, Field(max_length=2000, description="relevant: what to look for.")] = None,
        mode: Annotated[Mode, Field(description="relevant (needs query), recent, important, frequent, temporal "
                                                "(needs start, end), by_kind (needs kind), linked (needs "
                                                "memory_id).")] = "relevant",
        max_results: Annotated[int, Field(ge=1, le=100, description="How many memories at most.")] = 10,
        kind: Annotated[Kind | None, Field(description="Only this kind (by_kind: the kind to list).")] = None,
        start: Time = None, end: Time = None,
        topic: Annotated[str | None, Field(max_length=1000, description="temporal: only about this.")] = None,
        memory_id: Annotated[str | None, Field(max_length=256, description="linked: where to start.")] = None,
        depth: Annotated[int, Field(ge=1, le=3, description="linked: how many links to follow.")] = 1,
        full_records: Annotated[bool, Field(description="Whole records instead of compact ones.")] = False,
    ) -> dict[str, Any]:
        """Recall memories by mode. Each result is compact (id, text, time, kind, score) unless
        full_records is true."""
        if mode == "temporal":
            if not start or not end:
                raise ValidationError("start" if not start else "end", "temporal recall needs start and end")
            found = memory.recall_temporal(start, end, user_id=user_id, topic=topic)
        elif mode == "by_kind":
            if not kind:
                raise ValidationError("kind", "by_kind recall needs a kind")
            found = memory.recall_by_kind(kind, user_id=user_id, limit=max_results)
        elif mode == "linked":
            if not memory_id:
                raise ValidationError("memory_id", "linked recall needs a memory_id")
            found = memory.recall_linked(memory_id, user_id=user_id, depth=depth)
        else:
            found = memory.recall(query, user_id=user_id, mode=mode, max_results=max_results, kind=kind)
        if full_records:
            data: dict[str, Any] = encode(found)
            return data
        return {"mode": found.mode, "memories": [
            compact(m.record.id, m.record.content, m.record.created_at, m.record.kind, m.score)
            for m in found.memories[:max_results]]}

    @tool(READ, "Read a document")
    def get_document(
        meta: Annotated[str, Field(max_length=10_000, description=(
            "The document's file name (notes.md), its absolute path, or a JSON object of metadata "
            "(filename, path, topic, note, tags, query)."))],
        strategy: Annotated[Strategy, Field(description="Which version: latest, earliest, longest, or score "
                                                        "(best match for meta's query).")] = "latest",
        as_of: Annotated[str | None, Field(max_length=64, description="The version current at this ISO-8601 "
                                                                      "time.")] = None,
    ) -> dict[str, Any]:
        """A whole ingested document, one version of it."""
        data: dict[str, Any] = encode(memory.get_document(document_meta(meta), user_id=user_id, strategy=strategy,
                                                          as_of=as_of))
        return data

    @tool(READ, "List a document's versions")
    def document_versions(
        name: Annotated[str, Field(min_length=1, max_length=256, description="The file name or doc key.")],
    ) -> dict[str, Any]:
        """Every stored version of a document, oldest first, without their text (get_document reads one)."""
        try:
            versions = memory.document_versions(name, user_id=user_id)
        except ValidationError as exc:  # the library's argument is this tool's name
            if exc.field != "filename_or_doc_key":
                raise
            raise ValidationError("name", str(exc).removeprefix(f"{exc.field}: ")) from None
        return {"versions": [{"version": d.version, "ingested_at": d.ingested_at.isoformat(), "filename": d.filename,
                              "doc_key": d.doc_key, "memory_id": d.memory_id, "chars": len(d.content)}
                             for d in versions]}

    return server
