"""EngramChatMessageHistory against the real langchain-core: a conversation kept as Engram message
memories, read back in order, cleared per session, and driving ``RunnableWithMessageHistory``
with langchain-core's own fake chat model, on a real SQLite file (and over the HTTP service)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.integrations.langchain import EngramChatMessageHistory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "engram.db", embedder=FakeEmbedder(64)) as m:
        yield m


def _shape(messages: list[BaseMessage]) -> list[tuple[str, str, str | None]]:
    return [(m.type, m.text, m.name) for m in messages]


def test_history_stores_messages_in_order_and_reads_them_back(memory: Memory) -> None:
    history = EngramChatMessageHistory(memory, user_id="maya", session_id="offsite")
    assert isinstance(history, BaseChatMessageHistory) and history.messages == []
    history.add_messages([
        SystemMessage("You are Maya's assistant."),
        HumanMessage("The Lisbon offsite moves to October.", name="Priya", id="m1"),
        AIMessage("Noted: October."),
    ])
    history.add_messages([ToolMessage("calendar updated", tool_call_id="call-1"),
                          ChatMessage(content="Budget is capped at 5k.", role="finance")])
    history.add_user_message("Book the usual hotel.")
    history.add_ai_message("Booking it.")
    got = history.messages
    assert _shape(got) == [
        ("system", "You are Maya's assistant.", None),
        ("human", "The Lisbon offsite moves to October.", "Priya"),
        ("ai", "Noted: October.", None),
        ("tool", "calendar updated", None),
        ("chat", "Budget is capped at 5k.", None),
        ("human", "Book the usual hotel.", None),
        ("ai", "Booking it.", None),
    ]
    assert got[1].id == "m1" and isinstance(got[3], ToolMessage) and got[3].tool_call_id == "call-1"
    assert isinstance(got[4], ChatMessage) and got[4].role == "finance"
    # Each message is an Engram message memory of the session, with its speaker, so retrieval finds it.
    stored = memory.list(user_id="maya", filters={"session_id": "offsite"}, limit=100)
    assert len(stored) == 7 and {r.kind for r in stored} == {"message"}
    assert {r.role for r in stored} >= {"Priya", "assistant", "user", "finance"}
    found = memory.retrieve("What did Priya say about the offsite?", user_id="maya", session_id="offsite")
    assert found.memories[0].content == "The Lisbon offsite moves to October."


def test_history_is_one_session_of_one_user_and_clear_keeps_the_rest(memory: Memory) -> None:
    ours = EngramChatMessageHistory(memory, user_id="maya", session_id="s1")
    other_session = EngramChatMessageHistory(memory, user_id="maya", session_id="s2")
    other_user = EngramChatMessageHistory(memory, user_id="bob", session_id="s1")
    ours.add_messages([HumanMessage("mine"), AIMessage("yours")])
    other_session.add_messages([HumanMessage("another chat")])
    other_user.add_messages([HumanMessage("bob's chat")])
    fact = memory.add("Maya is vegetarian", user_id="maya", kind="fact", session_id="s1")
    plain = memory.add([{"role": "user", "content": "added without LangChain"}], user_id="maya", run_id="s1")
    assert _shape(ours.messages) == [("human", "mine", None), ("ai", "yours", None),
                                     ("human", "added without LangChain", None)]
    assert ours.messages[2].id == plain[0].id  # no LangChain id stored: the memory's id stands in
    ours.clear()
    assert ours.messages == []
    assert _shape(other_session.messages) == [("human", "another chat", None)]
    assert _shape(other_user.messages) == [("human", "bob's chat", None)]
    assert memory.get(fact.id, user_id="maya").content == "Maya is vegetarian"  # a fact is not a message


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_runnable_with_message_history_remembers_each_session(memory: Memory) -> None:
    seen: list[list[BaseMessage]] = []

    def record(prompt: Any) -> Any:
        seen.append(list(prompt.to_messages()))
        return prompt

    prompt = ChatPromptTemplate.from_messages([("system", "You are terse."), MessagesPlaceholder("history"),
                                               ("human", "{question}")])
    model = FakeListChatModel(responses=["Hi Maya.", "You are Maya.", "Hello stranger."])
    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(record) | model,
        lambda session_id: EngramChatMessageHistory(memory, user_id="maya", session_id=session_id),
        input_messages_key="question", history_messages_key="history",
    )
    one = {"configurable": {"session_id": "chat-1"}}
    assert chain.invoke({"question": "I am Maya."}, config=one).text == "Hi Maya."  # type: ignore[arg-type]
    assert chain.invoke({"question": "Who am I?"}, config=one).text == "You are Maya."  # type: ignore[arg-type]
    two = {"configurable": {"session_id": "chat-2"}}
    answer = asyncio.run(chain.ainvoke({"question": "Who am I?"}, config=two))  # type: ignore[arg-type]
    assert answer.text == "Hello stranger."
    # The second turn's prompt held the first turn; the other session's held nothing before it.
    assert _shape(seen[1]) == [("system", "You are terse.", None), ("human", "I am Maya.", None),
                               ("ai", "Hi Maya.", None), ("human", "Who am I?", None)]
    assert _shape(seen[2]) == [("system", "You are terse.", None), ("human", "Who am I?", None)]
    history = EngramChatMessageHistory(memory, user_id="maya", session_id="chat-1")
    assert [m.text for m in history.messages] == ["I am Maya.", "Hi Maya.", "Who am I?", "You are Maya."]


def test_history_over_the_http_service(tmp_path: Path) -> None:
    from engram.client import EngramClient
    from tests.service import harness, running

    h = harness(tmp_path, FakeEmbedder(64))
    with running(h.app) as url, EngramClient(url, h.key("maya")) as client:
        history = EngramChatMessageHistory(client, user_id="maya", session_id="s1")
        history.add_messages([HumanMessage("Over HTTP", name="Priya"), AIMessage("Stored.")])
        assert _shape(history.messages) == [("human", "Over HTTP", "Priya"), ("ai", "Stored.", None)]
        assert [r.content for r in h.memory.list(user_id="maya")] == ["Stored.", "Over HTTP"]
        history.clear()
        assert history.messages == [] and h.memory.list(user_id="maya") == []
    h.close()
