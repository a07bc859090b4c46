"""Mem0's documented calls, as Mem0's docs write them, against ``engram.mem0`` with only the import changed.

Each call is quoted from Mem0's current open-source docs (mem0ai/mem0): docs/open-source/python-quickstart.mdx,
docs/core-concepts/memory-operations/{add,search,update,delete}.mdx,
docs/open-source/features/{metadata-filtering,reranking,async-memory}.mdx, and the signatures of
mem0/memory/main.py (``search(query, *, top_k=20, filters, threshold=0.1, rerank, explain)``,
``get_all(*, filters, top_k=20)``). The metadata-filtering examples run on SQLite and PostgreSQL
among memories that outrank their targets, so a filter that ran after ranking would miss them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram.embedders.fake import FakeEmbedder
from engram.errors import MemoryNotFound, ValidationError
from engram.ext import Embedder
from engram.mem0 import AsyncMemory, Memory
from engram.metadata_filter import matches

messages = [  # python-quickstart.mdx, "Store a Memory"
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about a thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."}  # noqa: E501
]
ITEM_KEYS = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    if request.param == "sqlite":
        memory = Memory(tmp_path / "m.db", embedder=FakeEmbedder(64))
    else:
        memory = Memory(store=request.getfixturevalue("postgres_store"), embedder=FakeEmbedder(64))
    yield memory
    memory.close()


def test_the_python_quickstart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENGRAM_DB", raising=False)
    m = Memory(embedder=embedder)  # the docs: m = Memory()
    assert (tmp_path / "engram.db").exists()

    result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"})
    assert [r["event"] for r in result["results"]] == ["ADD"] * 4
    assert result["results"][2]["memory"] == messages[2]["content"]
    assert result["results"][0]["metadata"] == {"category": "movie_recommendations"}
    result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"}, infer=False)
    assert len(result["results"]) == 4 and {r["role"] for r in result["results"]} == {"user", "assistant"}

    all_memories = m.get_all(user_id="alice")
    assert len(all_memories["results"]) == 8  # get_all's top_k defaults to 20, as Mem0's
    first = all_memories["results"][0]
    assert set(first) >= ITEM_KEYS and first["user_id"] == "alice" and "score" not in first
    assert first["metadata"] == {"category": "movie_recommendations"} and len(first["hash"]) == 32
    assert first["updated_at"] == first["created_at"]  # Mem0 sets both when a memory is made

    specific_memory = m.get(first["id"])
    assert specific_memory == {**first, "score": None}  # Mem0's get dumps its item whole, get_all without score

    related_memories = m.search(query="What do you know about me?", user_id="alice")
    # What alice said of herself, though no word or meaning of it is in the question; not the assistant's.
    said = {r["memory"] for r in related_memories["results"]}
    assert "I'm not a big fan of thriller movies but I love sci-fi movies." in said
    assert not any("Got it!" in text or "How about" in text for text in said)
    hits = m.search(query="Which movie genre do I love?", user_id="alice")["results"]
    assert "I love sci-fi movies" in hits[0]["memory"] and ITEM_KEYS | {"score", "user_id"} <= set(hits[0])

    memory_id = first["id"]
    result = m.update(memory_id=memory_id, data="I love India, it is my favorite country.")
    assert result == {"message": "Memory updated successfully!"}
    updated = m.get(memory_id)
    assert updated is not None and updated["memory"] == "I love India, it is my favorite country."
    assert updated["updated_at"] > updated["created_at"]

    history = m.history(memory_id=memory_id)
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert history[1]["new_memory"] == "I love India, it is my favorite country."
    assert {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted"} <= set(
        history[0])

    assert m.delete(memory_id=memory_id) == {"message": "Memory deleted successfully!"}
    assert m.get(memory_id) is None  # Mem0's get answers None for a missing id
    with pytest.raises(MemoryNotFound):
        m.delete(memory_id=memory_id)
    assert m.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert m.get_all(user_id="alice") == {"results": []}
    m.add("I like tea", user_id="bob")
    m.reset()
    assert m.get_all(user_id="bob") == {"results": []}
    m.close()


def test_add_search_update_delete_pages(tmp_path: Path, embedder: Embedder) -> None:
    memory = Memory(tmp_path / "m.db", embedder=embedder)
    m = memory
    # add.mdx: messages as a keyword (the platform call and AsyncMemory's), and a text
    memory.add(messages=[{"role": "user", "content": "I'm planning a trip to Tokyo next month."},
                         {"role": "assistant", "content": "Great! I'll remember that for future suggestions."}],
               user_id="alice")
    memory.add("I like to drink coffee in the morning and go for a walk", user_id="alice",
               metadata={"categories": ["habits"]})
    memory.add("My food preferences: vegetarian, no nuts", user_id="alice", metadata={"categories": ["diet", "health"]})
    # search.mdx, OSS
    m.search("What are Alice's hobbies?", user_id="alice")
    related_memories = m.search("Should I drink coffee or tea?", user_id="alice")
    assert "coffee" in related_memories["results"][0]["memory"]
    memories = m.search("food preferences", user_id="alice", filters={"categories": {"contains": "diet"}})
    assert [r["metadata"]["categories"] for r in memories["results"]] == [["diet", "health"]]
    m.add("a query about the invoice", user_id="alice", agent_id="chatbot", run_id="session-123")
    scoped = m.search("query", user_id="alice", agent_id="chatbot", run_id="session-123")["results"]
    assert [(r["agent_id"], r["run_id"]) for r in scoped] == [("chatbot", "session-123")]
    # main.py's signatures: the scope in filters, top_k, threshold, explain
    top = m.search("Tokyo trip", filters={"user_id": "alice"}, top_k=1, threshold=0.0, explain=True)["results"]
    assert len(top) == 1 and "Tokyo" in top[0]["memory"]
    assert top[0]["score_details"]["semantic_similarity"]["value"] >= 0.0
    assert len(m.get_all(filters={"user_id": "alice"}, top_k=2)["results"]) == 2
    # a lower threshold lowers the floor: more comes back, never less
    floor = len(m.search("walk", user_id="alice", threshold=0.9)["results"])
    assert len(m.search("walk", user_id="alice", threshold=0.0)["results"]) > floor
    # reranking.mdx
    results = memory.search("query", user_id="alice", rerank=True)
    assert results == memory.search("query", user_id="alice", rerank=False)
    # update.mdx: OSS data=, the platform's text= with metadata and timestamp
    memory_id = memories["results"][0]["id"]
    memory.update(memory_id=memory_id, data="Alex now prefers decaf coffee")
    memory.update(memory_id=memory_id, text="Updated memory content about the user",
                  metadata={"category": "profile-update"}, timestamp="2025-01-15T12:00:00Z")
    item = m.get(memory_id)
    assert item is not None and item["memory"] == "Updated memory content about the user"
    # Mem0 merges the new metadata into the memory's (mem0/memory/main.py, _update_memory).
    assert item["metadata"] == {"categories": ["diet", "health"], "category": "profile-update"}
    assert item["created_at"].startswith("2025-01-15T12:00:00")
    # delete.mdx: OSS, and the scopes delete_all takes
    memory.delete(memory_id=memory_id)
    memory.add("ticket 1", agent_id="support-bot")
    memory.add("run note", run_id="session-xyz")
    assert len(m.get_all(agent_id="support-bot")["results"]) == 1
    memory.delete_all(agent_id="support-bot")
    memory.delete_all(run_id="session-xyz")
    assert m.get_all(agent_id="support-bot") == {"results": []} == m.get_all(run_id="session-xyz")
    memory.delete_all(user_id="alice")
    assert m.get_all(user_id="alice") == {"results": []}
    memory.close()


def test_platform_add_options_timestamp_expiry_and_procedural_memory(tmp_path: Path) -> None:
    m = Memory(tmp_path / "m.db", embedder=FakeEmbedder(64))
    old = m.add("I moved to Berlin", user_id="alice", timestamp=1721577600)["results"][0]
    assert m.get(old["id"])["created_at"].startswith("2024-07-21T16:00:00")  # type: ignore[index]
    m.add("Gone after 2020", user_id="alice", expiration_date="2020-01-01")
    kept = m.add("Kept until 2999", user_id="alice", expiration_date="2999-12-31")["results"][0]
    listed = m.get_all(user_id="alice")["results"]
    assert [r["memory"] for r in listed if "expiration_date" in r] == ["Kept until 2999"]
    assert all("Gone" not in r["memory"] for r in m.search("Gone after 2020", user_id="alice")["results"])
    assert m.get(kept["id"])["expiration_date"] == "2999-12-31"  # type: ignore[index]
    procedure = m.add(messages, agent_id="movie-bot", memory_type="procedural_memory")["results"]
    assert len(procedure) == 4 and m.engram.get(procedure[0]["id"]).kind == "procedure"
    with pytest.raises(ValueError):
        m.add("x", user_id="alice", memory_type="semantic")
    with pytest.raises(ValueError):
        m.add("x")  # Mem0: at least one of user_id, agent_id, run_id
    with pytest.raises(ValidationError) as error:  # no LLM runs: an extraction prompt cannot be honoured
        m.add("x", user_id="alice", prompt="Extract the user's preferences")
    assert error.value.field == "prompt"
    config = {"vector_store": {"provider": "qdrant", "config": {"host": "localhost", "port": 6333}}}
    with pytest.raises(ValidationError) as error:  # python-quickstart.mdx, "Advanced"
        Memory.from_config(config)
    assert error.value.field == "config_dict" and "Memory(path_or_url)" in str(error.value)
    m.close()


def test_the_async_memory_page(tmp_path: Path, embedder: Embedder) -> None:
    memory = AsyncMemory(tmp_path / "m.db", embedder=embedder)

    async def run() -> None:
        await memory.add(
            messages=[
                {"role": "user", "content": "I'm travelling to SF"},
                {"role": "assistant", "content": "That's great to hear!"}
            ],
            user_id="alice"
        )
        found = await memory.search(
            query="Where am I travelling?",
            user_id="alice"
        )
        assert "SF" in found["results"][0]["memory"]
        search_result = await memory.search(query="Where am I travelling?", user_id="alice", limit=3)
        assert len(search_result["results"]) <= 3
        listed = await memory.get_all(user_id="alice")
        memory_id = listed["results"][0]["id"]
        assert (await memory.get(memory_id=memory_id))["id"] == memory_id  # type: ignore[index]
        await memory.update(
            memory_id=memory_id,
            data="I'm travelling to Seattle"
        )
        assert [h["event"] for h in await memory.history(memory_id=memory_id)] == ["ADD", "UPDATE"]
        await memory.delete(memory_id=memory_id)
        await memory.delete_all(user_id="alice")
        assert await memory.get_all(user_id="alice") == {"results": []}

    asyncio.run(run())
    memory.close()


# metadata-filtering.mdx: (scope, query, filters) as the page writes them, and what each target holds.
FILTERED: list[tuple[dict[str, str], str, dict[str, Any], dict[str, Any]]] = [
    ({"user_id": "alice"}, "What are my preferences?", {"category": "preferences"}, {"category": "preferences"}),
    ({"user_id": "alice"}, "recent activities",
     {"score": {"gt": 0.8}, "priority": {"gte": 5}, "confidence": {"lt": 0.9}, "rating": {"lte": 3}},
     {"score": 0.95, "priority": 5, "confidence": 0.5, "rating": 3}),
    ({"user_id": "alice"}, "specific content", {"status": {"eq": "active"}, "archived": {"ne": True}},
     {"status": "active"}),
    ({"user_id": "alice"}, "multi-category search",
     {"category": {"in": ["food", "travel", "entertainment"]}, "status": {"nin": ["deleted", "archived"]}},
     {"category": "travel", "status": "open"}),
    ({"user_id": "alice"}, "content search",
     {"title": {"contains": "meeting"}, "description": {"icontains": "important"}, "tags": {"contains": "urgent"}},
     {"title": "Weekly meeting", "description": "Very IMPORTANT", "tags": ["urgent", "q3"]}),
    ({"user_id": "alice"}, "all with category", {"category": "*"}, {"category": "misc"}),
    ({"user_id": "alice"}, "complex query",
     {"AND": [{"category": "work"}, {"priority": {"gte": 7}}, {"status": {"ne": "completed"}}]},
     {"category": "work", "priority": 7, "status": "open"}),
    ({"user_id": "alice"}, "flexible query",
     {"OR": [{"category": "urgent"}, {"priority": {"gte": 9}}, {"deadline": {"contains": "today"}}]},
     {"deadline": "due today"}),
    ({"user_id": "alice"}, "exclusion query", {"NOT": [{"category": "archived"}, {"status": "deleted"}]},
     {"status": "open"}),
    ({"user_id": "alice"}, "advanced query",
     {"AND": [{"OR": [{"category": "work"}, {"category": "personal"}]}, {"priority": {"gte": 5}},
              {"NOT": [{"status": "archived"}]}]},
     {"category": "personal", "priority": 6}),
    ({"user_id": "alice"}, "query", {"category": "work", "status": "active"}, {"category": "work", "status": "active"}),
    ({"user_id": "alice"}, "query",
     {"AND": [{"category": "work"}, {"status": {"ne": "archived"}}, {"priority": {"gte": 5}}]},
     {"category": "work", "priority": 8}),
    ({"user_id": "project_manager"}, "What tasks need attention?",
     {"AND": [{"project": {"in": ["alpha", ""]}}, {"priority": {"gte": 8}}, {"status": {"ne": "completed"}},
              {"OR": [{"assignee": "alice"}, {"assignee": "bob"}]}]},
     {"project": "alpha", "priority": 9, "status": "open", "assignee": "bob"}),
    ({"agent_id": "support_bot"}, "pending support issues",
     {"AND": [{"ticket_status": {"ne": "resolved"}}, {"priority": {"in": ["high", "critical"]}},
              {"created_date": {"gte": "2024-01-01"}}, {"NOT": [{"category": "spam"}]}]},
     {"ticket_status": "open", "priority": "critical", "created_date": "2024-03-02"}),
    ({"user_id": "reader123"}, "recommend content",
     {"AND": [{"OR": [{"genre": {"in": ["sci-fi", "fantasy"]}}, {"author": {"contains": "favorite"}}]},
              {"rating": {"gte": 4.0}}, {"read_status": {"ne": "completed"}}, {"language": "english"}]},
     {"genre": "fantasy", "rating": 4.5, "read_status": "unread", "language": "english"}),
]
#: What every outranking memory holds: it fails each filter above.
CROWD = {"status": "deleted", "priority": 0, "archived": True, "ticket_status": "resolved"}


def test_metadata_filtering_examples_narrow_before_ranking(backend: Memory) -> None:
    m = backend
    targets = {}
    for n, (scope, query, _, holds) in enumerate(FILTERED):
        user = scope.get("user_id") or f"agent:{scope['agent_id']}"  # where engram.mem0 keeps an agent's own
        # The query's own words, many times over: these rank above the target (20 would be ranked).
        m.engram.add_many([{"content": f"{query} {query} {i}", "user_id": user, "agent_id": scope.get("agent_id"),
                            "metadata": CROWD} for i in range(60)])
        targets[n] = m.add(f"{query} (the one)", **scope, metadata=holds)["results"][0]["id"]
    for n, (scope, query, filters, _) in enumerate(FILTERED):
        results = m.search(query, **scope, filters=filters)["results"]
        assert targets[n] in [r["id"] for r in results], (query, filters)
        assert all(matches(filters, {**r, "metadata": r["metadata"] or {}}) for r in results)
    # the same through Engram's own Memory.search, which ranked first and filtered after
    alice = m.engram.search("recent activities", user_id="alice", filters=FILTERED[1][2])["results"]
    assert [r["id"] for r in alice] == [targets[1]]
    listed = m.get_all(filters={"user_id": "alice", "category": "*"}, top_k=100)["results"]
    assert {r["metadata"]["category"] for r in listed} == {"preferences", "travel", "misc", "work", "personal"}
    with pytest.raises(ValueError):  # "Handle invalid operators"
        m.search("test query", user_id="alice", filters={"invalid_operator": {"unknown": "value"}})


OPERATOR_CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"n": 1}, ["int1"]), ({"n": {"eq": 1.0}}, ["int1"]), ({"n": {"ne": 1}}, ["int7", "text", "flag", "bare", "list"]),
    ({"n": {"gt": 1}}, ["int7"]), ({"n": {"gte": 1}}, ["int1", "int7"]), ({"n": {"lt": 7}}, ["int1"]),
    ({"n": {"lte": 7}}, ["int1", "int7"]), ({"n": {"in": [7, "7"]}}, ["int7", "text"]),
    ({"n": {"nin": [1, 7]}}, ["text", "flag", "bare", "list"]), ({"n": "*"}, ["int1", "int7", "text", "flag", "list"]),
    ({"n": True}, ["flag"]), ({"n": None}, ["bare"]), ({"n": {"gt": "6"}}, ["text"]),
    ({"s": {"contains": "Ab"}}, ["int1"]), ({"s": {"icontains": "ab"}}, ["int1", "int7"]),
    ({"n": {"contains": "x"}}, ["list"]), ({"n": {"icontains": "X"}}, ["list"]),
    ({"role": "user"}, ["int1", "int7", "text", "flag", "bare", "list"]), ({"role": {"contains": "ss"}}, []),
    ({"run_id": "r1"}, ["int1"]), ({"run_id": {"ne": "r1"}}, ["int7", "text", "flag", "bare", "list"]),
    ({"created_at": {"gte": "2024-01-01"}}, ["int1", "int7", "text", "flag", "bare", "list"]),
    ({"created_at": {"lt": "2024-01-01T00:00:00+00:00"}}, []),
    ({"NOT": {"n": {"lte": 1}}}, ["int7", "text", "flag", "bare", "list"]),
    ({"OR": [{"n": 1}, {"AND": [{"s": {"icontains": "AB"}}, {"n": {"gt": 5}}]}]}, ["int1", "int7"]),
]


@pytest.mark.parametrize(("filters", "expected"), OPERATOR_CASES)
def test_every_operator_in_the_store_agrees_with_python(backend: Memory, filters: dict[str, Any],
                                                        expected: list[str]) -> None:
    m = backend
    for name, metadata, run in [("int1", {"n": 1, "s": "xAbx"}, "r1"), ("int7", {"n": 7, "s": "xaBx"}, None),
                                ("text", {"n": "7"}, None), ("flag", {"n": True}, None), ("bare", {}, None),
                                ("list", {"n": ["x", 3]}, None)]:
        m.add(name, user_id="u", metadata={**metadata, "name": name}, run_id=run)
    found = m.get_all(user_id="u", filters=filters)["results"]
    assert sorted(r["memory"] for r in found) == sorted(expected)
    listed = m.engram.list(user_id="u")  # Python's reading of the same filter, over every memory
    from engram.mem0_calls import record_result
    assert sorted(r.content for r in listed if matches(filters, record_result(r))) == sorted(expected)


def test_migrated_error_handling_and_settings(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", embedder=FakeEmbedder())
    for text in ("first", "second", "third"):
        memory.add(text, user_id="u")
    # get_all: newest first, as documented.
    assert [r["memory"] for r in memory.get_all(user_id="u")["results"]] == ["third", "second", "first"]
    # Mem0 raises a ValueError for a missing id; a migrated `except ValueError:` still catches ours.
    for call in (lambda: memory.update("missing", "x"), lambda: memory.delete("missing")):
        with pytest.raises(ValueError) as caught:
            call()
        assert isinstance(caught.value, MemoryNotFound)
    memory.close()
    # Mem0's config dict is refused when the memory is opened, naming the setting, not at the first search.
    with pytest.raises(ValidationError) as error:
        Memory(tmp_path / "m.db", config={"vector_store": {"provider": "qdrant"}})
    assert error.value.field == "config" and "RetrievalConfig" in str(error.value)
    with pytest.raises(ValidationError) as error:
        Memory(tmp_path / "m.db", limits={"max_content_chars": 10})
    assert error.value.field == "limits"


def test_what_mem0_code_passes_that_mem0_accepts(tmp_path: Path) -> None:
    """Found by running Mem0's documented calls after only the import changed (2026-11-29)."""
    m = Memory(tmp_path / "m.db", embedder=FakeEmbedder(64))
    # An OpenAI chat history: extra keys on a message are ignored, an assistant's tool call (no
    # text) is skipped, a named speaker is the item's actor_id with its role kept.
    added = m.add([
        {"role": "user", "content": "What's the weather in Oslo?", "id": "msg_1", "timestamp": "2025-01-01"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Oslo: sunny, 4 degrees"},
        {"role": "user", "name": "carol", "content": "I always cycle to work when it is sunny."},
    ], user_id=" alice ", infer=False)["results"]
    assert [r["memory"] for r in added] == ["What's the weather in Oslo?", "Oslo: sunny, 4 degrees",
                                            "I always cycle to work when it is sunny."]
    assert [(r["role"], r["actor_id"]) for r in added] == [("user", None), ("tool", None), ("user", "carol")]
    # Ids are trimmed as Mem0 trims them.
    assert len(m.get_all(filters={"user_id": "alice"})["results"]) == 3
    carol = m.get(added[-1]["id"])
    assert carol is not None and carol["actor_id"] == "carol" and carol["score"] is None
    # An empty user id stays an error, even beside an agent's id: never the agent's shared memories.
    m.add("The staging password is hunter2", agent_id=" bot ")
    for call in (lambda: m.get_all(user_id="", agent_id="bot"), lambda: m.delete_all(user_id=" ", agent_id="bot")):
        with pytest.raises(ValidationError):
            call()
    assert [r["agent_id"] for r in m.get_all(agent_id="bot")["results"]] == ["bot"]  # trimmed as stored
    # A tool call's empty text is skipped, as Mem0 skips it; the turns around it are kept.
    kept = m.add([{"role": "user", "content": "Book the 9am train"},
                  {"role": "assistant", "content": "", "tool_calls": [{"id": "c2"}]}], user_id="alice")["results"]
    assert [r["memory"] for r in kept] == ["Book the 9am train"]
    # Ids are trimmed wherever a scope is named: delete_all finds what add stored.
    m.add("Agent note", user_id="alice", agent_id=" helper ")
    m.delete_all(user_id="alice", agent_id=" helper")
    assert not [r for r in m.get_all(user_id="alice")["results"] if r.get("agent_id") == "helper"]
    # A message with a caption but no text is refused by name, not dropped in silence.
    with pytest.raises(ValidationError):
        m.add([{"role": "user", "content": "", "image_caption": "a red bicycle"}], user_id="alice")
    # top_k=0 is a valid, empty answer; an argument Engram cannot honour is a ValueError naming it.
    assert m.search("weather", user_id="alice", top_k=0) == {"results": []} == m.get_all(user_id="alice", top_k=0)
    with pytest.raises(ValueError, match="reference_date"):
        m.search("weather", user_id="alice", reference_date="2025-01-01")
    assert m.search("weather", user_id="alice", reference_date=None)["results"]  # Mem0's default
    # update merges metadata, leaves the scope alone and sets or clears the expiry.
    first = added[0]["id"]
    m.update(first, metadata={"topic": "weather"})
    m.update(first, metadata={"source": "chat", "user_id": "mallory"}, expiration_date="2099-12-31")
    item = m.get(first)
    assert item is not None and item["metadata"] == {"topic": "weather", "source": "chat"}
    assert item["user_id"] == "alice" and item["expiration_date"] == "2099-12-31"
    m.update(first, metadata={"expiration_date": "2000-01-01"})  # only expiration_date= sets it
    assert (m.get(first) or {})["expiration_date"] == "2099-12-31"
    m.update(first, expiration_date=None)
    assert "expiration_date" not in (m.get(first) or {})
    # history: none for an unknown id, as Mem0 answers; its rows' types are Mem0's.
    assert m.history("no-such-id") == []
    rows = m.history(first)
    assert rows[0]["event"] == "ADD" and rows[0]["is_deleted"] is False
    assert {"actor_id", "role"} <= set(rows[0])
    m.close()


def test_async_memory_takes_positional_arguments_as_mem0s(tmp_path: Path) -> None:
    async def run() -> None:
        am = AsyncMemory(tmp_path / "a.db", embedder=FakeEmbedder(64))
        mid = (await am.add("I like tea", user_id="z"))["results"][0]["id"]
        await am.update(mid, "I like green tea", {"k": 1})
        item = await am.get(mid)
        assert item is not None and item["memory"] == "I like green tea" and item["metadata"] == {"k": 1}
        await am.delete_all("z")
        assert (await am.get_all(user_id="z")) == {"results": []}
        am.close()

    asyncio.run(run())
    with pytest.raises(ValidationError) as error:
        AsyncMemory.from_config({"vector_store": {"provider": "qdrant"}})
    assert error.value.field == "config_dict"
