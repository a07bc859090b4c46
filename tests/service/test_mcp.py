"""The MCP server driven by the SDK's own clients: ``python -m engram.mcp`` spawned over stdio, and
served over streamable HTTP on a free loopback port, each answering the same session."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from engram.embedders import named_embedder
from engram.errors import EngramError
from engram.memory import Memory
from tests.service import free_port

mcp = pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EMBEDDER = "hash-256"  # no model to load in each server process; keyword search carries the ranking


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _command(db: Path, *extra: str) -> list[str]:
    return ["-m", "engram.mcp", "--db", str(db), "--user", "u1", "--embedder", EMBEDDER, *extra]


def _seed(db: Path) -> None:
    with Memory(db, embedder=named_embedder(EMBEDDER)) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
        memory.add("u2's private note about Acme", user_id="u2", kind="fact")


@asynccontextmanager
async def _over_stdio(db: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=_command(db), cwd=str(ROOT),
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        yield session


def _http_client(url: str, headers: dict[str, str] | None = None) -> AbstractAsyncContextManager[Any]:
    try:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined,unused-ignore]

        return streamablehttp_client(url, headers=headers)  # type: ignore[no-any-return,unused-ignore]
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


@asynccontextmanager
async def _over_http(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    async with _http_client(url, headers) as streams, ClientSession(streams[0], streams[1]) as session:
        yield session


@contextmanager
def _http_server(db: Path, *extra: str, cli: bool = False) -> Iterator[str]:
    """``python -m engram.mcp --transport http`` (``engram mcp`` with ``cli``) on a free loopback
    port, until the block ends."""
    port = free_port()
    command = _command(db, "--transport", "http", "--port", str(port), *extra)
    if cli:
        command[:2] = ["-m", "engram.cli", "mcp"]
    proc = subprocess.Popen([sys.executable, *command],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


TOOLS = ["add_memory", "document_versions", "forget_memory", "get_document", "get_memory", "list_memories",
         "memory_history", "recall", "retrieve_context", "search_memories", "update_memory"]
READ_ONLY = {"document_versions", "get_document", "get_memory", "list_memories", "memory_history",
             "retrieve_context", "search_memories"}
DESTRUCTIVE = {"forget_memory", "update_memory"}


def _json(result: Any) -> Any:
    return json.loads(_text(result))


async def _session(connect: AbstractAsyncContextManager[ClientSession]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with connect as session:
        await session.initialize()
        listed = (await session.list_tools()).tools
        out["tools"] = sorted(t.name for t in listed)
        out["annotations"] = {t.name: t.annotations for t in listed}
        out["schemas"] = {t.name: t.input_schema for t in listed}
        added = await session.call_tool("add_memory", {"content": "Globex pays invoices upfront", "kind": "fact"})
        out["added"] = _json(added)
        chat = await session.call_tool("add_memory", {"messages": [
            {"role": "user", "content": "Our Lisbon offsite moves to October"},
            {"role": "assistant", "content": "Noted: the offsite is in October"}], "session_id": "s1"})
        out["chat"] = _json(chat)
        context = await session.call_tool("retrieve_context", {"query": "How does Acme pay?"})
        out["context"] = _text(context)
        searched = await session.call_tool("search_memories", {"query": "Globex invoices", "top_k": 3})
        out["search"] = searched.structured_content
        recalled = await session.call_tool("recall", {"query": "Globex invoices", "max_results": 5})
        out["recall"] = _json(recalled)
        offsite = await session.call_tool("recall", {"query": "When is the Lisbon offsite?", "kind": "message"})
        out["offsite"] = _json(offsite)
        out["by_kind"] = _json(await session.call_tool("recall", {"mode": "by_kind", "kind": "message"}))
        out["temporal"] = _json(await session.call_tool("recall", {
            "mode": "temporal", "start": "2000-01-01T00:00:00+00:00", "end": "2100-01-01T00:00:00+00:00"}))
        out["got"] = _json(await session.call_tool("get_memory", {"memory_id": out["added"]["id"]}))
        out["updated"] = _json(await session.call_tool("update_memory", {
            "memory_id": out["added"]["id"], "content": "Globex pays invoices within a week", "tags": ["billing"]}))
        out["history"] = _json(await session.call_tool("memory_history", {"memory_id": out["added"]["id"]}))
        out["page"] = _json(await session.call_tool("list_memories", {"limit": 2}))
        out["next"] = _json(await session.call_tool("list_memories", {"limit": 2, "offset": 2}))
        out["tagged"] = _json(await session.call_tool("list_memories", {"tags": ["billing"]}))
        forgot = await session.call_tool("forget_memory", {"memory_id": out["added"]["id"]})
        out["forgot"] = _json(forgot)
        again = await session.call_tool("forget_memory", {"memory_id": out["added"]["id"]})
        out["again"] = _json(again)
        out["versions"] = _json(await session.call_tool("document_versions", {"name": "nothing.md"}))
        failures = {
            "document": ("get_document", {"meta": "nothing.md"}),
            "range": ("recall", {"mode": "recent", "max_results": 500}),
            "enum": ("add_memory", {"content": "x", "kind": "rumour"}),
            "type": ("list_memories", {"limit": "many"}),
            "missing": ("get_memory", {"memory_id": out["added"]["id"]}),
            "engram": ("add_memory", {"kind": "fact"}),
            "unknown": ("no_such_tool", {}),
        }
        for name, (tool, arguments) in failures.items():
            result = await session.call_tool(tool, arguments)
            out[name] = (result.is_error, _json(result))
    return out


def _check(out: dict[str, Any], db: Path) -> None:
    assert out["tools"] == TOOLS
    for name, notes in out["annotations"].items():
        assert notes.read_only_hint is (name in READ_ONLY), name
        assert notes.destructive_hint is (name in DESTRUCTIVE), name
        assert notes.idempotent_hint is (name not in ("add_memory", "recall")), name
    for name, schema in out["schemas"].items():
        for arg, prop in schema["properties"].items():
            assert prop.get("description"), (name, arg)
    assert out["schemas"]["recall"]["properties"]["max_results"]["maximum"] == 100
    assert "temporal" in out["schemas"]["recall"]["properties"]["mode"]["enum"]
    assert "NET30" in out["context"] and "private" not in out["context"]
    assert out["search"]["memories"][0]["id"] == out["added"]["id"] and out["search"]["retrieval_id"]
    assert out["search"]["memories"][0]["reasons"]
    assert out["recall"]["memories"][0]["text"] == "Globex pays invoices upfront"
    assert out["recall"]["memories"][0]["id"] == out["added"]["id"]
    assert out["chat"]["kind"] == "message" and len(out["chat"]["ids"]) == 2
    assert {m["id"] for m in out["offsite"]["memories"]} == set(out["chat"]["ids"])
    assert {m["id"] for m in out["by_kind"]["memories"]} == set(out["chat"]["ids"])
    assert len(out["temporal"]["memories"]) == 4 and "private" not in json.dumps(out["temporal"])
    assert out["got"]["content"] == "Globex pays invoices upfront" and out["got"]["user_id"] == "u1"
    assert out["updated"]["text"] == "Globex pays invoices within a week" and out["updated"]["tags"] == ["billing"]
    assert [e["event"] for e in out["history"]["events"]] == ["add", "update"]
    assert "content" in out["history"]["events"][1]["fields"] and out["history"]["events"][1]["before"] is None
    assert len(out["page"]["memories"]) == 2 and out["page"]["next_offset"] == 2
    assert len(out["next"]["memories"]) == 2 and out["next"]["next_offset"] == 4
    assert [m["id"] for m in out["tagged"]["memories"]] == [out["added"]["id"]]
    assert out["forgot"] == {"deleted": True, "id": out["added"]["id"]} and out["again"]["deleted"] is False
    assert out["versions"] == {"versions": []}
    expected = {"document": ("DOCUMENT_NOT_FOUND", None), "range": ("INVALID_INPUT", "max_results"),
                "enum": ("INVALID_INPUT", "kind"), "type": ("INVALID_INPUT", "limit"),
                "missing": ("MEMORY_NOT_FOUND", None), "engram": ("INVALID_INPUT", "content"),
                "unknown": ("NOT_FOUND", "name")}
    for name, (code, field) in expected.items():
        failed, body = out[name]
        assert failed is True and body["error"]["code"] == code, (name, body)
        assert body["error"]["message"] and body["error"].get("field") == field, (name, body)
    with Memory(db, embedder=named_embedder(EMBEDDER)) as memory:
        kept = memory.list(user_id="u1")
        assert sorted(r.content for r in kept) == ["Acme prefers NET30 payment terms",
                                                   "Noted: the offsite is in October",
                                                   "Our Lisbon offsite moves to October"]
        assert {(r.role, r.session_id) for r in kept if r.kind == "message"} == {("user", "s1"), ("assistant", "s1")}
        assert [r.content for r in memory.list(user_id="u2")] == ["u2's private note about Acme"]


def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "engram.db"
    _seed(db)
    _check(asyncio.run(asyncio.wait_for(_session(_over_stdio(db)), timeout=120)), db)


def test_mcp_tools_over_streamable_http(tmp_path: Path) -> None:
    db = tmp_path / "engram.db"
    _seed(db)
    with _http_server(db) as url:
        out = asyncio.run(asyncio.wait_for(_session(_over_http(url)), timeout=120))
    _check(out, db)


def test_the_engram_mcp_command_serves_streamable_http_too(tmp_path: Path) -> None:
    db = tmp_path / "engram.db"
    _seed(db)
    with _http_server(db, cli=True) as url:
        out = asyncio.run(asyncio.wait_for(_session(_over_http(url)), timeout=120))
    _check(out, db)


def test_the_engram_mcp_command_refuses_to_listen_beyond_loopback_without_a_token() -> None:
    from click.testing import CliRunner

    from engram.cli import cli

    refused = CliRunner().invoke(cli, ["mcp", "--user", "u1", "--transport", "http", "--host", "0.0.0.0"])
    assert refused.exit_code == 2 and "--token" in refused.output


def test_mcp_http_with_a_token_answers_only_its_bearer(tmp_path: Path) -> None:
    import httpx

    db = tmp_path / "engram.db"
    _seed(db)

    async def tools(url: str, token: str) -> list[str]:
        async with _over_http(url, {"Authorization": f"Bearer {token}"}) as session:
            await session.initialize()
            return [t.name for t in (await session.list_tools()).tools]

    with _http_server(db, "--token", "s3cret") as url:
        assert "retrieve_context" in asyncio.run(asyncio.wait_for(tools(url, "s3cret"), timeout=60))
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHORIZED"


def test_mcp_http_refuses_to_listen_beyond_loopback_without_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    from engram.mcp import main

    with pytest.raises(SystemExit) as exit_:
        main(["--user", "u1", "--transport", "http", "--host", "0.0.0.0"])
    assert exit_.value.code == 2 and "--token" in capsys.readouterr().err


# -- in process: what an agent reads when a tool fails, and the tools' schemas ----------------------


def _server(tmp_path: Path) -> tuple[Any, Memory]:
    from engram.embedders.fake import FakeEmbedder
    from engram.mcp import build_server

    memory = Memory(tmp_path / "tools.db", embedder=FakeEmbedder(64))
    return build_server(memory, "u1"), memory


async def _call(server: Any, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(failed, text) as the agent would see them."""
    result = await server.call_tool(name, arguments)
    return bool(result.is_error), _text(result)


