"""What the specifications promise (issue 43), each test named after the behaviour it checks, on
every backend where the behaviour touches a store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import engram.retrieve as retrieve_module
from engram import Memory
from engram.config import RetrievalConfig


class _Clock:
    """The cache's monotonic clock and the pipeline's wall clock, moved together by a test."""

    def __init__(self, wall: datetime) -> None:
        self.wall = wall
        self.mono = 1000.0

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds

    def __call__(self) -> float:
        return self.mono


@pytest.fixture
def clock(each_backend: Memory, monkeypatch: pytest.MonkeyPatch) -> _Clock:
    made = _Clock(datetime(2026, 3, 9, 23, 59, 50, tzinfo=UTC))

    class _Now(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return made.wall if tz is None else made.wall.astimezone(tz)

    monkeypatch.setattr(retrieve_module, "datetime", _Now)
    monkeypatch.setattr(each_backend.caches.retrievals, "_clock", made)
    return made


# -- 1. fact wording -----------------------------------------------------------------------------------


def test_a_bare_fact_triple_is_worded_with_the_specification_templates(each_backend: Memory) -> None:
    fact = each_backend.add(None, user_id="u", kind="fact", subject="Acme Corporation",
                            predicate="has_property", object="industry: technology")
    assert fact.content == "Acme Corporation has industry: technology"
    other = each_backend.add(None, user_id="u", kind="fact", subject="Acme", predicate="ships_via", object="UPS")
    assert other.content == "Acme ships via UPS"
    assert each_backend.get(fact.id, user_id="u").content == "Acme Corporation has industry: technology"


# -- 2. the retrieval cache lasts its TTL ----------------------------------------------------------------


def test_a_cached_retrieval_lasts_its_ttl_not_the_clock_minute(each_backend: Memory, clock: _Clock) -> None:
    each_backend.add("Acme prefers NET30 payment terms", user_id="u", kind="fact")
    config = RetrievalConfig(cache_ttl=600)
    first = each_backend.retrieve("How does Acme pay?", user_id="u", config=config)
    assert not first.metadata.cached
    clock.advance(15)  # across midnight, and so across a minute boundary
    assert each_backend.retrieve("How does Acme pay?", user_id="u", config=config).metadata.cached
    clock.advance(580)  # 595 s after the first: still within the TTL
    assert each_backend.retrieve("How does Acme pay?", user_id="u", config=config).metadata.cached
    clock.advance(10)
    assert not each_backend.retrieve("How does Acme pay?", user_id="u", config=config).metadata.cached


def test_a_relative_query_is_cached_by_the_range_it_resolves_to(each_backend: Memory, clock: _Clock) -> None:
    each_backend.add("Acme ordered 40 kg of espresso", user_id="u", kind="episode",
                     created_at="2026-03-09T10:00:00+00:00")
    config = RetrievalConfig(cache_ttl=600)
    before = each_backend.retrieve("What did Acme order yesterday?", user_id="u", config=config)
    clock.advance(15)  # now it is the next day: "yesterday" is another range
    after = each_backend.retrieve("What did Acme order yesterday?", user_id="u", config=config)
    assert not after.metadata.cached
    assert before.metadata.time_range is not None and after.metadata.time_range is not None
    assert after.metadata.time_range.start == before.metadata.time_range.start + timedelta(days=1)
    clock.advance(15)  # the same day again: the same range, served from the cache
    assert each_backend.retrieve("What did Acme order yesterday?", user_id="u", config=config).metadata.cached
