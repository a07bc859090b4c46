"""EngramRetriever and add_messages against the real langchain-core: a retriever inside a runnable
chain with a fake chat model, and chat messages stored as Engram memories, on a real SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, ChatMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from engram import Memory, RetrievalConfig
from engram.ext import Embedder
from engram.integrations.langchain import EngramRetriever, add_messages

FACTS = [
    "Acme prefers NET30 payment terms on every invoice",
    "Acme's warehouse is in Rotterdam and receives deliveries on Tuesdays",
    "Globex asked for a quote on 200 kg of green coffee",
]


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "engram.db", embedder=embedder) as m:
        m.add_many([{"content": text, "user_id": "maya", "kind": "fact", "tags": ["crm"]} for text in FACTS])
        m.add("Bob's private note: Acme pays late", user_id="bob", kind="fact")
        yield m


def test_retriever_returns_documents_with_engram_explanations(memory: Memory) -> None:
    retriever = EngramRetriever(memory, user_id="maya")
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("How does Acme pay its invoices?")
    assert docs and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert top.page_content == FACTS[0]
    stored = {r.content: r.id for r in memory.list(user_id="maya")}
    assert top.id == top.metadata["id"] == stored[FACTS[0]]
    meta = top.metadata
    assert meta["type"] == "fact" and meta["tags"] == ["crm"]
    assert 0.0 < meta["score"] <= 1.0
    assert meta["signals"]["semantic_similarity"] > 0.0
    assert any("semantic" in reason for reason in meta["reasons"])
    assert meta["timestamp"].startswith("20") and meta["session_id"] is None
    assert meta["retrieval_id"]
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert all("Bob" not in d.page_content for d in docs)  # another user's memory never answers
    # The retrieval id is what feedback takes: the used memory gains reinforcement.
    assert memory.feedback(meta["retrieval_id"], [top.id], user_id="maya").recorded == 1


def test_retriever_passes_config_and_filters(memory: Memory) -> None:
    only_one = EngramRetriever(memory, user_id="maya", config=RetrievalConfig(top_k=1))
    assert len(only_one.invoke("Acme")) == 1
    memory.add("Acme called about the Rotterdam delivery", user_id="maya", kind="message", session_id="s1")
    in_session = EngramRetriever(memory, user_id="maya", session_id="s1")
    assert [d.page_content for d in in_session.invoke("Rotterdam delivery")] == [
        "Acme called about the Rotterdam delivery"
    ]
    facts_only = EngramRetriever(memory, user_id="maya", kinds=["fact"])
    assert all(d.metadata["type"] == "fact" for d in facts_only.invoke("Rotterdam delivery"))
    memory.add("Untagged: Acme ships from Rotterdam", user_id="maya", kind="fact")
    tagged = EngramRetriever(memory, user_id="maya", filters={"tags_all": ["crm"]}, tags=["trace-label"])
    assert all(d.metadata["tags"] == ["crm"] for d in tagged.invoke("Acme Rotterdam"))
    with pytest.raises(TypeError):
        EngramRetriever(memory, user_id="maya", config={"top_k": 1})
    assert EngramRetriever(memory, user_id="nobody").invoke("Acme") == []


def test_retriever_in_a_runnable_chain_with_a_fake_chat_model(memory: Memory) -> None:
    retriever = EngramRetriever(memory, user_id="maya", config=RetrievalConfig(top_k=2))

    def context(docs: list[Document]) -> str:
        return "\n".join(f"- {d.page_content} (score {d.metadata['score']:.2f})" for d in docs)

    prompt = ChatPromptTemplate.from_messages([("human", "Known facts:\n{context}\n\nQuestion: {question}")])
    # The parrot answers with the prompt it was given: what the chain put in front of the model.
    chain = (
        {"context": retriever | RunnableLambda(context), "question": RunnablePassthrough()}
        | prompt | ParrotFakeChatModel() | StrOutputParser()
    )
    answer = chain.invoke("Where is Acme's warehouse?")
    lines = answer.splitlines()
    assert lines[0] == "Known facts:"
    assert lines[1].startswith(f"- {FACTS[1]} (score ")
    assert "Globex" not in answer or answer.index(FACTS[1]) < answer.index("Globex")
    assert answer.endswith("Question: Where is Acme's warehouse?")
    batch = chain.batch(["How does Acme pay?", "Who wants coffee?"])
    assert FACTS[0] in batch[0].splitlines()[1] and FACTS[2] in batch[1].splitlines()[1]
    assert asyncio.run(chain.ainvoke("Where is Acme's warehouse?")) == answer


def test_retriever_async(memory: Memory) -> None:
    retriever = EngramRetriever(memory, user_id="maya")

    async def both() -> list[list[Document]]:
        return list(await asyncio.gather(retriever.ainvoke("How does Acme pay?"), retriever.ainvoke("coffee quote")))

    pay, coffee = asyncio.run(both())
    assert pay[0].page_content == FACTS[0] and coffee[0].page_content == FACTS[2]


def test_add_messages_stores_speakers_sessions_and_order(memory: Memory) -> None:
    messages = [
        SystemMessage("You are Maya's assistant."),
        HumanMessage("We agreed the Lisbon offsite moves to October.", name="Priya", id="m1"),
        AIMessage("Noted: the Lisbon offsite is now in October."),
        AIMessage("", tool_calls=[{"name": "calendar", "args": {}, "id": "call-1"}]),  # no text: skipped
        ToolMessage("calendar updated", tool_call_id="call-1"),
        ChatMessage("Budget is capped at 5k.", role="finance"),
        HumanMessage([{"type": "text", "text": "And book the "}, {"type": "text", "text": "usual hotel."}]),
        AIMessageChunk("Booking it."),
    ]
    stored = add_messages(memory, messages, user_id="maya", session_id="offsite", tags=["chat"])
    assert [r.role for r in stored] == ["system", "Priya", "assistant", "tool", "finance", "user", "assistant"]
    assert all(r.kind == "message" and r.session_id == "offsite" and r.tags == ("chat",) for r in stored)
    assert stored[1].metadata == {"message_type": "human", "message_role": "user", "name": "Priya", "message_id": "m1"}
    assert stored[3].metadata["tool_call_id"] == "call-1"
    assert stored[5].content == "And book the usual hotel."
    # Stored in order: listing the session newest first gives them back reversed.
    listed = memory.list(user_id="maya", filters={"session_id": "offsite"})
    assert [r.id for r in listed] == [r.id for r in reversed(stored)]
    # The speaker's name is part of what retrieval matches: a question about Priya finds her message.
    result = memory.retrieve("What did Priya say about the offsite?", user_id="maya", session_id="offsite")
    assert result.memories[0].id == stored[1].id
    assert result.memories[0].message_id == "m1"


def test_add_messages_refuses_what_is_not_a_message(memory: Memory) -> None:
    with pytest.raises(TypeError):
        add_messages(memory, [{"role": "user", "content": "hi"}], user_id="maya")  # type: ignore[list-item]
    assert add_messages(memory, [], user_id="maya") == []
    stored = add_messages(memory, [HumanMessage("hi")], user_id="maya", created_at="2024-01-02T03:04:05+00:00")
    assert stored[0].created_at.isoformat() == "2024-01-02T03:04:05+00:00" and stored[0].session_id is None
