"""SQLite and PostgreSQL, fed the same random memories, give the same candidates.

Exact sources (time, recency, importance, access, entities, links, filters) and keyword search
(BM25 over every posting, with the user's own statistics, on both) must agree id for id and in
order. Vector search must agree on the top-k up to ties (scores within 1e-5).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.ingest.normalize import content_hash
from engram.model import KINDS, Filters, Link, MemoryRecord, new_id
from engram.stores.sqlite.store import SQLiteStore

pytestmark = pytest.mark.postgres

DIM = 16
USERS = ("alice", "bob", "carol")
VOCAB = (
    "invoice", "payment", "acme", "shipping", "delay", "garden", "lunch", "meeting", "sarah", "project",
    "deadline", "budget", "report", "coffee", "train", "berlin", "paris", "server", "outage", "deploy",
    "refund", "contract", "renewal", "holiday", "birthday", "gift", "doctor", "appointment",
)
TAGS = ("billing", "personal", "work", "travel", "health")
ENTITIES = ("customer:acme", "person:sarah", "city:berlin", "city:paris", "order:1", "order:2")
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _corpus(seed: int = 7, count: int = 300) -> tuple[list[MemoryRecord], np.ndarray]:
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    records = []
    for i in range(count):
        text = " ".join(rnd.choice(VOCAB) for _ in range(rnd.randint(3, 14)))
        text += rnd.choice(("", "", "", ". Due on Jan 20", ". Yesterday was busy", ". Away Feb 3 to Feb 9"))
        created = T0 + timedelta(hours=rnd.randint(0, 24 * 60), microseconds=rnd.randint(0, 999_999))
        records.append(MemoryRecord(
            id=new_id(), user_id=USERS[i % 3], content=text, kind=rnd.choice(KINDS[:5]),
            created_at=created, recorded_at=created, content_hash=content_hash(text),
            session_id=f"s{rnd.randint(0, 4)}", tags=tuple(rnd.sample(TAGS, rnd.randint(0, 2))),
            entities=tuple(rnd.sample(ENTITIES, rnd.randint(0, 3))), importance=round(rnd.random(), 3),
            status=rnd.choice(("active",) * 8 + ("archived", "superseded")),
            metadata={"src": rnd.choice(("chat", "mail")), "n": rnd.randint(0, 3)},
        ))
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return records, vectors


FILTERS = (
    Filters(),
    Filters(kinds=("fact", "message")),
    Filters(tags_all=("work",)),
    Filters(tags_any=("billing", "travel")),
    Filters(statuses=("active", "archived")),
    Filters(session_id="s1", metadata={"src": "chat"}),
    Filters(metadata={"n": 2}),
    Filters(created_after=T0 + timedelta(days=10), created_before=T0 + timedelta(days=40)),
)


@pytest.fixture
def pair(postgres_store: Any, tmp_path: Path) -> Iterator[tuple[SQLiteStore, Any, list[MemoryRecord]]]:
    sqlite = SQLiteStore(tmp_path / "c.db")
    records, vectors = _corpus()
    rnd = random.Random(3)
    links = []
    for user in USERS:
        mine = [r for r in records if r.user_id == user]
        for a, b in itertools.pairwise(mine[:41]):
            links.append((user, Link(a.id, b.id, rnd.choice(("related", "part_of")), round(rnd.random(), 2))))
    for store in (sqlite, postgres_store):
        store.put_many(records, vectors)
        for user, link in links:
            store.add_link(user, link)
        store.record_access("alice", [r.id for r in records[:30:3]], T0 + timedelta(days=70))
    yield sqlite, postgres_store, records
    sqlite.close()


def _same_up_to_ties(a: list[tuple[str, float]], b: list[tuple[str, float]], k: int) -> None:
    assert len(a) == len(b)
    for (ia, sa), (ib, sb) in zip(a, b, strict=True):
        assert sa == pytest.approx(sb, abs=1e-5)
        if ia != ib:  # a swap is fine only between (near-)equal scores
            assert dict(a).get(ib, -9) == pytest.approx(sb, abs=1e-5)


def test_vector_search_congruent(pair: tuple[SQLiteStore, Any, list[MemoryRecord]]) -> None:
    sqlite, pg, _ = pair
    rng = np.random.default_rng(11)
    for user in USERS:
        for f in FILTERS:
            q = rng.standard_normal(DIM).astype(np.float32)
            q /= np.linalg.norm(q)
            for k in (1, 10, 50):
                _same_up_to_ties(sqlite.vector_search(user, q, k, f), pg.vector_search(user, q, k, f), k)


def test_vector_search_hnsw_path(pair: tuple[SQLiteStore, Any, list[MemoryRecord]]) -> None:
    """The approximate path (forced by exact_limit=0): per-user filtered HNSW with iterative scans."""
    sqlite, pg, _ = pair
    pg.exact_limit = 0
    rng = np.random.default_rng(5)
    for user in USERS:
        for f in (Filters(), Filters(kinds=("fact",)), Filters(tags_any=("work",))):
            q = rng.standard_normal(DIM).astype(np.float32)
            q /= np.linalg.norm(q)
            exact = sqlite.vector_search(user, q, 10, f)
            approx = pg.vector_search(user, q, 10, f)
            assert len(approx) == len(exact)  # iterative scan: the user filter does not starve results
            # At this size ef_search covers the whole graph, so HNSW is exact in practice.
            _same_up_to_ties(exact, approx, 10)


def _ids(hits: list[tuple[str, float]]) -> list[str]:
    return [h[0] for h in hits]


def test_exact_sources_congruent(pair: tuple[SQLiteStore, Any, list[MemoryRecord]]) -> None:
    sqlite, pg, records = pair
    for user in USERS:
        mine = [r.id for r in records if r.user_id == user]
        for f in FILTERS:
            for name, args in (
                ("by_time_range", (T0 + timedelta(days=5), T0 + timedelta(days=25), 30, f)),
                ("by_entities", (["customer:acme", "city:paris", "order:2"], 40, f)),
                ("most_recent", (25, f)),
                ("most_important", (25, f)),
                ("most_accessed", (25, f)),
                ("most_recently_accessed", (25, f)),
            ):
                a, b = getattr(sqlite, name)(user, *args), getattr(pg, name)(user, *args)
                assert a == b, (name, user, f)
            for told in (False, True):
                days = (date(2024, 1, 15), date(2024, 2, 5), 30, f)
                a, b = sqlite.by_named_days(user, *days, told=told), pg.by_named_days(user, *days, told=told)
                assert a == b and (a or f.session_id or f.tags_all or f.metadata), (told, user, f)
            assert sqlite.list(user, f, limit=500) == pg.list(user, f, limit=500)
            assert sqlite.list(user, f, limit=7, offset=5) == pg.list(user, f, limit=7, offset=5)
        for types in (None, ["related"]):
            assert sqlite.by_links(user, mine[5:15], 20, types) == pg.by_links(user, mine[5:15], 20, types)
        assert sqlite.fetch(user, mine) == pg.fetch(user, mine)
        assert sqlite.count(user) == pg.count(user)
    assert sqlite.stats()["by_kind"] == pg.stats()["by_kind"]


def _same_hits(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    assert _ids(a) == _ids(b)
    for (_, sa), (_, sb) in zip(a, b, strict=True):
        assert sb == pytest.approx(sa, rel=1e-12, abs=1e-15)


def test_keyword_search_identical(pair: tuple[SQLiteStore, Any, list[MemoryRecord]]) -> None:
    """Both score every posting with BM25 over the user's own rows: the same hits in the same
    order with the same scores, under every filter."""
    sqlite, pg, _ = pair
    rnd = random.Random(13)
    compared = 0
    for user in USERS:
        for f in FILTERS:
            for _ in range(6):
                text = " ".join(rnd.sample(VOCAB, rnd.randint(1, 3)))
                for k in (10, 1000):
                    a = sqlite.keyword_search(user, text, k, f)
                    _same_hits(a, pg.keyword_search(user, text, k, f))
                    compared += len(a)
    assert compared > 1000


def test_keyword_search_identical_for_a_user_past_the_old_budget(postgres_store: Any, tmp_path: Path) -> None:
    """A user whose common words match far more rows than the 2,000 postings PostgreSQL once
    scored (its rarest terms first, then only the newest matches): still the same hits and scores,
    with the store's writes in between, and a word repeated past the 256 positions a tsvector keeps."""
    rnd = random.Random(17)
    records, vectors = _corpus(seed=17, count=3000)
    records = [replace(r, user_id="heavy") for r in records]
    text = " ".join(["refund"] * 300 + ["garden"])
    flood = replace(records[0], id=new_id(), content=text, content_hash=content_hash(text))
    sqlite = SQLiteStore(tmp_path / "heavy.db")
    try:
        for store in (sqlite, postgres_store):
            store.put_many([*records[:2500], flood], vectors[:2501])
        queries = [" ".join(rnd.sample(VOCAB, rnd.randint(1, 4))) for _ in range(25)] + ["refund garden"]

        def agree() -> None:
            for text in queries:
                f = rnd.choice(FILTERS)
                for k in (10, 200):
                    want = sqlite.keyword_search("heavy", text, k, f)
                    _same_hits(want, postgres_store.keyword_search("heavy", text, k, f))

        agree()
        for store in (sqlite, postgres_store):
            store.put_many(records[2500:], vectors[2500:])
            store.delete_many("heavy", [r.id for r in records[100:400]])
        agree()
        assert postgres_store.keyword_search("heavy", "refund", 1, Filters(statuses=()))[0][0] == flood.id
    finally:
        sqlite.close()


