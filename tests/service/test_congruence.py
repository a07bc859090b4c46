"""One script through ``Memory`` and through ``EngramClient`` against the real service on loopback,
each over its own SQLite store and the same embedder: the answers must be the same values.

Ids, recording times and timings differ between two stores by nature; the script names every
memory by the order it was added, and the comparison drops what a clock decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram.api import MemoryAPI
from engram.client import EngramClient
from engram.config import RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import MemoryNotFound, ValidationError
from engram.memory import Memory
from engram.model import Filters
from engram.service import KeyStore, create_app
from tests.service import Harness, harness, running

NOW = "2024-02-15T10:30:00+00:00"
CLOCK_TIME = re.compile(r"(?!2024)\d{4}-\d\d-\d\dT[\d:.]+\+00:00")
CLOCKED = {"recorded_at", "last_accessed_at", "queryTime", "stageMs", "retrievalId", "duration_ms", "ingested_at",
           "seconds"}


class Names:
    """Replaces each store's ids by the order they were first seen, so two stores compare."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items() if k not in CLOCKED}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str) and len(value) == 26 and value.isalnum() and value.isupper():
            return self.labels.setdefault(value, f"#{len(self.labels)}")
        if isinstance(value, str):
            # The script's own times are in 2024; any other time in a text is the clock's.
            return CLOCK_TIME.sub("<now>", value)
        return value


def dump(value: Any) -> Any:
    from engram.wire import jsonable

    return jsonable(value)


