"""Engram as an MCP server over stdio: ``python -m engram.mcp --db PATH --user U``.

One process serves one user's memory (the MCP client is that user's agent), so the tools take no
user id and cannot reach anyone else's memories.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from engram.errors import EngramError

__all__ = ["build_server", "main", "serve", "server_class"]

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


def _fail(exc: EngramError) -> ValueError:
    # The SDK turns an exception into an error result; the code lets an agent branch on it.
    return ValueError(f"{exc.code}: {exc}")


def build_server(memory: Any, user_id: str) -> Any:
    from engram.service.deps import jsonable

    server = server_class()("engram", instructions=INSTRUCTIONS)

    @_tool(server)
    def add_memory(content: str, kind: str = "fact", tags: list[str] | None = None,
                   importance: float | None = None, session_id: str | None = None) -> dict[str, Any]:
        """Store one memory (kind: fact, message, episode, procedure, summary) and return its id."""
        fields: dict[str, Any] = {"tags": tags or []}
        if importance is not None:
            fields["importance"] = importance
        if session_id is not None:
            fields["session_id"] = session_id
        try:
            record = memory.add(content, user_id=user_id, kind=kind, **fields)
        except EngramError as exc:
            raise _fail(exc) from exc
        return {"id": record.id, "kind": record.kind}

    @_tool(server)
    def retrieve_context(query: str, top_k: int = 8, now: str | None = None, style: str = "policy") -> str:
        """What this user's memory holds that matters for the query, as a prompt section."""
        try:
            config = memory.config.with_(top_k=top_k)
            result = memory.retrieve(query, user_id=user_id, config=config, now=now)
            text = str(result.to_prompt(style=style))
        except EngramError as exc:
            raise _fail(exc) from exc
        return text or "(no relevant memories)"

    @_tool(server)
    def recall(query: str | None = None, mode: str = "relevant", max_results: int = 10,
               kind: str | None = None) -> dict[str, Any]:
        """Recall memories by mode: relevant, recent, important or frequent (seed 004)."""
        try:
            if hasattr(memory, "recall"):
                found = memory.recall(query, user_id=user_id, mode=mode, max_results=max_results, kind=kind)
                data = jsonable(found)
                return data if isinstance(data, dict) else {"memories": data}
            if mode != "relevant" or not query:
                raise ValueError("this Engram supports only mode='relevant' with a query")
            config = memory.config.with_(top_k=max_results)
            payload: dict[str, Any] = memory.retrieve(query, user_id=user_id, config=config).to_dict()
            return payload
        except EngramError as exc:
            raise _fail(exc) from exc

    @_tool(server)
    def get_document(meta: str, strategy: str = "latest", as_of: str | None = None) -> dict[str, Any]:
        """A whole ingested document by its path, name or a JSON object of metadata (strategy, as_of)."""
        if not hasattr(memory, "get_document"):
            raise ValueError("this Engram has no document store")
        query: Any = meta
        if meta.lstrip().startswith("{"):
            query = json.loads(meta)
        try:
            document = memory.get_document(query, user_id=user_id, strategy=strategy, as_of=as_of)
        except EngramError as exc:
            raise _fail(exc) from exc
        data = jsonable(document)
        return data if isinstance(data, dict) else {"document": data}

    @_tool(server)
    def forget_memory(memory_id: str) -> dict[str, Any]:
        """Delete one memory of this user by id."""
        try:
            return {"deleted": bool(memory.delete(memory_id, user_id=user_id)), "id": memory_id}
        except EngramError as exc:
            raise _fail(exc) from exc

    return server


def serve(db: str, user_id: str, embedder: Any = None) -> None:
    from engram.memory import Memory

    # stdout is the protocol channel: every log line has to go to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    with Memory(db, embedder=embedder) as memory:
        build_server(memory, user_id).run("stdio")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m engram.mcp", description="Engram MCP server (stdio).")
    parser.add_argument("--db", default=os.environ.get("ENGRAM_DB", "engram.db"))
    parser.add_argument("--user", required=True, dest="user_id")
    parser.add_argument("--fake-embedder", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    embedder = None
    if args.fake_embedder:
        from engram.embedders.fake import FakeEmbedder

        embedder = FakeEmbedder(args.fake_embedder)
    serve(args.db, args.user_id, embedder)


if __name__ == "__main__":
    main()