@pytest.mark.postgres
def test_keyword_search_finds_memories_written_after_a_cached_plan(postgres_store: Any) -> None:
    """The planner caches document frequencies; a term first seen absent must still find new rows."""

    def record(text: str) -> MemoryRecord:
        t = datetime(2024, 1, 1, tzinfo=UTC)
        return MemoryRecord(id=new_id(), user_id="u", content=text, kind="message", created_at=t, recorded_at=t,
                            content_hash=content_hash(text))

    vec = np.ones((1, 8), dtype=np.float32) / np.sqrt(8)
    postgres_store.put_many([record("alpha words")], vec)
    assert postgres_store.keyword_search("u", "zanzibar", 10, Filters()) == []
    fresh = record("a trip to zanzibar")
    postgres_store.put_many([fresh], vec)
    assert [h[0] for h in postgres_store.keyword_search("u", "zanzibar", 10, Filters())] == [fresh.id]


@pytest.mark.postgres
def test_keyword_scores_identical(pair: tuple[SQLiteStore, Any, list[MemoryRecord]]) -> None:
    """Both backends index the same stemmed terms and score BM25 with the user's own statistics."""
    sqlite, pg, _ = pair
    rnd = random.Random(29)
    compared = 0
    for user in USERS:
        for _ in range(15):
            text = " ".join(rnd.sample(VOCAB, rnd.randint(1, 3)))
            a = dict(sqlite.keyword_search(user, text, 1000, Filters()))
            b = dict(pg.keyword_search(user, text, 1000, Filters()))
            assert set(a) == set(b)
            for memory_id, score in a.items():
                assert b[memory_id] == pytest.approx(score, rel=1e-9, abs=1e-12)
            compared += len(a)
    assert compared > 100


