"""Mem0's calls on Engram: a Mem0 quickstart runs with only its import changed, filters take
Mem0's operators, and the embedded API accepts id-only calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram import Memory
from engram.config import RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import MemoryNotFound, ValidationError
from engram.ext import Embedder
from engram.metadata_filter import matches

MESSAGES = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies."},
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as m:
        yield m


def test_the_mem0_quickstart_runs_with_only_the_import_changed(tmp_path: Path, embedder: Embedder) -> None:
    m = Memory(tmp_path / "quick.db", embedder=embedder)  # Mem0: m = Memory()
    m.add(MESSAGES, user_id="alice", metadata={"category": "movies"})
    m.add("I'm allergic to peanuts, so no satay please.", user_id="alice", metadata={"category": "health"})
    found = m.search("Which movie genre do I love?", user_id="alice", limit=3)
    assert "love sci-fi" in found["results"][0]["memory"]
    assert all(r["user_id"] == "alice" and r["score"] > 0 and r["reasons"] for r in found["results"])
    assert m.search("Which movie genre do I love?", filters={"user_id": "alice"}, limit=3) == found  # Mem0 >= 1.0
    everything = m.get_all(user_id="alice")
    assert len(everything["results"]) == 5
    memory_id = everything["results"][0]["id"]
    m.update(memory_id=memory_id, data="Alice loves science fiction films")
    assert m.get(memory_id).content == "Alice loves science fiction films"
    assert m.delete(memory_id=memory_id) is True
    assert m.delete(memory_id=memory_id) is False
    assert m.delete_all(user_id="alice")["deleted"] == 4
    assert m.get_all(user_id="alice") == {"results": []}
    m.close()


def test_search_and_get_all_scope_by_agent_and_run_and_carry_metadata(memory: Memory) -> None:
    memory.add(MESSAGES[:2], user_id="u1", agent_id="movie-bot", run_id="r1", metadata={"n": 1})
    memory.add(MESSAGES[2:], user_id="u1", agent_id="other-bot", run_id="r2", metadata={"n": 2})
    by_agent = memory.get_all(user_id="u1", agent_id="movie-bot")["results"]
    assert {r["agent_id"] for r in by_agent} == {"movie-bot"} and len(by_agent) == 2
    by_run = memory.search("movies", user_id="u1", run_id="r2")["results"]
    assert by_run and {(r["run_id"], r["metadata"]["n"]) for r in by_run} == {("r2", 2)}
    entries = memory.retrieve("movies", user_id="u1", limit=4).memories
    assert {e.metadata["n"] for e in entries} == {1, 2} and {e.agent_id for e in entries} == {"movie-bot", "other-bot"}
    assert memory.delete_all(user_id="u1", run_id="r1")["deleted"] == 2
    assert {r["run_id"] for r in memory.get_all(user_id="u1")["results"]} == {"r2"}


def test_mem0_filter_operators(memory: Memory) -> None:
    for i, (category, priority) in enumerate([("work", 1), ("work", 7), ("home", 9), ("travel", 3)]):
        memory.add(f"note {i} about {category} movies", user_id="u1",
                   metadata={"category": category, "priority": priority, "tags": [category, "x"]})

    def found(filters: dict[str, Any]) -> list[int]:
        got = memory.get_all(user_id="u1", filters=filters)["results"]
        return sorted(r["metadata"]["priority"] for r in got)

    assert found({"category": "work"}) == [1, 7]
    assert found({"priority": {"gte": 7}}) == [7, 9]
    assert found({"priority": {"gt": 1, "lt": 9}}) == [3, 7]
    assert found({"category": {"in": ["home", "travel"]}}) == [3, 9]
    assert found({"category": {"nin": ["home", "travel"]}}) == [1, 7]
    assert found({"category": {"ne": "work"}}) == [3, 9]
    assert found({"tags": {"contains": "home"}}) == [9]
    assert found({"AND": [{"category": "work"}, {"priority": {"gte": 5}}]}) == [7]
    assert found({"OR": [{"category": "home"}, {"priority": {"lte": 1}}]}) == [1, 9]
    assert found({"NOT": [{"category": "work"}]}) == [3, 9]
    assert found({"category": "*", "missing": "*"}) == []
    assert found({"priority": {"gt": "text"}}) == []  # across types: no match, not an error
    searched = memory.search("movies", user_id="u1", filters={"category": "work"}, limit=1)["results"]
    assert len(searched) == 1 and searched[0]["metadata"]["category"] == "work"
    with pytest.raises(ValidationError) as error:
        memory.get_all(user_id="u1", filters={"priority": {"between": [1, 2]}})
    assert error.value.field == "filters.priority.between" and "allowed: eq" in str(error.value)
    with pytest.raises(ValidationError) as error:
        memory.search("x", user_id="u1", filters={"OR": {"a": 1}})
    assert error.value.field == "filters.OR"
    assert matches({"role": "user"}, {"role": "user", "metadata": {"role": "other"}})
    # What no store can bind is refused by name, not met by an encoder's or a driver's exception.
    for bad, field in (({"category": {"contains": "\ud800"}}, "filters.category.contains"),
                       ({"category": {"in": ["ok", "\udfff"]}}, "filters.category.in"),
                       ({"priority": 2**63}, "filters.priority"),
                       ({"priority": {"gt": -(10**30)}}, "filters.priority.gt"),
                       ({"priority": {"gte": float("inf")}}, "filters.priority.gte")):
        with pytest.raises(ValidationError) as error:
            memory.get_all(user_id="u1", filters=bad)
        assert error.value.field == field
        with pytest.raises(ValidationError) as error:
            memory.search("x", user_id="u1", filters=bad)
        assert error.value.field == field
    assert found({"priority": 2**63 - 1}) == []  # the largest 64-bit integer is a value like any other


def test_threshold_keeps_only_scores_at_or_above_it(memory: Memory) -> None:
    memory.add(MESSAGES, user_id="u1")
    every = memory.search("sci-fi movies", user_id="u1")["results"]
    cut = every[len(every) // 2]["score"]
    kept = memory.search("sci-fi movies", user_id="u1", threshold=cut)["results"]
    assert kept and all(r["score"] >= cut for r in kept) and len(kept) < len(every)


def test_limit_and_top_k_shortcuts(memory: Memory) -> None:
    memory.add(MESSAGES, user_id="u1")
    assert len(memory.retrieve("movies", user_id="u1", limit=2).memories) == 2
    assert len(memory.retrieve("movies", user_id="u1", top_k=1, limit=1).memories) == 1
    assert len(memory.retrieve("movies", user_id="u1", top_k=3, config=RetrievalConfig(top_k=3)).memories) == 3
    with pytest.raises(ValidationError) as error:
        memory.retrieve("movies", user_id="u1", limit=2, top_k=3)
    assert error.value.field == "top_k"
    with pytest.raises(ValidationError) as error:
        memory.retrieve("movies", user_id="u1", limit=2, config=RetrievalConfig(top_k=5))
    assert error.value.field == "limit" and "config.top_k is 5" in str(error.value)
    with pytest.raises(ValidationError):
        memory.retrieve("movies", user_id="u1", limit=0)


def test_id_only_calls_find_the_owner_and_scoped_calls_stay_scoped(memory: Memory) -> None:
    mine = memory.add("Bob's secret", user_id="bob")
    assert memory.get(mine.id).user_id == "bob"
    assert memory.update(mine.id, "Bob's new secret").content == "Bob's new secret"
    with pytest.raises(MemoryNotFound):
        memory.get(mine.id, user_id="alice")
    assert memory.delete(mine.id, user_id="alice") is False
    with pytest.raises(MemoryNotFound):
        memory.get("0" * 26)
    with pytest.raises(ValidationError) as error:
        memory.delete_all()
    assert error.value.field == "user_id"


def test_reset_forgets_every_user(memory: Memory) -> None:
    memory.add("a", user_id="u1")
    memory.add_many([{"content": "b", "user_id": "u2"}, {"content": "c", "user_id": "u2"}])
    assert memory.reset() == 3
    assert memory.store.users() == [] and memory.list(user_id="u2") == []


def test_over_http_reset_takes_an_admin_key_and_ids_stay_scoped(tmp_path: Path) -> None:
    from engram.client import EngramClient
    from engram.errors import Forbidden
    from tests.service import harness, running

    h = harness(tmp_path, FakeEmbedder(64))
    h.memory.add("Bob's secret", user_id="bob")
    mine = h.memory.add("mine", user_id="u1")
    with running(h.app) as url, EngramClient(url, h.key("u1")) as client, \
            EngramClient(url, h.key(admin=True)) as admin:
        with pytest.raises(Forbidden):
            client.reset()
        with pytest.raises(Forbidden):
            client.search("secret", user_id="bob")
        assert client.update(mine.id, "still mine", user_id="u1").content == "still mine"
        assert admin.reset() == 2
        assert h.memory.store.users() == []
        assert client.get_all(user_id="u1") == {"results": []}
    h.close()


def test_the_from_mem0_guide_runs_and_finds_the_right_memory_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "from-mem0.md").read_text(encoding="utf-8")
    code = guide.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENGRAM_DB", raising=False)
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/from-mem0.md", "exec"), namespace)
    namespace["m"].close()
    printed = capsys.readouterr().out.splitlines()
    assert "I love sci-fi movies" in printed[0]
    assert printed[-1] == "UPDATE"
    assert (tmp_path / "engram.db").exists()


def test_a_mem0_export_comes_in_as_facts(memory: Memory) -> None:
    from engram.mem0_calls import from_export

    export = {"results": [
        {"id": "0b5a", "memory": "Likes sci-fi movies", "hash": "h1", "metadata": {"category": "movies"},
         "created_at": "2024-07-20T01:00:00-07:00", "updated_at": None, "user_id": "alice", "run_id": "r1"},
        {"id": "0b5b", "memory": "Allergic to peanuts", "created_at": "2024-07-21T08:00:00", "agent_id": "bot"},
    ]}
    records = memory.add_many(from_export(export, default_user="alice"))
    assert [(r.kind, r.user_id, r.session_id, r.agent_id) for r in records] == [
        ("fact", "alice", "r1", None), ("fact", "alice", None, "bot")]
    assert records[0].metadata == {"category": "movies", "mem0": {"id": "0b5a", "hash": "h1"}}
    assert [r.created_at.isoformat() for r in records] == ["2024-07-20T08:00:00+00:00", "2024-07-21T08:00:00+00:00"]
    with pytest.raises(ValidationError) as error:
        from_export({"results": ["x"]})
    assert error.value.field == "results[0]"


def test_engram_import_from_mem0(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from engram.cli import cli

    export = tmp_path / "mem0.json"
    export.write_text(json.dumps({"results": [
        {"id": "a", "memory": "Likes sci-fi movies", "created_at": "2024-07-20T01:00:00-07:00", "user_id": "alice"},
        {"id": "b", "memory": "Allergic to peanuts", "created_at": "2024-07-21T08:00:00+00:00"},
    ]}))
    db = str(tmp_path / "m.db")
    result = CliRunner().invoke(cli, ["import", str(export), "--from", "mem0", "--user", "bob", "--db", db])
    assert result.exit_code == 0, result.output
    assert "imported 2 memories" in result.output
    again = CliRunner().invoke(cli, ["import", str(export), "--from", "mem0", "--user", "bob", "--db", db])
    assert "imported 0 memories, skipped 2" in again.output
    with Memory(db, embedder=FakeEmbedder(64)) as memory:
        assert [r.content for r in memory.list(user_id="bob")] == ["Allergic to peanuts"]
        assert memory.list(user_id="alice")[0].metadata == {"mem0": {"id": "a"}}
    export.write_text("[1, 2]")
    bad = CliRunner().invoke(cli, ["import", str(export), "--from", "mem0", "--db", db])
    assert bad.exit_code != 0 and "not a Mem0 export" in bad.output


def test_search_and_get_all_take_mem0s_top_k(memory: Memory) -> None:
    memory.add(MESSAGES, user_id="u1")
    assert len(memory.search("movies", filters={"user_id": "u1"}, top_k=1)["results"]) == 1
    assert len(memory.get_all(user_id="u1", top_k=1)["results"]) == 1
    assert len(memory.get_all(user_id="u1", limit=1)["results"]) == 1
    with pytest.raises(ValidationError):
        memory.search("movies", user_id="u1", top_k=0)


@pytest.mark.parametrize(("given", "day"), [
    ("2025-12-31", "2025-12-31"),
    ("2025-12-31T10:00:00", "2025-12-31"),
    ("2025-12-31T23:30:00-02:00", "2026-01-01"),  # its day in UTC
])
def test_an_expiration_date_is_a_day(tmp_path: Path, given: str, day: str) -> None:
    from engram.mem0 import Memory as Mem0

    with Mem0(tmp_path / "m.db", embedder=FakeEmbedder(16)) as m:
        added = m.add("Parking pass.", user_id="alice", expiration_date=given)["results"][0]
        assert (m.get(added["id"]) or {})["expiration_date"] == day
        for wrong in ("2024-01-01garbage", "soon", 20251231):
            with pytest.raises(ValidationError, match="expiration_date"):
                m.add("Parking pass.", user_id="alice", expiration_date=wrong)