def test_mcp_tool_errors_carry_the_typed_message_and_field(tmp_path: Path) -> None:
    server, memory = _server(tmp_path)
    with memory:
        failed, text = asyncio.run(_call(server, "add_memory", {"content": "Acme pays NET30", "importance": 7}))
        assert failed
        error = json.loads(text)["error"]
        assert error["code"] == "INVALID_INPUT" and error["field"] == "importance"
        assert "less than or equal to 1" in error["message"]
        failed, text = asyncio.run(_call(server, "get_document", {"meta": "{not json"}))
        assert failed and json.loads(text)["error"]["field"] == "meta"


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
    assert enum("recall", "mode") == ["relevant", "recent", "important", "frequent", "temporal", "by_kind", "linked"]
    assert "document" in enum("recall", "kind")
    assert enum("retrieve_context", "style") == ["policy", "policy_spec", "augmentation"]
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
        assert failed and json.loads(text)["error"]["code"] == "DOCUMENT_NOT_FOUND"


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
        failed, text = asyncio.run(_call(server, "recall", {"mode": "recent", "full_records": True}))
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
        assert failed and json.loads(text)["error"]["field"] == "importance"
        failed, text = asyncio.run(_call(server, "forget_memory", {"memory_id": added["id"]}))
        assert not failed and json.loads(text)["deleted"] is True
    h.close()


