"""examples/langgraph_agent.py runs as shipped: a compiled LangGraph graph that stores memories in
EngramStore in one thread and recalls them in another, offline, with langchain-core's fake chat model."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from engram import Memory
from engram.ext import Embedder
from engram.integrations.langgraph import EngramStore

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_agent.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langgraph_agent_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_example_main_recalls_across_threads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    load_example().main(["--db", str(tmp_path / "agent.db")])
    turns = capsys.readouterr().out.split("\n[")
    alice_friday = next(t for t in turns if t.startswith("alice / friday]"))
    bob_later = next(t for t in turns if t.startswith("bob / bob-chat-2]"))
    # A thread that never heard it still gets Alice's diet, first, and never Bob's allergy.
    recalled = alice_friday.split("What you remember about me:")[1].split("\n")
    assert recalled[1].strip() == "- I am vegetarian and never eat fish."
    assert "peanuts" not in alice_friday
    assert "peanuts" in bob_later and "vegetarian" not in bob_later
    with Memory(tmp_path / "agent.db") as memory:
        assert EngramStore(memory).list_namespaces() == [("alice", "memories"), ("bob", "memories")]


def test_example_graph_runs_async_on_the_store(tmp_path: Path, embedder: Embedder) -> None:
    example = load_example()
    with Memory(tmp_path / "agent.db", embedder=embedder) as memory:
        graph = example.build_graph(EngramStore(memory))
        config = {"configurable": {"thread_id": "t1"}}
        context = example.Context(user_id="carol")

        async def run() -> str:
            await graph.ainvoke({"messages": [("user", "Remember: the office wifi password rotates on Mondays")]},
                                config, context=context)
            state = await graph.ainvoke({"messages": [("user", "When does the wifi password change?")]},
                                        {"configurable": {"thread_id": "t2"}}, context=context)
            return str(state["messages"][-1].text)

        answer = asyncio.run(run())
        assert "- the office wifi password rotates on Mondays" in answer
        stored = memory.list(user_id="carol")
        assert [r.content for r in stored] == ["the office wifi password rotates on Mondays"]
