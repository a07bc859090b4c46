"""What the MCP tools answer: results as JSON (text and structured content alike), and every
failure as a JSON tool result with ``isError`` set, ``{"error": {"code", "message", "field"?}}``
(the HTTP service's shape), never the SDK's "Error executing tool ..." text.

Three failures reach an agent: Engram's own typed errors (a tool's input refused by Engram, a
missing memory), arguments refused by a tool's input schema (a range, an enum, a wrong type), and
a crash, whose text stays in the server's log.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent

from engram.errors import EngramError, InvalidQuery, ServiceError, ValidationError
from engram.wire import jsonable, to_snake

__all__ = ["EngramMCP", "answered", "brief", "compact", "document_meta", "error_result", "typed_errors"]

log = logging.getLogger("engram.mcp")
F = TypeVar("F", bound=Callable[..., Any])


def error_result(error: dict[str, Any]) -> CallToolResult:
    """A failed tool call whose text is the error as JSON, ``structuredContent`` the same object."""
    body = {"error": error}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
                          structured_content=body, is_error=True)


def answered(error: Any) -> None:
    """Raise for a retrieval whose fallback answered nothing (``metadata.error`` with fallback
    ``skip``: the store was unavailable, the query invalid, the deadline passed before any stage
    finished): an agent told "nothing found" during an outage re-adds what it knows or answers
    without it. A partial or cached answer, or none at all, passes."""
    if not error or error.get("fallback") != "skip":
        return
    if error["code"] == InvalidQuery.code:
        raise InvalidQuery("query", error["message"])
    raise ServiceError(error["message"], code=error["code"])


def typed_errors(fn: F) -> F:
    """A tool whose Engram errors answer as :func:`error_result` (the SDK would reduce them to text)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EngramError as exc:
            return error_result(exc.to_dict())

    return cast(F, wrapper)


def _refused(exc: pydantic.ValidationError) -> dict[str, Any]:
    """A schema refusal as Engram names it: the argument (``max_results``, ``messages[0].role``)."""
    first = exc.errors()[0]
    field = ""
    for part in first.get("loc", ()):
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    field = to_snake(field) if field else "arguments"
    return {"code": "INVALID_INPUT", "message": f"{field}: {first.get('msg', 'invalid')}", "field": field}


class EngramMCP(MCPServer):
    """The SDK's server with every failed call answered as a JSON error result, and over stdio every
    request answered, also one whose line the SDK cannot read (:mod:`engram.mcp.stdio`)."""

    async def run_stdio_async(self) -> None:
        import anyio
        from mcp.server.stdio import stdio_server

        from engram.mcp.stdio import relay

        async with stdio_server() as (read_stream, write_stream):
            to_server, server_reads = anyio.create_memory_object_stream[Any](0)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(relay, read_stream, to_server, write_stream)
                await self._lowlevel_server.run(server_reads, write_stream,
                                                self._lowlevel_server.create_initialization_options())

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        # An argument no tool takes is refused, not ignored: a misspelled filter ("kind" for "kinds")
        # would search everything and look like an answer (each tool's schema says so).
        known = self._tool_manager.get_tool(name)
        if known is not None and isinstance(arguments, dict):
            allowed = set(known.parameters.get("properties", {}))
            unknown = sorted(str(key) for key in arguments if key not in allowed)
            if unknown:
                return error_result({"code": "INVALID_INPUT", "field": unknown[0], "message":
                                     f"{unknown[0]}: no such argument; {name} takes {', '.join(sorted(allowed))}"})
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            log.exception("MCP tool %r crashed", name)
            return error_result({"code": "INTERNAL", "message": "internal error; see the server's log"})
        except ToolError as exc:
            if isinstance(exc.__cause__, pydantic.ValidationError):
                return error_result(_refused(exc.__cause__))
            if self._tool_manager.get_tool(name) is None:
                return error_result({"code": "NOT_FOUND", "message": f"no tool {name!r}", "field": "name"})
            return error_result({"code": "TOOL_ERROR", "message": str(exc)})


def document_meta(meta: str) -> dict[str, Any]:
    """What ``get_document``'s ``meta`` argument describes: a JSON object of metadata, an absolute
    path (as ingest stores it), or else a file name (compared by its last path segment)."""
    text = meta.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError("meta", f"not a JSON object: {exc.msg} at character {exc.pos}") from None
        except RecursionError:  # nested past the parser's depth, within the length bound
            raise ValidationError("meta", "nested too deeply; metadata is one object of plain values") from None
        if not isinstance(parsed, dict):
            raise ValidationError("meta", "must be a JSON object")
        return parsed
    if not text:
        raise ValidationError("meta", "must be a file name, a path or a JSON object of metadata")
    return {"path": text} if os.path.isabs(text) else {"filename": text}


def _time(when: Any) -> str:
    return when.isoformat() if hasattr(when, "isoformat") else str(when)


def compact(memory_id: str, text: str, when: Any, kind: str, score: float) -> dict[str, Any]:
    """What an agent needs of a recalled memory, and no more: tokens are its budget too."""
    return {"id": memory_id, "text": text, "time": _time(when), "kind": kind, "score": round(float(score), 3)}


def brief(record: Any) -> dict[str, Any]:
    """A stored memory as a list shows it: its text and what an agent filters or edits by."""
    out = {"id": record.id, "text": record.content, "kind": record.kind, "time": _time(record.created_at),
           "tags": list(record.tags), "importance": record.importance, "status": record.status}
    if record.session_id:
        out["session_id"] = record.session_id
    return out


def full(value: Any) -> dict[str, Any]:
    data: dict[str, Any] = jsonable(value)
    return data
