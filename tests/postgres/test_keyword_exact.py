"""PostgreSQL's keyword search is the exhaustive BM25 of each user's own texts, as SQLite's is
(tests/test_keyword_exact.py: the same corpus, reference model and checks), through this store's
writes, another store's writes and filters; access counts do not make it reload."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from engram.model import Filters
from engram.stores.postgres import keyword
from engram.stores.postgres.keyword_scan import scan_hits
from engram.stores.postgres.store import PostgresStore
from engram.text import query_terms
from tests.test_keyword_exact import (
    COMMON,
    FILTERS,
    MIDDLE,
    RARE,
    USERS,
    Model,
    _check,
    _record,
    _vectors,
    another_store_adds_and_deletes,
)
from tests.test_keyword_exact import test_stays_exact_through_this_stores_writes as stays_exact_through_writes

pytestmark = pytest.mark.postgres

World = tuple[Any, Model, random.Random]


@pytest.fixture(params=["inline", "background", "waiting"])
def world(request: pytest.FixtureRequest, postgres_store: Any, monkeypatch: pytest.MonkeyPatch) -> World:
    """A user above the old 2,000-postings budget for a common word ("big": ~1,100 rows hold one
    of COMMON), and smaller ones; postings loaded by the first search, or (every user "large") on
    a thread of their own while searches read from SQL or wait for the load."""
    if request.param != "inline":
        postgres_store.keyword_build_inline = 0
    if request.param == "waiting":
        monkeypatch.setattr(keyword, "SCAN_LIMIT", 0)
    rnd = random.Random(5)
    model = Model()
    for user, size in (("big", 1500), ("mid", 300), ("small", 12), ("tiny", 1)):
        records = [_record(rnd, user) for _ in range(size)]
        postgres_store.put_many(records, _vectors(size))
        model.put(records)
    return postgres_store, model, rnd


@pytest.fixture
def other(postgres_url: str) -> Iterator[PostgresStore]:
    """Another process's store: a cache of its own over the same database."""
    store = PostgresStore(postgres_url, min_size=1, max_size=2)
    yield store
    store.close()


WORDS = (*COMMON, *RARE, *MIDDLE, "refund", "priya", "dana", "diet", "absentword")


def _loaded(store: Any, user: str) -> Any:
    """The user's postings, once loaded (a large user's on a thread of their own)."""
    store.keyword_search(user, "coffee", 1, Filters())
    for _ in range(1000):
        held = store._keywords.get(user)
        if held is not None:
            return held
        time.sleep(0.01)
    raise AssertionError(f"{user}'s postings were never loaded")


def test_equals_exhaustive_bm25_per_user(world: World) -> None:
    store, model, rnd = world
    assert _check(store, model, rnd, USERS, queries=150) > 500


def test_stays_exact_through_this_stores_writes(world: World) -> None:
    """SQLite's test of adds (past a merge), replaces, deletes and forget_user; the index held
    before them is the one that answers after."""
    store = world[0]
    held = _loaded(store, "big")
    stays_exact_through_writes(world)
    assert store._keywords.get("big") is held  # never loaded again


def test_sees_another_processs_writes(world: World, other: PostgresStore) -> None:
    store, model, rnd = world
    another_store_adds_and_deletes(store, other, model, rnd)
    edited = replace(next(iter(model.users["big"].values())), content="zanzibar zanzibar quokka")
    other.replace(edited, None)
    model.put([edited])
    _check(store, model, rnd, ["big"], queries=30)
    assert [h[0] for h in store.keyword_search("big", "zanzibar quokka", 1, Filters(statuses=()))] == [edited.id]
    other.forget_user("small")
    model.users.pop("small")
    _check(store, model, rnd, [*USERS, "newcomer"], queries=60)


def test_a_write_here_after_one_elsewhere_is_not_taken_for_current(world: World, other: PostgresStore) -> None:
    """The held index moves with this store's write only if it was current before it."""
    store, model, rnd = world
    _check(store, model, rnd, ["big"])
    theirs = [_record(rnd, "big") for _ in range(5)]
    other.put_many(theirs, _vectors(5))
    mine = [_record(rnd, "big") for _ in range(5)]
    store.put_many(mine, _vectors(5))
    model.put(theirs + mine)
    _check(store, model, rnd, ["big"], queries=60)


def test_access_counts_and_other_users_change_nothing(world: World, other: PostgresStore) -> None:
    store, _, rnd = world
    before = {q: store.keyword_search("small", q, 10, Filters()) for q in ("coffee order", "zanzibar invoice")}
    held = _loaded(store, "big")
    hits = [h[0] for h in store.keyword_search("big", "coffee order", 10, Filters())]
    other.record_access("big", hits, datetime(2025, 4, 1, tzinfo=UTC))  # as every retrieval does
    flood = [_record(rnd, "mid") for _ in range(300)]
    other.put_many(flood, _vectors(len(flood)))
    store.keyword_search("big", "coffee", 10, Filters())
    assert store._keywords.get("big") is held
    assert {q: store.keyword_search("small", q, 10, Filters()) for q in before} == before


def test_the_sql_path_equals_the_postings_bit_for_bit(world: World) -> None:
    """What a search reads from SQL while a user's postings load is what they give, a term
    repeated past the 256 positions a tsvector keeps included."""
    store, _, rnd = world
    flood = replace(_record(rnd, "mid"), content="refund " * 300 + "walrus", status="active")
    store.put_many([flood], _vectors(1))
    store.keyword_build_inline = 10**9  # from here on, every search uses the postings
    searches = [("mid", "refund walrus", Filters())] + [
        (rnd.choice(USERS[:3]), " ".join(rnd.sample(WORDS, rnd.randint(1, 4))), rnd.choice(FILTERS)) for _ in range(60)
    ]
    assert store.keyword_search("mid", "refund", 1, Filters())[0][0] == flood.id
    compared = 0
    for user, text, f in searches:
        from_postings = store.keyword_search(user, text, 20, f)
        with store._tx() as conn:
            assert scan_hits(conn, user, query_terms(text), 20, f, 10**9) == from_postings
        compared += len(from_postings)
    assert compared > 300
