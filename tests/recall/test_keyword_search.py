"""Seed 002 keyword search: match reasons, match modes, ranking, the cache and enrich_context."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engram import Memory
from engram import keyword_search as ks
from engram.errors import ValidationError
from engram.ext import Embedder
from engram.keyword_search import (
    KeywordResult,
    cache_stats,
    clear_cache,
    enrich_context,
    invalidate,
    relevance,
    search_keywords,
    search_with_cache,
)
from engram.model import MemoryRecord

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)
U = "u1"


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=embedder) as m:
        yield m


def add(memory: Memory, content: str, *, days: float = 1.0, user: str = U, **fields: Any) -> MemoryRecord:
    return memory.add(content, user_id=user, created_at=NOW - timedelta(days=days), **fields)


def ids(results: list[KeywordResult]) -> list[str]:
    return [r.record.id for r in results]


def test_match_reasons_name_keyword_and_field(memory: Memory) -> None:
    record = add(memory, "Acme raised a billing dispute", kind="fact", subject="Acme", predicate="disputes",
                 object="invoice 42", tags=["billing", "urgent"], metadata={"customer": {"name": "Acme Corp"}})
    add(memory, "Lunch was good")
    [result] = search_keywords(memory, ["ACME", "billing", "missing"], user_id=U, now=NOW)
    assert result.record.id == record.id
    assert result.match_reasons == (
        "acme in content", "acme in subject", "acme in metadata.customer.name", "billing in content", "billing in tags",
    )


def test_procedure_trigger_and_action_are_searched(memory: Memory) -> None:
    record = add(memory, "How to rotate keys", kind="procedure", trigger="when a key leaks",
                 action="revoke and reissue")
    [result] = search_keywords(memory, ["leak", "reissue"], user_id=U, now=NOW)
    assert result.record.id == record.id
    assert result.match_reasons == ("leak in trigger", "reissue in action")


def test_only_matching_memories_are_returned(memory: Memory) -> None:
    add(memory, "Acme prefers NET30")
    add(memory, "Globex prefers NET60")
    assert [r.record.content for r in search_keywords(memory, ["acme"], user_id=U)] == ["Acme prefers NET30"]
    assert search_keywords(memory, ["initech"], user_id=U) == []
    # No keywords filter nothing (the contract filters by keyword only when some are given).
    assert len(search_keywords(memory, [], user_id=U)) == 2
    assert len(search_keywords(memory, ["  "], user_id=U)) == 2


def test_substring_versus_exact(memory: Memory) -> None:
    acme = add(memory, "Acme prefers NET30 payment terms", tags=["billing-team"])
    add(memory, "Acmeville is a town")
    assert len(search_keywords(memory, ["acm"], user_id=U)) == 2
    assert search_keywords(memory, ["acm"], user_id=U, match_mode="exact") == []
    assert ids(search_keywords(memory, ["acme"], user_id=U, match_mode="exact")) == [acme.id]
    assert ids(search_keywords(memory, ["payment terms"], user_id=U, match_mode="exact")) == [acme.id]
    assert search_keywords(memory, ["terms payment"], user_id=U, match_mode="exact") == []
    [tagged] = search_keywords(memory, ["billing"], user_id=U, match_mode="exact")
    assert tagged.match_reasons == ("billing in tags",)
    with pytest.raises(ValidationError):
        search_keywords(memory, ["acme"], user_id=U, match_mode="fuzzy")


def test_a_bare_string_is_whitespace_separated_keywords(memory: Memory) -> None:
    add(memory, "Acme billing")
    [result] = search_keywords(memory, "acme billing", user_id=U)
    assert result.match_reasons == ("acme in content", "billing in content")


def test_relevance_weights_follow_the_seed() -> None:
    created = NOW - timedelta(days=30)
    record = MemoryRecord(id="01A", user_id=U, content="x", kind="message", created_at=created, recorded_at=created,
                          content_hash="h", importance=0.5)
    expected = 0.4 * 0.5 + 0.2 * math.exp(-1) + 0.2 * 0.5 + 0.2 * 0.5
    assert relevance(record, 1, 2, now=NOW) == pytest.approx(expected)
    assert relevance(record, 1, 2, now=NOW, recency_boost=False) == pytest.approx(expected - 0.2 * math.exp(-1))
    assert relevance(record, 1, 2, now=NOW, kind="message") == pytest.approx(expected + 0.2 * 0.5)
    fact = MemoryRecord(id="01B", user_id=U, content="x", kind="fact", created_at=NOW, recorded_at=NOW,
                        content_hash="h", importance=1.0)
    assert relevance(fact, 2, 2, now=NOW) == pytest.approx(1.0)


def test_ranking_and_filters(memory: Memory) -> None:
    both = add(memory, "acme billing", importance=0.5, days=0)
    one_recent = add(memory, "acme only", importance=0.5, days=0)
    important = add(memory, "acme only too", importance=1.0, days=10, kind="fact")
    results = search_keywords(memory, ["acme", "billing"], user_id=U, now=NOW)
    assert ids(results)[0] == both.id
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)
    assert ids(search_keywords(memory, ["acme"], user_id=U, min_importance=0.9, now=NOW)) == [important.id]
    assert ids(search_keywords(memory, ["acme"], user_id=U, kind="fact", now=NOW)) == [important.id]
    assert len(search_keywords(memory, ["acme"], user_id=U, limit=2, now=NOW)) == 2
    flat = search_keywords(memory, ["acme"], user_id=U, recency_boost=False, now=NOW)
    assert ids(flat)[0] == important.id and one_recent.id in ids(flat)
    for bad in ({"limit": 0}, {"min_importance": 2.0}, {"kind": "semantic"}):
        with pytest.raises(ValidationError):
            search_keywords(memory, ["acme"], user_id=U, **bad)


def test_equal_scores_tie_by_id(memory: Memory) -> None:
    records = memory.add_many([
        {"id": name, "content": "same acme text", "user_id": U, "created_at": NOW} for name in ("m-c", "m-a", "m-b")
    ])
    assert len(records) == 3
    assert ids(search_keywords(memory, ["acme"], user_id=U, now=NOW)) == ["m-a", "m-b", "m-c"]


def test_statuses_and_users_are_respected(memory: Memory) -> None:
    mine = add(memory, "acme active")
    add(memory, "acme archived", status="archived")
    add(memory, "acme superseded", status="superseded")
    add(memory, "acme of someone else", user="u2")
    assert ids(search_keywords(memory, ["acme"], user_id=U)) == [mine.id]
    with pytest.raises(ValidationError):
        search_keywords(memory, ["acme"], user_id=None)  # type: ignore[arg-type]


def _old_matches_beyond_a_scan_of_two(memory: Memory, monkeypatch: pytest.MonkeyPatch, word: str) -> set[str]:
    """An old memory with ``word`` in its content and one tagged ``word``, behind four newer notes,
    with the scan of short keywords bounded at the newest two."""
    old = {add(memory, f"the {word} escaped", days=100).id, add(memory, "an old tagged note", days=90, tags=[word]).id}
    for i in range(4):
        add(memory, f"recent note {i}", days=i)
    monkeypatch.setattr(ks, "SCAN_LIMIT", 2)
    monkeypatch.setattr(ks, "SCAN_PAGE", 2)
    return old


def test_no_memory_is_beyond_a_row_count(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    # The store's substring index lists every match: a substring or a tag finds a memory however
    # old, whatever the scan bound of short keywords (the 2,000-row scan before left both out).
    old = _old_matches_beyond_a_scan_of_two(memory, monkeypatch, "zebra")
    assert set(ids(search_keywords(memory, ["zebr"], user_id=U))) == old
    assert set(ids(search_keywords(memory, ["zebra"], user_id=U))) == old
    assert len(search_keywords(memory, ["note"], user_id=U, limit=5)) == 5


def test_short_keywords_keep_the_scan_bound(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Under three characters there is no trigram to look up: the keyword index's whole tokens over
    # all memories, and substrings, tags and metadata in the newest SCAN_LIMIT only.
    old = _old_matches_beyond_a_scan_of_two(memory, monkeypatch, "ox")
    zebras = add(memory, "a zebrafish swam", days=95)  # "zebra" is no whole token of it
    [in_content] = [i for i in old if memory.get(i, user_id=U).content == "the ox escaped"]
    assert ids(search_keywords(memory, ["ox"], user_id=U)) == [in_content]
    assert search_keywords(memory, ["x"], user_id=U) == []
    assert ids(search_keywords(memory, ["zebra"], user_id=U)) == [zebras.id]
    assert search_keywords(memory, ["x", "zebra"], user_id=U) == []  # one short keyword: the whole search bounded
    monkeypatch.setattr(ks, "SCAN_LIMIT", 2000)
    assert set(ids(search_keywords(memory, ["x"], user_id=U))) == old


def test_the_walk_stops_once_nothing_older_can_rank(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    best = [add(memory, f"acme fact {i}", kind="fact", importance=1.0, days=0) for i in range(2)]
    for i in range(6):
        add(memory, f"acme note {i}", days=400 + i)
    monkeypatch.setattr(ks, "SCAN_PAGE", 2)
    reads: list[int] = []
    real = memory.store.substring_search

    def counted(user_id: str, terms: Any, n: int, filters: Any) -> Any:
        reads.append(n)
        return real(user_id, terms, n, filters)

    monkeypatch.setattr(memory.store, "substring_search", counted)
    found = search_keywords(memory, ["acme"], user_id=U, limit=2, now=NOW)
    assert set(ids(found)) == {r.id for r in best}
    assert reads == [2, 8]  # the year-old memories could not outscore two fresh important facts
    reads.clear()
    assert len(search_keywords(memory, ["acme"], user_id=U, limit=3, now=NOW)) == 3
    assert reads == [2, 8, 32]  # the third best is old: the walk read on until the list ended


def test_the_scan_of_short_keywords_stops_at_its_bound(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(8):
        add(memory, f"ox note {i}", days=400 + i)
    monkeypatch.setattr(ks, "SCAN_PAGE", 2)
    monkeypatch.setattr(ks, "SCAN_LIMIT", 4)
    pages: list[tuple[int, int]] = []
    real = memory.store.list

    def counted(user_id: str, filters: Any, *, limit: int, offset: int) -> Any:
        pages.append((offset, limit))
        return real(user_id, filters, limit=limit, offset=offset)

    monkeypatch.setattr(memory.store, "list", counted)
    assert len(search_keywords(memory, ["x"], user_id=U, limit=3, now=NOW)) == 3
    assert pages == [(0, 2), (2, 2)]  # listed a page at a time, each memory once, no further than the bound


# -- cache ----------------------------------------------------------------------------------------------
def test_cache_hits_and_stats(memory: Memory) -> None:
    add(memory, "acme billing")
    first = search_with_cache(memory, ["acme"], user_id=U)
    second = search_with_cache(memory, ["acme"], user_id=U)
    assert first == second and len(first) == 1
    stats = cache_stats(memory)
    assert stats["hits"] == 1 and stats["misses"] == 1 and stats["size"] == 1 and stats["max_entries"] == 100
    search_with_cache(memory, ["ACME"], user_id=U)  # the same query, normalized
    assert cache_stats(memory)["hits"] == 2
    search_with_cache(memory, ["acme"], user_id=U, match_mode="exact")
    assert cache_stats(memory)["size"] == 2


def test_cache_ttl_expires(memory: Memory) -> None:
    add(memory, "acme billing")
    search_with_cache(memory, ["acme"], user_id=U, cache_ttl=0.05)
    time.sleep(0.1)
    search_with_cache(memory, ["acme"], user_id=U, cache_ttl=0.05)
    stats = cache_stats(memory)
    assert stats["hits"] == 0 and stats["expirations"] == 1
    search_with_cache(memory, ["acme"], user_id=U, cache_ttl=0)
    assert cache_stats(memory)["misses"] == 2  # ttl 0 bypasses the cache entirely
    with pytest.raises(ValidationError):
        search_with_cache(memory, ["acme"], user_id=U, cache_ttl=-1)


def test_cache_holds_at_most_100_entries(memory: Memory) -> None:
    add(memory, "acme billing")
    for i in range(105):
        search_with_cache(memory, [f"k{i}"], user_id=U)
    stats = cache_stats(memory)
    assert stats["size"] == 100 and stats["evictions"] == 5


def test_writes_invalidate_the_cache(memory: Memory) -> None:
    add(memory, "acme one")
    assert len(search_with_cache(memory, ["acme"], user_id=U)) == 1
    add(memory, "acme two")  # Memory bumps the user's write generation, which is in the key
    assert len(search_with_cache(memory, ["acme"], user_id=U)) == 2
    search_with_cache(memory, ["acme"], user_id="u2")
    hits_before = cache_stats(memory)["hits"]
    invalidate(memory, U)
    search_with_cache(memory, ["acme"], user_id=U)
    search_with_cache(memory, ["acme"], user_id="u2")
    assert cache_stats(memory)["hits"] == hits_before + 1  # only u2's entry survived


def test_clear_cache_and_per_memory_caches(memory: Memory, tmp_path: Path, embedder: Embedder) -> None:
    add(memory, "acme billing")
    search_with_cache(memory, ["acme"], user_id=U)
    with Memory(tmp_path / "other.db", embedder=embedder) as other:
        assert search_with_cache(other, ["acme"], user_id=U) == []
        assert cache_stats(other)["size"] == 1
    clear_cache(memory)
    assert cache_stats(memory)["size"] == 0
    assert len(search_with_cache(memory, ["acme"], user_id=U)) == 1


# -- enrich_context --------------------------------------------------------------------------------------
def test_enrich_context(memory: Memory) -> None:
    for text in ("Acme prefers NET30 payment terms", "Acme billing contact is Dana", "Acme renewed in March"):
        add(memory, text, kind="fact")
    add(memory, "Unrelated lunch note")
    context = enrich_context(memory, "What do we know about Acme?", user_id=U, now=NOW)
    assert set(context) == {"memories", "summary", "count", "last_retrieved"}
    assert context["count"] == 3 and len(context["memories"]) == 3
    assert context["summary"].startswith("Found 3 related memories:\n- [fact] Acme")
    assert context["last_retrieved"] == NOW
    assert len(context["summary"]) <= 1000 * 4
    assert context["memories"][0]["match_reasons"] == ["acme in content"]


def test_enrich_context_respects_the_token_budget(memory: Memory) -> None:
    for i in range(5):
        add(memory, f"Acme fact number {i}: " + "details " * 40, kind="fact")
    context = enrich_context(memory, ["acme"], user_id=U, max_tokens=150, now=NOW)
    assert len(context["summary"]) <= 600
    assert context["count"] == 2  # one line whole, the next cut to what is left
    assert [m["truncated"] for m in context["memories"]] == [False, True]
    assert context["summary"].endswith("…")
    assert context["summary"].startswith(f"Found {context['count']} related memor")
    tiny = enrich_context(memory, ["acme"], user_id=U, max_tokens=2, now=NOW)
    assert tiny["count"] == 0 and len(tiny["summary"]) <= 8


def test_enrich_context_with_nothing_found(memory: Memory) -> None:
    add(memory, "Acme prefers NET30")
    context = enrich_context(memory, "Globex", user_id=U, now=NOW)
    assert context == {"memories": [], "summary": "No related memories found.", "count": 0, "last_retrieved": NOW}
    with pytest.raises(ValidationError):
        enrich_context(memory, "Acme", user_id=U, max_tokens=0)


def test_enrich_context_filters_and_groups_by_type_or_time(memory: Memory) -> None:
    add(memory, "Acme prefers NET30 payment terms", kind="fact", days=5, importance=0.9)
    add(memory, "Acme called about the late delivery", kind="episode", days=1, importance=0.4)
    add(memory, "Acme billing contact is Dana", kind="fact", days=3, importance=0.8)
    add(memory, "When Acme orders: confirm the roast date", kind="procedure", days=2, importance=0.8)

    def kinds(context: dict[str, Any]) -> list[str]:
        return [m["kind"] for m in context["memories"]]

    best = enrich_context(memory, ["acme"], user_id=U, now=NOW)
    grouped = enrich_context(memory, ["acme"], user_id=U, now=NOW, order="type")
    assert sorted(kinds(grouped)) == sorted(kinds(best))
    # Each kind's memories together, kinds in the order of their best memory.
    seen = list(dict.fromkeys(kinds(grouped)))
    assert seen == list(dict.fromkeys(kinds(best)))
    assert kinds(grouped) == [k for k in seen for _ in range(kinds(grouped).count(k))]  # each kind together
    assert [line.split("]")[0] for line in grouped["summary"].splitlines()[1:]] == [f"- [{k}" for k in kinds(grouped)]
    oldest = enrich_context(memory, ["acme"], user_id=U, now=NOW, order="chronological")
    assert [m["created_at"] for m in oldest["memories"]] == sorted(m["created_at"] for m in best["memories"])
    facts = enrich_context(memory, ["acme"], user_id=U, now=NOW, kind="fact", min_importance=0.85)
    assert [m["content"] for m in facts["memories"]] == ["Acme prefers NET30 payment terms"]
    with pytest.raises(ValidationError) as error:
        enrich_context(memory, ["acme"], user_id=U, order="sideways")
    assert error.value.field == "order"
