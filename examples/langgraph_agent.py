"""A LangGraph agent whose long-term memory is Engram, runnable offline.

    pip install 'engram-retrieval[langgraph]'
    python examples/langgraph_agent.py --db agent.db

The graph has two nodes. ``remember`` stores a user's "Remember: ..." message in the store under
``(user_id, "memories")``; ``respond`` searches that namespace with the user's question and puts what it
recalls in the prompt. Conversations (threads) are short-term state in LangGraph's checkpointer; what
the store holds outlives them, so a new thread still knows the user.

The chat model is langchain-core's ``ParrotFakeChatModel``, which answers with the prompt it was given:
the run shows exactly what a model would see. Pass any chat model (ChatOpenAI, ChatAnthropic, ...) to
``build_graph`` instead.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from engram import Memory
from engram.integrations.langgraph import EngramStore

REMEMBER = "remember:"


@dataclass
class Context:
    user_id: str


def build_graph(store: BaseStore, model: BaseChatModel | None = None) -> CompiledStateGraph[Any, Any, Any, Any]:
    chat_model = model or ParrotFakeChatModel()

    def remember(state: MessagesState, runtime: Runtime[Context]) -> dict[str, Any]:
        text = state["messages"][-1].text
        if text.lower().startswith(REMEMBER) and runtime.store is not None:
            fact = text[len(REMEMBER) :].strip()
            runtime.store.put((runtime.context.user_id, "memories"), uuid.uuid4().hex, {"text": fact})
        return {}

    def respond(state: MessagesState, runtime: Runtime[Context]) -> dict[str, Any]:
        question = state["messages"][-1].text
        assert runtime.store is not None
        found = runtime.store.search((runtime.context.user_id, "memories"), query=question, limit=2)
        notes = "\n".join(f"- {item.value['text']}" for item in found) or "- nothing yet"
        prompt = [*state["messages"][:-1], HumanMessage(f"{question}\n\nWhat you remember about me:\n{notes}")]
        return {"messages": [AIMessage(chat_model.invoke(prompt).text)]}

    graph = StateGraph(MessagesState, context_schema=Context)
    graph.add_node("remember", remember)
    graph.add_node("respond", respond)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "respond")
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def ask(graph: CompiledStateGraph[Any, Any, Any, Any], user_id: str, thread_id: str, text: str) -> str:
    state = graph.invoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread_id}},
        context=Context(user_id=user_id),
    )
    return str(state["messages"][-1].text)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", default="langgraph-agent.db", help="the Engram SQLite file (default: %(default)s)")
    args = parser.parse_args(argv)
    with Memory(args.db) as memory:
        graph = build_graph(EngramStore(memory))
        turns = [
            ("alice", "monday", "Remember: I am vegetarian and never eat fish."),
            ("alice", "monday", "Remember: my cat Pixel needs her pills at 8 pm."),
            ("bob", "bob-chat", "Remember: I am allergic to peanuts."),
            ("alice", "friday", "What should I cook for dinner tonight?"),  # a new thread: only the store knows
            ("bob", "bob-chat-2", "What should I cook for dinner tonight?"),
        ]
        for user_id, thread_id, text in turns:
            print(f"[{user_id} / {thread_id}] {text}")
            print("  model saw:", ask(graph, user_id, thread_id, text).replace("\n", "\n    "))


if __name__ == "__main__":
    main()
