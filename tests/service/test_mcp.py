"""The MCP server driven by the SDK's own stdio client, spawning ``python -m engram.mcp``."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from engram.ext import Embedder
from engram.memory import Memory

mcp = pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _session(db: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram.mcp", "--db", str(db), "--user", "u1"], cwd=str(ROOT)
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
        added = await session.call_tool("add_memory", {"content": "Globex pays invoices upfront", "kind": "fact"})
        out["added"] = json.loads(_text(added))
        context = await session.call_tool("retrieve_context", {"query": "How does Acme pay?"})
        out["context"] = _text(context)
        recalled = await session.call_tool("recall", {"query": "Globex invoices", "max_results": 5})
        out["recall"] = _text(recalled)
        forgot = await session.call_tool("forget_memory", {"memory_id": out["added"]["id"]})
        out["forgot"] = json.loads(_text(forgot))
        again = await session.call_tool("forget_memory", {"memory_id": out["added"]["id"]})
        out["again"] = json.loads(_text(again))
        document = await session.call_tool("get_document", {"meta": "nothing.md"})
        # mcp 2 spells it is_error, mcp 1 isError.
        out["document_error"] = getattr(document, "is_error", getattr(document, "isError", None))
    return out


def test_mcp_tools_over_stdio(tmp_path: Path, embedder: Embedder) -> None:
    db = tmp_path / "engram.db"
    with Memory(db, embedder=embedder) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
        memory.add("u2's private note about Acme", user_id="u2", kind="fact")
    out = asyncio.run(asyncio.wait_for(_session(db), timeout=120))
    assert out["tools"] == ["add_memory", "forget_memory", "get_document", "recall", "retrieve_context"]
    assert "NET30" in out["context"] and "private" not in out["context"]
    assert "Globex" in out["recall"]
    assert out["forgot"]["deleted"] is True and out["again"]["deleted"] is False
    assert out["document_error"] in (True, False)
    with Memory(db, embedder=embedder) as memory:
        assert [r.content for r in memory.list(user_id="u1")] == ["Acme prefers NET30 payment terms"]
