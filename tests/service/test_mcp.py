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


# -- in process: what an agent reads when a tool fails, and the tools' schemas ----------------------


def _server(tmp_path: Path) -> tuple[Any, Memory]:
    from engram.embedders.fake import FakeEmbedder
    from engram.mcp import build_server

    memory = Memory(tmp_path / "tools.db", embedder=FakeEmbedder(64))
    return build_server(memory, "u1"), memory


async def _call(server: Any, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(failed, text) as the agent would see them."""
    try:
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

    try:
        result = await server.call_tool(name, arguments)
    except ToolError as exc:
        return True, str(exc)
    return False, _text(result) if hasattr(result, "content") else json.dumps(result, default=str)


def test_mcp_tool_errors_carry_the_typed_message_and_field(tmp_path: Path) -> None:
    server, memory = _server(tmp_path)
    with memory:
        failed, text = asyncio.run(_call(server, "add_memory", {"content": "Acme pays NET30", "importance": 7}))
        assert failed
        error = json.loads(text.split(": ", 1)[1])["error"]
        assert error["code"] == "INVALID_INPUT" and error["field"] == "importance"
        assert "[0, 1]" in error["message"]
        failed, text = asyncio.run(_call(server, "get_document", {"meta": "{not json"}))
        assert failed and json.loads(text.split(": ", 1)[1])["error"]["field"] == "meta"


def test_mcp_tool_schemas_enumerate_kind_mode_style_and_strategy(tmp_path: Path) -> None:
    server, memory = _server(tmp_path)
    with memory:
        tools = {t.name: t for t in asyncio.run(server.list_tools())}

    def enum(tool: str, arg: str) -> list[str]:
        schema = getattr(tools[tool], "input_schema", None) or tools[tool].inputSchema
        prop = schema["properties"][arg]
        options = prop.get("enum") or next(o["enum"] for o in prop.get("anyOf", []) if "enum" in o)
        return list(options)

    assert enum("add_memory", "kind") == ["fact", "message", "episode", "procedure", "summary"]
    assert enum("recall", "mode") == ["relevant", "recent", "important", "frequent"]
    assert "document" in enum("recall", "kind")
    assert enum("retrieve_context", "style") == ["policy", "augmentation"]
    assert enum("get_document", "strategy") == ["latest", "earliest", "longest", "score"]


def test_mcp_get_document_accepts_a_filename(tmp_path: Path) -> None:
    from engram.ingest.files import ingest

    server, memory = _server(tmp_path)
    with memory:
        (tmp_path / "notes.md").write_text("# Notes\n\nAcme pays within thirty days.")
        ingest(memory, [tmp_path / "notes.md"], user_id="u1")
        failed, text = asyncio.run(_call(server, "get_document", {"meta": "notes.md"}))
        assert not failed, text
        assert "thirty days" in text
        failed, text = asyncio.run(_call(server, "get_document", {"meta": str((tmp_path / "notes.md").resolve())}))
        assert not failed and "thirty days" in text
        failed, text = asyncio.run(_call(server, "get_document", {"meta": "nothing.md"}))
        assert failed and json.loads(text.split(": ", 1)[1])["error"]["code"] == "DOCUMENT_NOT_FOUND"


def test_mcp_recall_is_compact_unless_asked_for_full_records(tmp_path: Path) -> None:
    server, memory = _server(tmp_path)
    with memory:
        stored = memory.add("Acme pays NET30", user_id="u1", kind="fact")
        failed, text = asyncio.run(_call(server, "recall", {"mode": "recent", "max_results": 5}))
        assert not failed, text
        item = json.loads(text)["memories"][0]
        assert set(item) == {"id", "text", "time", "kind", "score"}
        assert (item["id"], item["text"], item["kind"]) == (stored.id, "Acme pays NET30", "fact")
        assert "content_hash" not in text
        failed, text = asyncio.run(_call(server, "recall", {"mode": "recent", "full": True}))
        assert not failed and json.loads(text)["memories"][0]["memory"]["content_hash"] == stored.content_hash


def test_mcp_tools_serve_a_remote_memory_through_the_client(tmp_path: Path) -> None:
    """The tools are written against MemoryAPI: over an EngramClient they answer as over a Memory."""
    from engram.client import EngramClient
    from engram.embedders.fake import FakeEmbedder
    from engram.mcp import build_server
    from tests.service import harness, running

    h = harness(tmp_path, FakeEmbedder(64))
    with running(h.app) as url, EngramClient(url, h.key("u1")) as client:
        server = build_server(client, "u1")
        failed, text = asyncio.run(_call(server, "add_memory", {"content": "Acme pays NET30", "kind": "fact"}))
        assert not failed, text
        added = json.loads(text)
        assert h.memory.get(added["id"], user_id="u1").content == "Acme pays NET30"
        failed, text = asyncio.run(_call(server, "recall", {"mode": "recent"}))
        assert not failed and json.loads(text)["memories"][0]["id"] == added["id"]
        failed, text = asyncio.run(_call(server, "add_memory", {"content": "x", "importance": 7}))
        assert failed and json.loads(text.split(": ", 1)[1])["error"]["field"] == "importance"
        failed, text = asyncio.run(_call(server, "forget_memory", {"memory_id": added["id"]}))
        assert not failed and json.loads(text)["deleted"] is True
    h.close()