@pytest.mark.postgres
def test_retrieve_ranks_identically_on_both_backends(postgres_store: Any, tmp_path: Path) -> None:
    """The whole pipeline, new signals included (stemmed keywords, extracted entities, time scope)."""
    from engram import Memory, RetrievalConfig
    from engram.embedders.fake import FakeEmbedder

    items = [
        {"id": f"m{i:02d}", "user_id": "u", "content": text, "role": role,
         "created_at": (T0 + timedelta(days=i)).isoformat()}
        for i, (text, role) in enumerate([
            ("Acme ordered 30 monitors for the new office", "user"),
            ("Initech cancelled their printer order", "user"),
            ("Has Globex paid INV-1187 yet?", "Bob"),
            ("Rush orders are stressful, last time it took a week", "Priya"),
            ("I think the Ledgerly trial went well", "Priya"),
            ("Acme's payment terms are NET45 now", "user"),
            ("Bob asked about the monitors order again", "Tom"),
            ("We shipped the docks to Globex", "user"),
            # A request reads this one's meaning from its standing sentence's own vector too.
            ("The office move went fine. From now on, send every invoice as a PDF. Thanks again.", "user"),
        ])
    ]
    queries = ["What did Acme order?", "What did Bob ask last week?", "What did Priya think of the trial?",
               "orders", "Globex invoice paid", "Write the invoice e-mail to Globex."]
    results = []
    for store in (SQLiteStore(tmp_path / "c.db"), postgres_store):
        with Memory(store=store, embedder=FakeEmbedder()) as memory:
            memory.add_entity("customer:acme", user_id="u", name="Acme Corporation", aliases=["Acme"])
            memory.add_many(items)
            assert set(memory.store.facets("u", ["m08"])) == {"m08"}
            now = T0 + timedelta(days=10)
            results.append([
                [(e.id, round(e.score, 9), tuple(sorted(e.reasons))) for e in memory.retrieve(
                    q, user_id="u", now=now, config=RetrievalConfig(top_k=8, min_score=0.0, cache_ttl=0)).memories]
                for q in queries
            ])
    assert results[0] == results[1]
    assert any(results[0])
    assert "m08" in [memory_id for memory_id, *_ in results[0][-1]]


