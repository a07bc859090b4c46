"""Engram as an MCP server: ``python -m engram.mcp --db PATH --user U [--transport stdio|http]``.

One process serves one user's memory (the MCP client is that user's agent), so the tools take no
user id and cannot reach anyone else's memories. Over stdio the host (Claude Desktop, an IDE)
spawns the process; over streamable HTTP (``--transport http``, endpoint ``/mcp``) any host that
can reach the port is that user, so the server binds loopback unless given a bearer token.

A tool that fails on the agent's input answers an error result whose text is the typed error as
JSON, ``{"error": {"code", "message", "field"}}`` (the HTTP service's shape), so the agent can
correct the argument; arguments with a fixed set of values are enums in the tools' schemas.
"""

from __future__ import annotations

import argparse
import hmac
import importlib
import ipaddress
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

__all__ = ["build_server", "document_meta", "http_app", "main", "serve", "server_class", "tool_error_class"]

# The tools' enums (module level: the SDK reads the annotations to build each input schema).
AddKind = Literal["fact", "message", "episode", "procedure", "summary"]
Kind = Literal["message", "fact", "episode", "procedure", "summary", "document", "chunk"]
Mode = Literal["relevant", "recent", "important", "frequent"]
Style = Literal["policy", "policy_spec", "augmentation"]
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


ASGIApp = Callable[[dict[str, Any], Any, Any], Any]
Transport = Literal["stdio", "http"]


def http_app(server: Any, host: str = "127.0.0.1", token: str | None = None) -> ASGIApp:
    """The server's streamable HTTP endpoint (``/mcp``) as an ASGI app; with ``token``, every HTTP
    request must carry ``Authorization: Bearer <token>``.

    ``host`` is where it listens: on loopback the SDK also checks the ``Host`` header (a web page
    in the user's browser must not reach the tools by DNS rebinding).
    """
    try:
        app: ASGIApp = server.streamable_http_app(host=host)
    except TypeError:  # mcp 1.x reads the host from its settings
        server.settings.host = host
        app = server.streamable_http_app()
    if token is None:
        return app
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = json.dumps({"error": {"code": "UNAUTHORIZED", "message": "missing or wrong bearer token",
                                             "field": None}}).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(db: str, user_id: str, embedder: Any = None, *, transport: Transport = "stdio", host: str = "127.0.0.1",
          port: int = 8765, token: str | None = None) -> None:
    from engram.memory import Memory

    # Over stdio, stdout is the protocol channel: every log line has to go to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    with Memory(db, embedder=embedder) as memory:
        server = build_server(memory, user_id, memory.config)
        if transport == "stdio":
            server.run("stdio")
            return
        import uvicorn

        print(f"Engram MCP for user {user_id} at http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        uvicorn.run(http_app(server, host, token), host=host, port=port, log_level="warning")


def main(argv: Sequence[str] | None = None) -> None:
    from engram.embedders import EMBEDDER_NAMES, named_embedder

    parser = argparse.ArgumentParser(prog="python -m engram.mcp", description="Engram MCP server.")
    parser.add_argument("--db", default=os.environ.get("ENGRAM_DB", "engram.db"),
                        help="SQLite file or postgresql:// URL (default: $ENGRAM_DB or ./engram.db).")
    parser.add_argument("--user", required=True, dest="user_id", help="The user whose memory the tools serve.")
    parser.add_argument("--embedder", default=os.environ.get("ENGRAM_EMBEDDER"),
                        help=f"One of {', '.join(EMBEDDER_NAMES)} (default: $ENGRAM_EMBEDDER, else minilm).")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                        help="stdio (the host spawns this process) or http (streamable HTTP at /mcp).")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: the address to listen on (default: loopback).")
    parser.add_argument("--port", type=int, default=8765, help="HTTP: the port (default: 8765).")
    parser.add_argument("--token", default=os.environ.get("ENGRAM_MCP_TOKEN") or None,
                        help="HTTP: require 'Authorization: Bearer TOKEN' (default: $ENGRAM_MCP_TOKEN). "
                             "Needed to listen beyond loopback.")
    args = parser.parse_args(argv)
    if args.transport == "http" and args.token is None and not is_loopback(args.host):
        parser.error(f"--host {args.host} would serve {args.user_id}'s memory to anyone who can reach it: "
                     "give --token (or $ENGRAM_MCP_TOKEN), or listen on loopback")
    serve(args.db, args.user_id, named_embedder(args.embedder), transport=args.transport, host=args.host,
          port=args.port, token=args.token)


if __name__ == "__main__":
    main()
