"""The stdio transport's one gap: a request line it cannot read is answered, not dropped.

The SDK's stdio reader hands a line that fails to parse (valid JSON with a lone surrogate escape,
``"\\ud800"``, which its parser refuses) to the server as an exception, and nothing replies: the client
waits for that request's id forever (modelcontextprotocol/python-sdk#2751). Between the reader and
the server, :func:`relay` answers such a line with a JSON-RPC parse error under the request's own id,
read back from the line by Python's parser (which accepts the escape); anything else passes as it came.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pydantic
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

__all__ = ["relay", "reply_to_unreadable"]


def reply_to_unreadable(problem: Exception) -> SessionMessage | None:
    """The error reply to a request line the SDK could not read, when its id can be read back; else
    ``None`` (a notification, a response, a line that is no JSON at all: nothing waits for an answer)."""
    if not isinstance(problem, pydantic.ValidationError) or not problem.errors():
        return None
    first = problem.errors()[0]
    parsed = first.get("input")  # the line, if it did not parse; the object, if it is no JSON-RPC message
    if isinstance(parsed, str | bytes):
        try:
            parsed = json.loads(parsed)
        except (ValueError, RecursionError):
            return None
    if not isinstance(parsed, dict) or "method" not in parsed:  # only a request waits for an answer
        return None
    request_id = parsed.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    if first.get("type") == "json_invalid":  # most often a lone surrogate escape, which no text holds
        error = ErrorData(code=PARSE_ERROR, message=f"Parse error: {first.get('msg', 'invalid JSON')}; the "
                                                    "text must be valid Unicode (no lone surrogate escapes)")
    else:
        error = ErrorData(code=INVALID_REQUEST, message=f"Invalid request: {first.get('msg', 'not JSON-RPC')}")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def relay(source: Any, target: Any, replies: Any) -> None:
    """Pass what ``source`` (the stdio reader's stream) gives to ``target`` (the server's), answering
    on ``replies`` (the writer's stream) each line :func:`reply_to_unreadable` can answer."""
    async with target:
        async for item in source:
            reply = reply_to_unreadable(item) if isinstance(item, Exception) else None
            if reply is None:
                await target.send(item)
            else:
                try:
                    await replies.send(reply)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