def test_the_turns_next_to_a_message_are_the_same_on_both_backends(postgres_store: Any, tmp_path: Path) -> None:
    """Sessions and session-less streams (two agents, a note, a tool's output, turns stamped alike):
    the same neighbours, and the same ranking and reasons from them."""
    from engram import Memory, RetrievalConfig
    from engram.embedders.fake import FakeEmbedder

    rnd = random.Random(11)
    rows: list[dict[str, Any]] = []
    for i in range(120):
        said = T0 + timedelta(minutes=i // 3)  # three turns to a minute: ties decided by id
        role = rnd.choice(("user", "assistant", "assistant", "tool", None, "Jon", "Gina"))
        text = " ".join(rnd.choice(VOCAB) for _ in range(rnd.randint(3, 9)))
        rows.append({"id": f"t{i:03d}", "user_id": "u", "created_at": said.isoformat(), "role": role,
                     "content": text + ("?" if rnd.random() < 0.3 else "."),
                     "session_id": rnd.choice((None, None, "s1", "s2")), "agent_id": rnd.choice((None, "coder"))})
    got = []
    for store in (SQLiteStore(tmp_path / "turns.db"), postgres_store):
        with Memory(store=store, embedder=FakeEmbedder()) as memory:
            memory.add_many(rows)
            ids = [r["id"] for r in rows]
            config = RetrievalConfig(top_k=10, min_score=0.0, cache_ttl=0)
            got.append((memory.store.session_neighbors("u", ids), [
                [(e.id, round(e.score, 9), round(e.signals["conversation_context"], 9), tuple(sorted(e.reasons)))
                 for e in memory.retrieve(q, user_id="u", now=T0 + timedelta(hours=1), config=config).memories]
                for q in ("invoice payment acme", "doctor appointment", "server outage deploy")
            ]))
    assert got[0] == got[1]
    neighbours, ranked = got[0]
    assert len(neighbours) > 50 and any(len(turns) == 2 for turns in neighbours.values())
    assert any(context > 0 for answer in ranked for _, _, context, _ in answer)
