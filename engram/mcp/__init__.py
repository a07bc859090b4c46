"""Engram as an MCP server: ``python -m engram.mcp --db PATH --user U [--transport stdio|http]``.

One process serves one user's memory (the MCP client is that user's agent), so the tools take no
user id and cannot reach anyone else's memories. ``engram.mcp.tools`` holds the tools,
``engram.mcp.results`` what they answer (JSON, and JSON error results with ``isError``),
``engram.mcp.server`` the transports. The MCP SDK (the ``[service]`` extra) is imported only when
the tools are built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram.mcp.server import http_app, is_loopback, main, serve

if TYPE_CHECKING:
    from engram.mcp.tools import build_server

__all__ = ["build_server", "http_app", "is_loopback", "main", "serve"]


def __getattr__(name: str) -> Any:
    if name == "build_server":
        from engram.mcp.tools import build_server

        return build_server
    raise AttributeError(name)
