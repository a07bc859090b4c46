"""Engram as an MCP server over stdio: ``python -m engram.mcp --db PATH --user U``.

One process serves one user's memory (the MCP client is that user's agent), so the tools take no
user id and cannot reach anyone else's memories.

A tool that fails on the agent's input answers an error result whose text is the typed error as
JSON, ``{"error": {"code", "message", "field"}}`` (the HTTP service's shape), so the agent can
correct the argument; arguments with a fixed set of values are enums in the tools' schemas.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from engram.config import RetrievalConfig
from engram.errors import EngramError, ValidationError

if TYPE_CHECKING:
    from engram.api import MemoryAPI

__all__ = ["build_server", "document_meta", "main", "serve", "server_class", "tool_error_class"]

# The tools' enums (module level: the SDK reads the annotations to build each input schema).
AddKind = Literal["fact", "message", "episode", "procedure", "summary"]
Kind = Literal["message", "fact", "episode", "procedure", "summary", "document", "chunk"]
Mode = Literal["relevant", "recent", "important", "frequent"]
Style = Literal["policy", "augmentation"]
Strategy = Literal["latest", "earliest", "longest", "score"]

F = TypeVar("F", bound=Callable[..., Any])
INSTRUCTIONS = (
    "Engram keeps this user's long-term memory. Call retrieve_context before answering anything that may "
    "depend on earlier conversations, facts or documents; call add_memory for facts worth keeping."
)


def server_class() -> Any:
    """``MCPServer`` (mcp >= 2) or ``FastMCP`` (mcp 1.x): the same decorator API under two names."""
    try:
        return importlib.import_module("mcp.server.mcpserver").MCPServer
    except ImportError:
        return importlib.import_module("mcp.server.fastmcp").FastMCP


def _tool(server: Any) -> Callable[[F], F]:
    return cast(Callable[[F], F], server.tool())


def tool_error_class() -> type[Exception]:
    """The SDK's ``ToolError``: the one exception whose message reaches the agent (any other
    becomes a bare "Error executing tool <name>")."""
    try:
        return cast(type[Exception], importlib.import_module("mcp.server.mcpserver.exceptions").ToolError)
    except ImportError:
        return cast(type[Exception], importlib.import_module("mcp.server.fastmcp.exceptions").ToolError)


@contextmanager
def _typed_errors() -> Iterator[None]:
    """Re-raise Engram's errors as the SDK's ToolError carrying the error as JSON."""
    try:
        yield
    except EngramError as exc:
        raise tool_error_class()(json.dumps({"error": exc.to_dict()}, ensure_ascii=False)) from exc


def document_meta(meta: str) -> dict[str, Any]:
    """What ``get_document``'s ``meta`` argument describes: a JSON object of metadata, an absolute
    path (as ingest stores it), or else a file name (compared by its last path segment)."""
    text = meta.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError("meta", f"not a JSON object: {exc.msg} at character {exc.pos}") from None
        if not isinstance(parsed, dict):
            raise ValidationError("meta", "must be a JSON object")
        return parsed
    if not text:
        raise ValidationError("meta", "must be a file name, a path or a JSON object of metadata")
    return {"path": text} if os.path.isabs(text) else {"filename": text}


def compact(memory_id: str, text: str, when: Any, kind: str, score: float) -> dict[str, Any]:
    """What an agent needs of a recalled memory, and no more: tokens are its budget too."""
    time_text = when.isoformat() if hasattr(when, "isoformat") else str(when)
    return {"id": memory_id, "text": text, "time": time_text, "kind": kind, "score": round(float(score), 3)}


def build_server(memory: MemoryAPI, user_id: str, config: RetrievalConfig | None = None) -> Any:
    """The tools over ``memory``: a ``Memory``, or an ``EngramClient`` of a service (any ``MemoryAPI``).

    ``config`` is what ``retrieve_context`` and ``recall`` start from (default: ``RetrievalConfig()``).
    """
    from engram.wire import encode

    base = config or RetrievalConfig()
    server = server_class()("engram", instructions=INSTRUCTIONS)

    @_tool(server)
    def add_memory(content: str | None = None, kind: AddKind = "fact", tags: list[str] | None = None,
                   importance: float | None = None, session_id: str | None = None,
                   messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Store one memory (kind: fact, message, episode, procedure, summary) and return its id; or,
        instead of content, messages ([{role, content, name?, created_at?}]), stored one message
        memory each in order, returning their ids."""
        fields: dict[str, Any] = {"tags": tags or []}
        if importance is not None:
            fields["importance"] = importance
        if session_id is not None:
            fields["session_id"] = session_id
        with _typed_errors():
            if (content is None) == (messages is None):
                raise ValidationError("content", "give either content (one memory) or messages (a conversation)")
            if messages is not None:
                records = memory.add(messages, user_id=user_id, kind="message", **fields)
                return {"ids": [r.id for r in records], "kind": "message"}
            record = memory.add(content or "", user_id=user_id, kind=kind, **fields)
        return {"id": record.id, "kind": record.kind}

    @_tool(server)
    def retrieve_context(query: str, top_k: int = 8, now: str | None = None, style: Style = "policy") -> str:
        """What this user's memory holds that matters for the query, as a prompt section."""
        with _typed_errors():
            result = memory.retrieve(query, user_id=user_id, config=base.with_(top_k=top_k), now=now)
            text = str(result.to_prompt(style=style))
        return text or "(no relevant memories)"

    @_tool(server)
    def recall(query: str | None = None, mode: Mode = "relevant", max_results: int = 10,
               kind: Kind | None = None, full: bool = False) -> dict[str, Any]:
        """Recall memories by mode: relevant, recent, important or frequent. Each result is compact
        (id, text, time, kind, score); full=true returns whole records."""
        with _typed_errors():
            found = memory.recall(query, user_id=user_id, mode=mode, max_results=max_results, kind=kind)
        if full:
            data: dict[str, Any] = encode(found)
            return data
        return {"mode": found.mode, "memories": [
            compact(m.record.id, m.record.content, m.record.created_at, m.record.kind, m.score)
            for m in found.memories
        ]}

    @_tool(server)
    def get_document(meta: str, strategy: Strategy = "latest", as_of: str | None = None) -> dict[str, Any]:
        """A whole ingested document: meta is its file name (notes.md), its absolute path, or a JSON
        object of metadata (filename, path, topic, note, tags, query); strategy picks the version."""
        with _typed_errors():
            document = memory.get_document(document_meta(meta), user_id=user_id, strategy=strategy, as_of=as_of)
        data: dict[str, Any] = encode(document)
        return data

    @_tool(server)
    def forget_memory(memory_id: str) -> dict[str, Any]:
        """Delete one memory of this user by id."""
        with _typed_errors():
            return {"deleted": bool(memory.delete(memory_id, user_id=user_id)), "id": memory_id}

    return server


def serve(db: str, user_id: str, embedder: Any = None) -> None:
    from engram.memory import Memory

    # stdout is the protocol channel: every log line has to go to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    with Memory(db, embedder=embedder) as memory:
        build_server(memory, user_id, memory.config).run("stdio")


def main(argv: Sequence[str] | None = None) -> None:
    from engram.embedders import EMBEDDER_NAMES, named_embedder

    parser = argparse.ArgumentParser(prog="python -m engram.mcp", description="Engram MCP server (stdio).")
    parser.add_argument("--db", default=os.environ.get("ENGRAM_DB", "engram.db"),
                        help="SQLite file or postgresql:// URL (default: $ENGRAM_DB or ./engram.db).")
    parser.add_argument("--user", required=True, dest="user_id", help="The user whose memory the tools serve.")
    parser.add_argument("--embedder", default=os.environ.get("ENGRAM_EMBEDDER"),
                        help=f"One of {', '.join(EMBEDDER_NAMES)} (default: $ENGRAM_EMBEDDER, else minilm).")
    args = parser.parse_args(argv)
    serve(args.db, args.user_id, named_embedder(args.embedder))


if __name__ == "__main__":
    main()
