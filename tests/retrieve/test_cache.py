from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.config import RetrievalConfig
from engram.errors import ValidationError
from engram.model import Filters
from engram.retrieve.cache import RetrievalCache, approx_size, make_key, now_bucket, retrieval_bytes
from engram.retrieve.types import Retrieval

NOW = datetime(2024, 2, 15, 10, 30, 12, tzinfo=UTC)


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_ttl_expiry_with_fake_clock() -> None:
    clock = FakeClock()
    cache: RetrievalCache[str] = RetrievalCache(ttl=60.0, clock=clock)
    assert cache.put("u1", "k", "v")
    clock.t += 59.9
    assert cache.get("u1", "k") == "v"
    clock.t += 0.1
    assert cache.get("u1", "k") is None
    assert cache.stats()["size"] == 0
    assert cache.stats()["expirations"] == 1


def test_per_put_ttl_overrides_default_and_zero_disables() -> None:
    clock = FakeClock()
    cache: RetrievalCache[int] = RetrievalCache(ttl=60.0, clock=clock)
    cache.put("u1", "short", 1, ttl=5)
    cache.put("u1", "long", 2)
    assert cache.put("u1", "never", 3, ttl=0) is False
    clock.t += 10
    assert cache.get("u1", "short") is None
    assert cache.get("u1", "long") == 2
    assert cache.get("u1", "never") is None


def test_lru_eviction_keeps_recently_used() -> None:
    cache: RetrievalCache[int] = RetrievalCache(max_entries=2, clock=FakeClock())
    cache.put("u1", "a", 1)
    cache.put("u1", "b", 2)
    assert cache.get("u1", "a") == 1  # a is now the most recently used
    cache.put("u1", "c", 3)
    assert cache.get("u1", "b") is None
    assert cache.get("u1", "a") == 1
    assert cache.get("u1", "c") == 3
    stats = cache.stats()
    assert stats["evictions"] == 1
    assert stats["size"] == 2


def test_put_same_key_replaces_without_eviction() -> None:
    cache: RetrievalCache[int] = RetrievalCache(max_entries=2, clock=FakeClock())
    cache.put("u1", "a", 1)
    cache.put("u1", "a", 2)
    cache.put("u1", "b", 3)
    assert cache.get("u1", "a") == 2
    assert cache.stats()["evictions"] == 0


def test_invalidate_user_leaves_other_users() -> None:
    cache: RetrievalCache[str] = RetrievalCache(clock=FakeClock())
    cache.put("alice", "k", "a")
    cache.put("bob", "k", "b")
    cache.invalidate_user("alice")
    assert cache.get("alice", "k") is None
    assert cache.get("bob", "k") == "b"
    # New entries after the invalidation are served normally.
    cache.put("alice", "k", "a2")
    assert cache.get("alice", "k") == "a2"


def test_put_with_generation_from_before_invalidation_is_dropped() -> None:
    cache: RetrievalCache[str] = RetrievalCache(clock=FakeClock())
    generation = cache.generation("u1")
    cache.invalidate_user("u1")  # a write lands while the retrieval runs
    assert cache.put("u1", "k", "stale", generation=generation) is False
    assert cache.get("u1", "k") is None
    assert cache.put("u1", "k", "fresh", generation=cache.generation("u1")) is True
    assert cache.get("u1", "k") == "fresh"


def test_users_do_not_share_keys() -> None:
    cache: RetrievalCache[str] = RetrievalCache(clock=FakeClock())
    cache.put("alice", "same", "a")
    assert cache.get("bob", "same") is None


def test_hit_rate_stats() -> None:
    cache: RetrievalCache[int] = RetrievalCache(clock=FakeClock())
    assert cache.stats()["hit_rate"] == 0.0
    cache.put("u", "k", 1)
    cache.get("u", "k")
    cache.get("u", "k")
    cache.get("u", "k")
    cache.get("u", "missing")
    stats = cache.stats()
    assert (stats["hits"], stats["misses"]) == (3, 1)
    assert stats["hit_rate"] == pytest.approx(0.75)


def test_clear_empties_and_keeps_counters() -> None:
    cache: RetrievalCache[int] = RetrievalCache(clock=FakeClock())
    cache.put("u", "k", 1)
    cache.get("u", "k")
    cache.clear()
    assert len(cache) == 0
    assert cache.get("u", "k") is None
    assert cache.stats()["hits"] == 1


