"""Chat messages in: ``add`` with a conversation, in-process, over HTTP (client) and over MCP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.client import EngramClient
from engram.embedders.fake import FakeEmbedder
from engram.errors import ValidationError
from engram.memory import Memory
from tests.service import harness, running
from tests.service.test_mcp import _call

CHAT = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about a thriller? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thrillers, but I love sci-fi movies.", "name": "Alice"},
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as m:
        yield m


def test_each_message_is_a_message_memory_in_order(memory: Memory) -> None:
    records = memory.add(CHAT, user_id="alice", run_id="chat-1", agent_id="bot", metadata={"category": "movies"})
    assert [r.content for r in records] == [m["content"] for m in CHAT]
    assert [r.role for r in records] == ["user", "assistant", "Alice"]  # a name is the speaker
    assert {(r.kind, r.session_id, r.agent_id) for r in records} == {("message", "chat-1", "bot")}
    # A named message keeps the role it was given: Alice spoke as the user.
    named = {"category": "movies", "message_role": "user"}
    assert [r.metadata for r in records] == [{"category": "movies"}] * 2 + [named]
    times = [r.created_at for r in records]
    assert times == sorted(times) and len(set(times)) == 3
    listed = memory.list(user_id="alice", filters={"session_id": "chat-1"})
    assert sorted(listed, key=lambda r: r.created_at) == sorted(records, key=lambda r: r.created_at)


def test_a_text_still_answers_one_record_and_run_id_is_its_session(memory: Memory) -> None:
    record = memory.add("Alice loves sci-fi", user_id="alice", kind="fact", run_id="chat-1")
    assert record.session_id == "chat-1" and record.kind == "fact"


def test_own_times_and_text_parts_are_kept(memory: Memory) -> None:
    when = "2024-02-01T09:00:00+00:00"
    records = memory.add(
        [{"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
          "created_at": when}, {"role": "assistant", "content": "ok"}],
        user_id="u1", created_at="2024-03-01T00:00:00+00:00",
    )
    assert records[0].content == "first\nsecond"
    assert records[0].created_at == datetime(2024, 2, 1, 9, tzinfo=UTC)
    assert records[1].created_at == datetime(2024, 3, 1, 0, 0, 0, 1, tzinfo=UTC)


@pytest.mark.parametrize(("messages", "field"), [
    ([], "messages"),
    (["hello"], "messages[0]"),
    ([{"content": "no role"}], "messages[0].role"),
    ([{"role": "user", "content": "x", "tool_calls": []}], "messages[0].tool_calls"),
    ([{"role": "user", "content": 3}], "messages[0].content"),
    # What the stored memory refuses names the message it came from (was "content", "role").
    ([{"role": "user", "content": "   "}], "messages[1].content"),
    ([{"role": "user", "content": "lone \ud800"}], "messages[1].content"),
    ([{"role": "u" * 300, "content": "x"}], "messages[1].role"),
])
def test_bad_messages_are_refused_by_field_before_anything_is_written(
    memory: Memory, messages: list[object], field: str
) -> None:
    with pytest.raises(ValidationError) as error:
        memory.add([{"role": "user", "content": "fine"}, *messages] if field.startswith("messages[1]") else messages,  # type: ignore[arg-type]
                   user_id="u1")
    assert error.value.field == field
    assert memory.list(user_id="u1") == []


@pytest.mark.parametrize(("fields", "field"), [
    ({"user_id": ""}, "user_id"), ({"user_id": "u1", "importance": 7}, "importance"),
    ({"user_id": "u1", "session_id": " "}, "session_id"),
])
def test_a_field_of_the_call_is_named_as_given_not_by_a_message(memory: Memory, fields: dict[str, object],
                                                                 field: str) -> None:
    # What the call gives every message is the call's: "messages[0].user_id" named no argument.
    with pytest.raises(ValidationError) as error:
        memory.add([{"role": "user", "content": "fine"}], **fields)  # type: ignore[arg-type]
    assert error.value.field == field


def test_infer_and_a_conflicting_session_are_refused(memory: Memory) -> None:
    with pytest.raises(ValidationError) as error:
        memory.add(CHAT, user_id="u1", infer=True)
    assert error.value.field == "infer"
    assert len(memory.add(CHAT, user_id="u1", infer=False)) == 3
    with pytest.raises(ValidationError) as error:
        memory.add("x", user_id="u1", run_id="a", session_id="b")
    assert error.value.field == "run_id"


def test_messages_over_http_and_mcp_answer_as_in_process(tmp_path: Path, memory: Memory) -> None:
    from engram.mcp import build_server

    local = memory.add(CHAT, user_id="u1", run_id="chat-1", metadata={"category": "movies"})
    (tmp_path / "remote").mkdir()
    h = harness(tmp_path / "remote", FakeEmbedder(64))
    with running(h.app) as url, EngramClient(url, h.key("u1")) as client:
        remote = client.add(CHAT, user_id="u1", run_id="chat-1", metadata={"category": "movies"})
        keep = ("content", "role", "session_id", "kind", "metadata")
        assert [[getattr(r, k) for k in keep] for r in remote] == [[getattr(r, k) for k in keep] for r in local]
        assert client.add("one text", user_id="u1").content == "one text"
        with pytest.raises(ValidationError) as error:
            client.add([{"role": "user", "content": "x", "bogus": 1}], user_id="u1")
        assert error.value.field.startswith("messages")
        server = build_server(client, "u1")
        failed, text = asyncio.run(_call(server, "add_memory", {"messages": CHAT[:2], "session_id": "chat-2"}))
        assert not failed, text
        ids = json.loads(text)["ids"]
        assert [h.memory.get(i, user_id="u1").role for i in ids] == ["user", "assistant"]
        failed, text = asyncio.run(_call(server, "add_memory", {}))
        assert failed and json.loads(text)["error"]["field"] == "content"
    h.close()
