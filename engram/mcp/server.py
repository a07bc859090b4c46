"""Serving the MCP tools: over stdio (the host spawns ``python -m engram.mcp``) or streamable HTTP
(``--transport http``, endpoint ``/mcp``), where any host that can reach the port is that user, so
the server binds loopback unless given a bearer token."""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal

__all__ = ["http_app", "is_loopback", "main", "serve"]


ASGIApp = Callable[[dict[str, Any], Any, Any], Any]
Transport = Literal["stdio", "http"]


def http_app(server: Any, host: str = "127.0.0.1", token: str | None = None) -> ASGIApp:
    """The server's streamable HTTP endpoint (``/mcp``) as an ASGI app; with ``token``, every HTTP
    request must carry ``Authorization: Bearer <token>``.

    ``host`` is where it listens: on loopback the SDK also checks the ``Host`` header (a web page
    in the user's browser must not reach the tools by DNS rebinding).
    """
    app: ASGIApp = server.streamable_http_app(host=host)
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
    user_id = served_user(user_id)
    with Memory(db, embedder=embedder) as memory:
        from engram.mcp.tools import build_server

        server = build_server(memory, user_id, memory.config)
        if transport == "stdio":
            server.run("stdio")
            return
        import uvicorn

        print(f"Engram MCP for user {user_id} at http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        uvicorn.run(http_app(server, host, token), host=host, port=port, log_level="warning")


def served_user(user_id: str) -> str:
    """The user a server serves, checked before the store opens (or is created): every call would
    fail naming ``user_id``, an argument of no tool."""
    from engram.config import Limits
    from engram.validate import user_id as checked

    return checked(user_id, Limits())  # the limits of the Memory serve() opens


def main(argv: Sequence[str] | None = None) -> None:
    from engram.embedders import EMBEDDER_NAMES, named_embedder
    from engram.errors import ValidationError

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
    try:  # as serve() does: one line, not a traceback
        served_user(args.user_id)
    except ValidationError as exc:
        parser.error(f"--user: {str(exc).removeprefix('user_id: ')}")
    if args.transport == "http" and args.token is None and not is_loopback(args.host):
        parser.error(f"--host {args.host} would serve {args.user_id}'s memory to anyone who can reach it: "
                     "give --token (or $ENGRAM_MCP_TOKEN), or listen on loopback")
    serve(args.db, args.user_id, named_embedder(args.embedder), transport=args.transport, host=args.host,
          port=args.port, token=args.token)


if __name__ == "__main__":
    main()
