"""Features over a Context, the one cache layer, and what ``close`` stops."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engram import Limits, Memory
from engram.context import Context
from engram.embedders.fake import FakeEmbedder
from engram.errors import ConfigError, MemoryNotFound, ValidationError
from engram.ingest import truth, writer
from engram.ingest.files import ingest
from engram.keyword_search import search_keywords, search_with_cache
from engram.model import Filters
from engram.recall import recall
from engram.validate import choice, integer, number, seconds, unit, user_id

U = "u1"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "engram.db", embedder=FakeEmbedder()) as opened:
        yield opened


def test_features_take_a_context_or_anything_holding_one(memory: Memory) -> None:
    memory.add("Acme prefers NET30 payment terms", user_id=U, kind="fact")
    assert isinstance(memory.context, Context)
    by_context = [r.record.id for r in search_keywords(memory.context, ["acme"], user_id=U)]
    assert by_context == [r.record.id for r in search_keywords(memory, ["acme"], user_id=U)] != []
    assert recall(memory.context, "Acme payment", user_id=U).count == 1


def test_the_context_scopes_reads_to_the_user(memory: Memory) -> None:
    record = memory.add("Acme prefers NET30", user_id=U)
    assert memory.context.get(U, record.id) == record
    with pytest.raises(MemoryNotFound):
        memory.context.get("u2", record.id)
    with pytest.raises(ValidationError, match="user_id"):
        memory.context.user("")


def test_every_write_invalidates_every_cache_of_that_user_only(memory: Memory) -> None:
    record = memory.add("Acme prefers NET30", user_id=U)
    search_with_cache(memory, ["acme"], user_id=U)
    search_with_cache(memory, ["acme"], user_id=U)
    assert memory.caches.keywords.stats()["hits"] == 1
    before = {user: memory.caches.generation(user) for user in (U, "u2")}
    memory.link(record.id, memory.add("Acme pays late", user_id=U).id, "relates_to", user_id=U)
    assert memory.caches.generation(U) != before[U]
    assert memory.caches.generation("u2") == before["u2"]
    search_with_cache(memory, ["acme"], user_id=U)
    assert memory.caches.keywords.stats()["hits"] == 1  # the write made the cached answer unreachable


def test_retrieval_and_the_pipeline_share_the_cache_layer(memory: Memory) -> None:
    assert memory.pipeline.cache is memory.caches.retrievals
    assert memory.pipeline.entity_indexes is memory.caches.entity_indexes
    assert memory.pipeline.weights_by_strategy is memory.caches.weights


def test_close_stops_the_pipeline_workers(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "engram.db", embedder=FakeEmbedder())
    memory.close()
    with pytest.raises(RuntimeError, match="shutdown"):
        memory.pipeline.executor.submit(lambda: None)


def test_file_ingest_writes_through_the_write_path_and_links_every_passage(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.md").write_text("First paragraph about Acme. " * 80)
    checked_links: list[str] = []
    real_link = writer.link

    def counting_link(*args: object, **kwargs: object) -> object:
        checked_links.append(str(args[3]))
        return real_link(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "link", counting_link)
    report = ingest(memory, str(tmp_path / "a.md"), user_id=U)
    [result] = report.files
    assert result.chunks > 1
    links = memory.links(result.memory_id or "", user_id=U)
    assert sorted(link.from_id for link in links if link.type == "part_of") == sorted(
        r.id for r in memory.list(user_id=U, filters={"kinds": ["chunk"]})
    )
    assert checked_links == []  # passages are linked in the batch, not one checked link each


def test_checks_name_the_field_and_what_it_allows() -> None:
    assert integer("limit", 5, 1, 10) == 5
    for bad in (0, 11, True, 2.0, "5"):
        with pytest.raises(ValidationError, match=r"limit: must be an integer in \[1, 10\]"):
            integer("limit", bad, 1, 10)
    assert unit("w", 1) == 1.0
    for bad_unit in (1.5, float("nan"), float("inf"), -0.1):
        with pytest.raises(ValidationError, match=r"w: must be in \[0, 1\]"):
            unit("w", bad_unit)
    with pytest.raises(ConfigError, match=r"x: must be a number in \[0, 86400\], got str"):
        number("x", "1", 0, 86_400.0, ConfigError)
    with pytest.raises(ValidationError, match="mode: must be one of a, b; got 'c'"):
        choice("mode", "c", ("a", "b"))
    with pytest.raises(ValidationError, match="cache_ttl: must be a finite number of seconds"):
        seconds("cache_ttl", -1)
    with pytest.raises(ValidationError, match="user_id: must be a non-empty string"):
        user_id(None, Limits())


def test_version_lookups_read_every_page(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(truth, "PAGE", 2)
    for i in range(5):
        memory.add(f"note {i}", user_id=U, kind="fact")
    assert len(truth.list_all(memory.store, U, Filters(kinds=("fact",)))) == 5