def test_invalid_construction() -> None:
    with pytest.raises(ValidationError):
        RetrievalCache(max_entries=-1)
    with pytest.raises(ValidationError):
        RetrievalCache(ttl=float("nan"))
    with pytest.raises(ValidationError):
        RetrievalCache[int]().put("u", "k", 1, ttl=-1)


def test_zero_capacity_stores_nothing() -> None:
    cache: RetrievalCache[int] = RetrievalCache(max_entries=0)
    assert cache.put("u", "k", 1) is False
    assert cache.get("u", "k") is None


def test_concurrent_use_keeps_counts_consistent() -> None:
    cache: RetrievalCache[int] = RetrievalCache(max_entries=50)

    def work(n: int) -> None:
        for i in range(500):
            cache.put(f"u{n % 3}", str(i % 80), i)
            cache.get(f"u{n % 3}", str((i * 7) % 80))
            if i % 100 == 0:
                cache.invalidate_user(f"u{n % 3}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = cache.stats()
    assert stats["hits"] + stats["misses"] == 8 * 500
    assert stats["size"] <= 50


# -- keys ----------------------------------------------------------------------------------------


def test_make_key_stable_and_order_independent_for_mappings() -> None:
    a = make_key("u1", "what did Acme order?", {"b": 1, "a": [1, 2]}, now_bucket(NOW))
    b = make_key("u1", "what did Acme order?", {"a": (1, 2), "b": 1}, now_bucket(NOW))
    assert a == b
    assert len(a) == 64
    assert int(a, 16) >= 0
    # A literal digest pins the encoding so keys stay stable across releases and processes.
    assert make_key("x", 1) == hashlib.sha256(b'["x",1]').hexdigest()
    assert (
        make_key({"b": NOW, "a": (1,)})
        == hashlib.sha256(b'[{"a":[1],"b":"2024-02-15T10:30:12+00:00"}]').hexdigest()
    )
    assert make_key() != make_key(None)


def test_make_key_distinguishes_values() -> None:
    assert make_key("a", 1) != make_key("a", "1")
    assert make_key(True) != make_key(1)
    assert make_key(["a", "b"]) != make_key(["b", "a"])
    assert make_key({"a": 1}) != make_key({"a": 2})
    assert make_key(NOW) != make_key(NOW + timedelta(microseconds=1))
    assert make_key(frozenset({"x", "y"})) == make_key(frozenset({"y", "x"}))


def test_make_key_dataclasses_use_every_field() -> None:
    # RetrievalConfig.to_dict() omits candidate_limit; the key must still see it.
    assert make_key(RetrievalConfig()) == make_key(RetrievalConfig())
    assert make_key(RetrievalConfig()) != make_key(RetrievalConfig(candidate_limit=10))
    assert make_key(Filters(tags_all=("a",))) != make_key(Filters(tags_any=("a",)))

    @dataclass(frozen=True)
    class Other:
        kinds: tuple[str, ...] | None = None

    assert make_key(Filters()) != make_key(Other())


def test_make_key_rejects_unkeyable_objects() -> None:
    with pytest.raises(ValidationError):
        make_key(object())


def test_now_bucket_groups_nearby_times() -> None:
    start = datetime(2024, 2, 15, 10, 30, 0, tzinfo=UTC)
    assert now_bucket(start) == now_bucket(start + timedelta(seconds=59, microseconds=999_999))
    assert now_bucket(start + timedelta(seconds=60)) == now_bucket(start) + 1
    assert now_bucket(start - timedelta(microseconds=1)) == now_bucket(start) - 1
    key = make_key("u1", "q", now_bucket(start))
    assert key == make_key("u1", "q", now_bucket(start + timedelta(seconds=30)))
    assert key != make_key("u1", "q", now_bucket(start + timedelta(seconds=61)))


def test_now_bucket_zone_and_naive() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert now_bucket(NOW) == now_bucket(NOW.astimezone(plus_two))
    assert now_bucket(NOW.replace(tzinfo=None)) == now_bucket(NOW)
    assert now_bucket(datetime(1970, 1, 1, 0, 2, tzinfo=UTC)) == 2
    assert now_bucket(datetime(1970, 1, 1, 1, tzinfo=UTC), seconds=3600) == 1
    with pytest.raises(ValidationError):
        now_bucket(NOW, 0)


@given(st.datetimes(timezones=st.just(UTC)), st.integers(min_value=1, max_value=86_400))
def test_now_bucket_contains_its_time(now: datetime, seconds: int) -> None:
    bucket = now_bucket(now, seconds)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert (
        epoch + timedelta(seconds=bucket * seconds) <= now < epoch + timedelta(seconds=(bucket + 1) * seconds)
    )


@given(st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5), st.none())))
def test_make_key_ignores_insertion_order(d: dict[str, object]) -> None:
    assert make_key(d) == make_key(dict(reversed(list(d.items()))))