def script(api: MemoryAPI, folder: Path) -> list[Any]:
    """Every shared method once, the way an agent would call them; returns what each answered."""
    out: list[Any] = []
    user = "u1"
    acme = api.add("Acme prefers NET30 payment terms", user_id=user, kind="fact", tags=["billing"],
                   created_at="2024-02-01T09:00:00+00:00", importance=0.7)
    more = api.add_many([
        {"content": "Globex pays invoices upfront", "user_id": user, "kind": "fact",
         "created_at": "2024-02-02T09:00:00+00:00", "session_id": "s1"},
        {"content": "Lunch with the Acme team was pleasant", "user_id": user, "kind": "episode",
         "created_at": "2024-02-03T12:00:00+00:00", "session_id": "s1", "metadata": {"where": "Berlin"}},
    ])
    out += [dump(acme), dump(more)]
    out.append(dump(api.get(acme.id, user_id=user)))
    out.append(dump(api.list(user_id=user)))
    out.append(dump(api.list(user_id=user, filters=Filters(kinds=("fact",)), limit=1, offset=1)))
    out.append(dump(api.list(user_id=user, filters={"session_id": "s1", "tags_all": []})))
    out.append(dump(api.update(acme.id, user_id=user, importance=0.9, tags=["billing", "terms"])))
    out.append(dump(api.link(more[1].id, acme.id, "about", 0.5, user_id=user)))
    out.append(dump(api.links(more[1].id, user_id=user)))
    out.append(dump(api.add_entity("customer:acme", user_id=user, aliases=["Acme"])))
    config = RetrievalConfig(min_score=0.0, top_k=5)
    found = api.retrieve("How does Acme pay?", user_id=user, config=config, now=NOW)
    out.append(dump(found.to_dict()))
    out.append(found.to_prompt())
    out.append(dump(api.retrieve("invoices", user_id=user, config=config, now=NOW, session_id="s1",
                                 kinds=["fact"]).to_dict()))
    out.append(dump(api.feedback(found.metadata.retrieval_id or "", found.ids()[:1], user_id=user)))
    out.append(dump(api.recall("Acme payment", user_id=user, max_results=3)))
    out.append(dump(api.recall(user_id=user, mode="recent", max_results=2)))
    out.append(dump(api.recall_by_kind("fact", user_id=user, limit=5)))
    out.append(dump(api.recall_temporal("2024-02-01T00:00:00+00:00", "2024-02-02T23:00:00+00:00", user_id=user)))
    out.append(dump(api.recall_linked(more[1].id, user_id=user)))
    chat = api.add([{"role": "user", "content": "I love sci-fi movies", "created_at": "2024-02-04T10:00:00+00:00"},
                    {"role": "assistant", "content": "Noted: sci-fi it is", "name": "bot"}],
                   user_id=user, run_id="chat", agent_id="bot", metadata={"topic": "movies", "n": 2},
                   created_at="2024-02-04T10:00:01+00:00")
    out.append(dump(chat))
    searched = api.search("sci-fi movies", user_id=user, limit=3, filters={"n": {"gte": 2}})["results"]
    # search takes no ``now``: scores drift with the clock between the two runs, so they compare apart.
    assert searched and all(r["metadata"]["n"] == 2 for r in searched)
    out.append([{k: v for k, v in r.items() if k != "score"} for r in searched])
    either = api.get_all(user_id=user, filters={"OR": [{"where": "Berlin"}, {"run_id": "chat"}]}, limit=5)
    assert len(either["results"]) == 3
    out.append(either)
    out.append(api.get_all(user_id=user, agent_id="bot"))
    out.append(dump(api.retrieve("invoices", user_id=user, now=NOW, limit=2).to_dict()))
    out.append(dump(api.update(more[0].id, "Globex pays invoices within 10 days", user_id=user)))
    out.append(dump(api.history(more[0].id, user_id=user)))  # add, update: times are the clock's
    out.append(api.delete_all(user_id=user, run_id="chat"))
    with pytest.raises(ValidationError) as bad:
        api.get_all(user_id=user, filters={"n": {"like": "x"}})
    out.append((bad.value.field, bad.value.code))
    notes = folder / "notes.md"
    for text in ("# Notes\n\nAcme pays in 30 days.", "# Notes\n\nAcme pays in 45 days now."):
        notes.write_text(text, encoding="utf-8")
        api.ingest(notes, user_id=user)  # type: ignore[attr-defined]  # both have it; arguments differ by side
    versions = api.document_versions("notes.md", user_id=user)
    out.append([(d.content, d.filename, d.version) for d in versions])
    latest = api.get_document({"filename": "notes.md"}, user_id=user)
    out.append((latest.content, latest.version))
    with pytest.raises(MemoryNotFound):
        api.get("0" * 26, user_id=user)
    with pytest.raises(ValidationError) as bad:
        api.add("   ", user_id=user)
    out.append((type(bad.value).__name__, bad.value.code))
    out.append(api.delete(acme.id, user_id=user))
    out.append(api.delete(acme.id, user_id=user))
    gone = api.history(acme.id, user_id=user)  # a deleted memory's log outlives it, without its text
    assert [(e.event, e.before, e.after) for e in gone] == [("add", None, None), ("update", None, None),
                                                            ("delete", None, None)]
    out.append(dump(gone))
    with pytest.raises(MemoryNotFound):
        api.history("0" * 26, user_id=user)
    out.append(api.forget_user(user))
    return out


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def both(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MemoryAPI, MemoryAPI]]:
    """A Memory and a client of a service over a Memory, each on its own store of one backend.

    On PostgreSQL both stores share the test database: the script runs through one side, then the
    other, and ends by forgetting its user, so the second side starts from empty tables too.
    """
    (tmp_path / "local").mkdir()
    (tmp_path / "remote").mkdir()
    if request.param == "sqlite":
        local = Memory(tmp_path / "local" / "engram.db", embedder=FakeEmbedder(64))
        h = harness(tmp_path / "remote", FakeEmbedder(64))
    else:
        from engram.stores.postgres.store import PostgresStore

        url = request.getfixturevalue("postgres_url")
        request.getfixturevalue("postgres_store")  # empties the tables
        local = Memory(store=PostgresStore(url, min_size=1, max_size=2), embedder=FakeEmbedder(64))
        served = Memory(store=PostgresStore(url, min_size=1, max_size=4), embedder=FakeEmbedder(64))
        keys = KeyStore(tmp_path / "remote" / "keys.db")
        h = Harness(create_app(served, keys), served, keys, tmp_path / "remote" / "keys.db")
    with running(h.app) as url, EngramClient(url, h.key("u1")) as remote:
        yield local, remote
    h.close()
    local.close()


def test_memory_and_client_answer_alike(both: tuple[MemoryAPI, MemoryAPI], tmp_path: Path) -> None:
    local, remote = both
    assert isinstance(local, MemoryAPI) and isinstance(remote, MemoryAPI)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    here = Names()(script(local, tmp_path / "a"))
    there = Names()(script(remote, tmp_path / "b"))
    for step, (mine, theirs) in enumerate(zip(here, there, strict=True)):
        assert mine == theirs, f"step {step} differs"