def test_mcp_a_crash_answers_a_json_error_without_its_text(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An exception that is no Engram error (a bug) reaches the agent as INTERNAL, its text only in the log."""
    from engram.embedders.fake import FakeEmbedder
    from engram.mcp import build_server

    class Broken(Memory):
        def get(self, memory_id: str, *, user_id: str) -> Any:
            raise RuntimeError("secret detail of the crash")

    with Broken(tmp_path / "broken.db", embedder=FakeEmbedder(64)) as memory:
        failed, text = asyncio.run(_call(build_server(memory, "u1"), "get_memory", {"memory_id": "m1"}))
    assert failed and json.loads(text) == {"error": {"code": "INTERNAL",
                                                     "message": "internal error; see the server's log"}}
    assert "secret detail" not in text and "secret detail" in caplog.text


def test_mcp_a_retrieval_that_could_not_read_memory_fails_instead_of_finding_nothing(tmp_path: Path) -> None:
    """A blank query, a store unavailable, a deadline passed before any source answered: the retrieval
    answers no memories with ``metadata.error``; the tools answered "nothing found" (isError false),
    which an agent takes as memory having nothing to say."""
    from engram.mcp.results import answered
    from engram.retrieve.budget import PARTIAL
    from engram.retrieve.fallbacks import FALLBACKS

    server, memory = _server(tmp_path)
    with memory:
        asyncio.run(_call(server, "add_memory", {"content": "Acme pays NET30"}))
        for tool in ("search_memories", "retrieve_context"):
            failed, text = asyncio.run(_call(server, tool, {"query": "   "}))
            assert failed, tool
            error = json.loads(text)["error"]
            assert (error["code"], error["field"]) == ("INVALID_QUERY", "query")
            failed, text = asyncio.run(_call(server, tool, {"query": "Acme payment terms"}))
            assert not failed and "NET30" in text
    for code, (message, fallback) in FALLBACKS.items():
        error = {"code": code, "message": message, "fallback": fallback}
        if fallback == "skip":
            with pytest.raises(EngramError) as raised:
                answered(error)
            assert raised.value.to_dict()["code"] == code
        else:  # an answer from the cache, an empty collection, a domain source missing: memory answered
            answered(error)
    answered(PARTIAL)  # past the deadline, answered from the stages that finished
    answered(None)


def test_mcp_refusals_name_the_tools_own_argument(tmp_path: Path) -> None:
    server, memory = _server(tmp_path)
    with memory:
        failed, text = asyncio.run(_call(server, "get_document", {"meta": '{"a":' * 3000 + "1" + "}" * 3000}))
        assert failed and json.loads(text)["error"]["field"] == "meta"  # was INTERNAL (RecursionError)
        failed, text = asyncio.run(_call(server, "document_versions", {"name": "   "}))
        assert failed and json.loads(text)["error"]["field"] == "name"  # was filename_or_doc_key
        failed, text = asyncio.run(_call(server, "add_memory", {"messages": [
            {"role": "user", "content": "fine"}, {"role": "user", "content": "   "}]}))
        assert failed and json.loads(text)["error"]["field"] == "messages[1].content"  # was content


def test_mcp_refuses_an_empty_or_overlong_user_before_serving(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Every call would fail naming ``user_id``, an argument of no tool: the server does not start."""
    from engram.errors import ValidationError
    from engram.mcp import serve
    from engram.mcp.server import main

    for user in ("", "   ", "u" * 300):
        with pytest.raises(SystemExit):
            main(["--user", user, "--db", str(tmp_path / "m.db"), "--embedder", "hash-256"])
        assert "--user: must be" in capsys.readouterr().err
        with pytest.raises(ValidationError) as refused:
            serve(str(tmp_path / "m.db"), user, named_embedder("hash-256"))
        assert refused.value.field == "user_id"
        assert not (tmp_path / "m.db").exists()  # refused before the store is created


def test_mcp_an_argument_no_tool_takes_is_refused_not_ignored(tmp_path: Path) -> None:
    """A misspelled filter ("kind" for "kinds") had searched everything and looked like an answer."""
    server, memory = _server(tmp_path)
    with memory:
        asyncio.run(_call(server, "add_memory", {"content": "Acme pays NET30"}))
        failed, text = asyncio.run(_call(server, "search_memories", {"query": "Acme", "kind": "procedure"}))
        error = json.loads(text)["error"]
        assert failed and (error["code"], error["field"]) == ("INVALID_INPUT", "kind")
        assert "kinds" in error["message"]
        failed, text = asyncio.run(_call(server, "search_memories", {"query": "Acme", "kinds": ["fact"]}))
        assert not failed and "NET30" in text
        tools = asyncio.run(server.list_tools())
        assert all(t.input_schema.get("additionalProperties") is False for t in tools)


def test_mcp_over_stdio_answers_a_request_line_it_cannot_read(tmp_path: Path) -> None:
    """A lone surrogate escape is valid JSON the SDK's parser refuses: its reader dropped the line and
    the client waited for that id forever. Now it is answered with a parse error under its id, a
    request that is no JSON-RPC with an invalid-request error, and the server goes on serving."""
    import select

    process = subprocess.Popen(
        [sys.executable, "-m", "engram.mcp", "--db", str(tmp_path / "s.db"), "--user", "u1", "--embedder", "hash-256"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path)
    assert process.stdin is not None and process.stdout is not None

    def ask(line: str) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(line.encode() + b"\n")
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], 60)
        assert ready, f"no answer to {line[:60]}"
        return dict(json.loads(process.stdout.readline()))

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert "result" in ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        unreadable = ask('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_memories",'
                         '"arguments":{"query":"acme \\ud800"}}}')
        assert unreadable["id"] == 7 and unreadable["error"]["code"] == -32700
        assert "lone surrogate" in unreadable["error"]["message"]
        invalid = ask('{"id":9,"method":"tools/list"}')  # no "jsonrpc"
        assert invalid["id"] == 9 and invalid["error"]["code"] == -32600
        listed = ask('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_memories","arguments":{}}}')
        assert listed["id"] == 8 and "result" in listed
    finally:
        process.stdin.close()
        process.wait(30)


def test_mcp_a_line_without_an_id_is_not_answered() -> None:
    """A notification waits for no answer, and a line that is no JSON at all names no request."""
    from mcp.types import jsonrpc_message_adapter

    from engram.mcp.stdio import reply_to_unreadable

    for line in ('{"jsonrpc":"2.0","method":"notifications/x","params":{"q":"\\ud800"}}', "not json", '[1, 2]',
                 '{"jsonrpc":"2.0","id":3,"result":"\\ud800"}'):  # a notification, no JSON, a response
        with pytest.raises(Exception) as problem:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
        assert reply_to_unreadable(problem.value) is None
    assert reply_to_unreadable(RuntimeError("boom")) is None