# -- the cache is bounded by bytes, not only by entries --------------------------------------------


def test_cache_bounded_by_bytes_not_only_entries() -> None:
    cache: RetrievalCache[str] = RetrievalCache(max_entries=1000, max_bytes=10_000, clock=FakeClock())
    for i in range(10):
        assert cache.put("u1", f"k{i}", "x" * 3000 + str(i))
    stats = cache.stats()
    assert stats["bytes"] <= 10_000 and stats["max_bytes"] == 10_000
    assert stats["size"] == 3 and stats["evictions"] == 7
    assert cache.get("u1", "k9") is not None and cache.get("u1", "k0") is None
    # A value bigger than the whole cache is not stored (and evicts nothing).
    assert cache.put("u1", "huge", "y" * 20_000) is False
    assert cache.stats()["size"] == 3
    # Replacing a value accounts for the difference, and clear() empties the count.
    cache.put("u1", "k9", "small")
    assert cache.stats()["bytes"] < 7_000
    cache.clear()
    assert cache.stats()["bytes"] == 0


@pytest.mark.parametrize("sizeof", [approx_size, retrieval_bytes])
def test_cache_byte_bound_counts_a_retrievals_records(sizeof: Any) -> None:
    # A retrieval's records carry their full content (documents can be 200 KB): what the observed
    # ~4 MB per cached retrieval was made of, and what the estimate must see.
    from engram.model import MemoryRecord
    from engram.retrieve.types import MemoryEntry, Retrieval, RetrievalMetadata

    def retrieval(i: int) -> Retrieval:
        entries = []
        for j in range(5):
            rec = MemoryRecord(id=f"{i}-{j}", user_id="u1", content=f"{i} {j} " + "z" * 100_000, kind="document",
                               created_at=NOW, recorded_at=NOW, content_hash="h")
            entries.append(MemoryEntry(id=rec.id, content=rec.content[:40], score=0.5, timestamp="t",
                                       session_id=None, message_id=None, type="document", role=None,
                                       collection="u1", search_type="hybrid", original_length=100_000,
                                       was_redacted=False, record=rec))
        meta = RetrievalMetadata(query_time_ms=1.0, total_results=5, included_results=5, total_tokens=50,
                                 applied_filters=(), config={})
        return Retrieval(query="q", memories=tuple(entries), metadata=meta)

    assert RetrievalCache().max_bytes == 64 * 1024 * 1024
    cache: RetrievalCache[Retrieval] = RetrievalCache(max_bytes=2_000_000, clock=FakeClock(), sizeof=sizeof)
    for i in range(10):
        cache.put("u1", f"k{i}", retrieval(i))
    stats = cache.stats()
    assert 500_000 * stats["size"] <= stats["bytes"] <= 2_000_000
    assert stats["size"] == 3


def test_cache_rejects_bad_max_bytes() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(ValidationError):
            RetrievalCache(max_bytes=bad)  # type: ignore[arg-type]


def test_the_retrieval_estimate_is_close_to_the_walk_it_saves(tmp_path: Any) -> None:
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder

    with Memory(tmp_path / "size.db", embedder=FakeEmbedder(64)) as memory:
        for i in range(30):
            memory.add(f"Acme ordered {i} widgets; the invoice {i} is due in March " + "and more words " * (i % 7),
                       user_id="u1", metadata={"source": "crm", "n": i} if i % 3 == 0 else None)
        memory.add("A long document about widgets and invoices. " * 400, user_id="u1", kind="document")
        result = memory.retrieve("What did Acme order, and which invoice is due?", user_id="u1",
                                 config=RetrievalConfig(cache_ttl=0, min_score=0.0))
    assert len(result.memories) >= 5 and any(e.metadata for e in result.memories)
    assert 0.85 <= retrieval_bytes(result) / approx_size(result) <= 1.2
    # Each returned memory's bytes count: one more of them moves the estimate as much as the walk.
    fewer = Retrieval(query=result.query, memories=result.memories[:-1], metadata=result.metadata)
    walked = approx_size(result) - approx_size(fewer)
    assert 0.7 <= (retrieval_bytes(result) - retrieval_bytes(fewer)) / walked <= 1.4
