"""SQLite's keyword search equals an exhaustive BM25 over the user's own texts, whatever the sizes,
filters and writes (its own and another process's), and whatever other users hold."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.ingest.normalize import content_hash
from engram.model import Filters, Hit, MemoryRecord, new_id
from engram.stores.matches import Matches, best
from engram.stores.postings import Postings
from engram.stores.sqlite import keyword
from engram.stores.sqlite.store import SQLiteStore
from engram.stores.untracked import string_array
from engram.stores.vocabulary import Vocabulary
from engram.text import bm25, bm25_idf, memory_terms, query_terms

T0 = datetime(2025, 3, 1, tzinfo=UTC)
COMMON = ("coffee", "order", "note", "customer")
RARE = ("zanzibar", "quokka", "marzipan", "obsidian", "fjord", "saffron", "tundra", "walrus")
MIDDLE = ("invoice", "shipping", "delay", "garden", "meeting", "budget", "berlin", "refund", "deploy", "lunch")
TAGS = ("billing", "work", "travel")
KINDS = ("message", "fact", "episode", "procedure")
FILTERS = (
    Filters(),
    Filters(kinds=("fact", "episode")),
    Filters(tags_any=("billing",)),
    Filters(tags_all=("work", "travel")),
    Filters(statuses=("active", "archived")),
    Filters(created_after=T0 + timedelta(days=5), created_before=T0 + timedelta(days=12)),
    Filters(kinds=("message",), created_after=T0 + timedelta(days=20)),
    Filters(statuses=()),
)


def _record(rnd: random.Random, user: str) -> MemoryRecord:
    words = [rnd.choice(COMMON) for _ in range(rnd.randint(0, 3))]
    words += [rnd.choice(MIDDLE) for _ in range(rnd.randint(1, 8))]
    words += [rnd.choice(RARE) for _ in range(rnd.random() < 0.1)]
    rnd.shuffle(words)
    text = " ".join(words) or "the"
    created = T0 + timedelta(minutes=rnd.randint(0, 60 * 24 * 30))
    kind = rnd.choice(KINDS)
    fact = kind == "fact" and rnd.random() < 0.5
    return MemoryRecord(
        id=new_id(), user_id=user, content=text, kind=kind, created_at=created, recorded_at=created,
        content_hash=content_hash(text), role=rnd.choice((None, "user", "Priya")),
        subject="Dana" if fact else None, predicate="diet_walrus" if fact else None,
        tags=tuple(rnd.sample(TAGS, rnd.randint(0, 2))),
        status=rnd.choice(("active",) * 6 + ("archived", "superseded")),
    )


def _vectors(count: int) -> np.ndarray:
    return np.full((count, 8), 1 / np.sqrt(8), dtype=np.float32)


class Model:
    """What each user holds, kept beside the store: the exhaustive reference."""

    def __init__(self) -> None:
        self.users: dict[str, dict[str, MemoryRecord]] = {}

    def put(self, records: list[MemoryRecord]) -> None:
        for r in records:
            self.users.setdefault(r.user_id, {})[r.id] = r

    def search(self, user: str, text: str, n: int, f: Filters) -> list[Hit]:
        rows = list(self.users.get(user, {}).values())
        docs = [Counter(memory_terms(r.content, r.role, r.subject, r.predicate, r.object, r.trigger, r.action))
                for r in rows]
        terms = query_terms(text)
        if not docs or not terms:
            return []
        df = {t: sum(1 for d in docs if t in d) for t in terms}
        idf = {t: bm25_idf(len(docs), df[t]) for t in terms if df[t]}
        ideal = sum(bm25_idf(len(docs), df[t]) for t in terms)
        average = sum(sum(d.values()) for d in docs) / len(docs)
        scored = [
            (r.id, bm25([(float(d[t]), w) for t, w in idf.items() if d[t]], sum(d.values()), average) / ideal)
            for r, d in zip(rows, docs, strict=True) if any(d[t] for t in idf) and _passes(r, f)
        ]
        return sorted(scored, key=lambda hit: (-hit[1], hit[0]))[:n]


def _passes(r: MemoryRecord, f: Filters) -> bool:
    return (
        (not f.statuses or r.status in f.statuses)
        and (f.kinds is None or r.kind in f.kinds)
        and all(t in r.tags for t in f.tags_all)
        and (not f.tags_any or any(t in r.tags for t in f.tags_any))
        and (f.created_after is None or r.created_at >= f.created_after)
        and (f.created_before is None or r.created_at <= f.created_before)
    )


def _check(store: SQLiteStore, model: Model, rnd: random.Random, users: list[str], queries: int = 40) -> int:
    """Compare ``queries`` random searches; returns how many hits were compared."""
    compared = 0
    vocabulary = COMMON + RARE + MIDDLE + ("priya", "dana", "diet", "absentword")
    for _ in range(queries):
        user = rnd.choice(users)
        text = " ".join(rnd.sample(vocabulary, rnd.randint(1, 4)))
        f = rnd.choice(FILTERS)
        n = rnd.choice((3, 10, 50))
        got = store.keyword_search(user, text, n, f)
        want = model.search(user, text, n, f)
        assert [h[0] for h in got] == [h[0] for h in want], (user, text, f)
        for (_, a), (_, b) in zip(got, want, strict=True):
            assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
        compared += len(got)
    return compared


@pytest.fixture(params=["inline", "background", "waiting"])
def world(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> tuple[SQLiteStore, Model, random.Random]:
    """Postings built by the first search, or (every user "large") on a thread of their own while
    searches read from SQL or wait for the build: each must give the exhaustive answer."""
    rnd = random.Random(5)
    store = SQLiteStore(tmp_path / "k.db")
    if request.param != "inline":
        store.keyword_build_inline = 0
    if request.param == "waiting":
        monkeypatch.setattr(keyword, "SCAN_LIMIT", 0)
    model = Model()
    for user, size in (("big", 1500), ("mid", 300), ("small", 12), ("tiny", 1)):
        records = [_record(rnd, user) for _ in range(size)]
        store.put_many(records, _vectors(size))
        model.put(records)
    return store, model, rnd


USERS = ["big", "mid", "small", "tiny", "nobody"]


def test_equals_exhaustive_bm25_per_user(world: tuple[SQLiteStore, Model, random.Random]) -> None:
    store, model, rnd = world
    assert _check(store, model, rnd, USERS, queries=150) > 500


def test_stays_exact_through_this_stores_writes(world: tuple[SQLiteStore, Model, random.Random]) -> None:
    store, model, rnd = world
    _check(store, model, rnd, USERS)  # every index loaded before the writes
    # Enough added postings to fold them into the arrays at least once.
    added = [_record(rnd, "big") for _ in range(700)] + [_record(rnd, "small") for _ in range(5)]
    store.put_many(added, _vectors(len(added)))
    model.put(added)
    _check(store, model, rnd, USERS)
    # Replaces: new text (the old terms must go), and a status change alone.
    for i, old in enumerate(rnd.sample(list(model.users["big"].values()), 20)):
        new = _record(rnd, "big")
        edited = (replace(old, content=new.content, content_hash=new.content_hash) if i % 2
                  else replace(old, status="archived" if old.status == "active" else "active"))
        store.replace(edited, None)
        model.put([edited])
    _check(store, model, rnd, USERS)
    # Deletes, enough of them to close the holes once.
    gone = rnd.sample(sorted(model.users["big"]), 1200)
    assert store.delete_many("big", gone) == len(gone)
    for memory_id in gone:
        del model.users["big"][memory_id]
    _check(store, model, rnd, USERS)
    store.forget_user("mid")
    model.users.pop("mid")
    assert store.keyword_search("mid", "invoice coffee", 10, Filters(statuses=())) == []
    _check(store, model, rnd, USERS)


def another_store_adds_and_deletes(store: Any, other: Any, model: Model, rnd: random.Random) -> None:
    """``other`` (another process's store of the same data) adds to two users and deletes from one;
    ``store``, which held its indexes before, must answer as an exhaustive BM25 after. Both backends."""
    _check(store, model, rnd, USERS)
    added = [_record(rnd, "mid") for _ in range(40)] + [_record(rnd, "newcomer") for _ in range(30)]
    other.put_many(added, _vectors(len(added)))
    model.put(added)
    gone = rnd.sample(sorted(model.users["big"]), 30)
    other.delete_many("big", gone)
    for memory_id in gone:
        del model.users["big"][memory_id]
    _check(store, model, rnd, [*USERS, "newcomer"], queries=60)


def test_sees_another_processs_writes(world: tuple[SQLiteStore, Model, random.Random], tmp_path: Path) -> None:
    store, model, rnd = world
    other = SQLiteStore(tmp_path / "k.db")
    try:
        another_store_adds_and_deletes(store, other, model, rnd)
        other.forget_user("small")
        model.users.pop("small")
        _check(store, model, rnd, [*USERS, "newcomer"], queries=60)
    finally:
        other.close()


def test_other_users_change_nothing(world: tuple[SQLiteStore, Model, random.Random]) -> None:
    store, _, rnd = world
    before = {q: store.keyword_search("small", q, 10, Filters()) for q in ("coffee order", "zanzibar invoice")}
    flood = [_record(rnd, "big") for _ in range(300)]
    store.put_many(flood, _vectors(len(flood)))
    assert {q: store.keyword_search("small", q, 10, Filters()) for q in before} == before


def test_terms_that_begin_like_the_users_key(tmp_path: Path) -> None:
    """The key is taken off where a term starts only: a term spelled like the key stays whole."""
    from engram.stores.sqlite.schema import user_key

    store = SQLiteStore(tmp_path / "key.db")
    key = user_key("u")
    texts = [f"{key}walrus tundra", f"{key} tundra", "tundra fjord"]
    now = T0
    records = [MemoryRecord(id=new_id(), user_id="u", content=t, kind="message", created_at=now, recorded_at=now,
                            content_hash=content_hash(t)) for t in texts]
    store.put_many(records, _vectors(3))
    model = Model()
    model.put(records)
    for query in (f"{key}walrus", key, "tundra"):
        got, want = store.keyword_search("u", query, 10, Filters()), model.search("u", query, 10, Filters())
        assert got  # each query finds something
        assert [h[0] for h in got] == [h[0] for h in want]
        assert [h[1] for h in got] == pytest.approx([h[1] for h in want])


def test_the_sql_path_equals_the_postings_bit_for_bit(world: tuple[SQLiteStore, Model, random.Random]) -> None:
    """What a search reads from SQL while a user's postings are being built is what they give."""
    from engram.stores.sqlite.keyword_scan import scan_hits

    store, _, rnd = world
    store.keyword_build_inline = 10**9  # from here on, every search uses the postings
    vocabulary = COMMON + RARE + MIDDLE + ("priya", "dana")
    compared = 0
    for _ in range(60):
        user, text, f = rnd.choice(USERS[:3]), " ".join(rnd.sample(vocabulary, rnd.randint(1, 4))), rnd.choice(FILTERS)
        from_postings = store.keyword_search(user, text, 20, f)
        assert scan_hits(store._read, user, query_terms(text), 20, f) == from_postings
        compared += len(from_postings)
    assert compared > 300


def test_remembered_contributions_follow_every_change() -> None:
    """A term's contributions are kept between searches; a write changes the statistics (and the
    term's rows), so the next search must score as an index built from scratch does."""
    docs = [" coffee invoice", " coffee coffee order", " invoice late", " order"]
    rows = list(range(1, len(docs) + 1))
    ids = [f"m{i}" for i in rows]
    index = Postings.build(rows, ids, [0] * len(docs), docs)

    def scored(p: Postings) -> dict[int, float]:
        found = p.scores(["coffee", "order"])
        assert found is not None
        return dict(zip(found.rowids.tolist(), found.scores.tolist(), strict=True))

    scored(index)
    index.add(5, "m5", ["coffee", "tea"], 0)
    fresh = Postings.build([*rows, 5], [*ids, "m5"], [0] * 5, [*docs, " coffee tea"])
    assert scored(index) == scored(fresh)
    index.remove("m2")
    fresh = Postings.build([1, 3, 4, 5], ["m1", "m3", "m4", "m5"], [0] * 4, [docs[0], docs[2], docs[3], " coffee tea"])
    assert scored(index) == scored(fresh)


def test_saved_parts_keep_the_id_order_of_ties() -> None:
    """Equal scores go to the smaller id; a saved index carries that order (it is not sorted again on
    load), and rows added after the load, in id order or not, keep it."""
    ids = ["m7", "m2", "m9", "m4"]  # out of id order, as rows copied between stores may be
    docs = [" tea"] * 4
    built = Postings.build([1, 2, 3, 4], ids, [0] * 4, docs)
    loaded = Postings.of_parts(built.parts())
    assert loaded is not None and loaded._order.rank is not None  # carried, not sorted again

    def top(p: Postings, n: int) -> list[str]:
        found = p.scores(["tea"])
        assert found is not None
        return [i for i, _ in best(found, n, lambda _rows: None)]

    assert top(loaded, 4) == top(built, 4) == ["m2", "m4", "m7", "m9"]
    for p in (built, loaded):
        p.add(5, "m8", ["tea"], 0)  # older than the last id: without a place, compared by id
        p.add(6, "z1", ["tea"], 0)  # after an unplaced row: compared by id too
    assert top(loaded, 6) == top(built, 6) == ["m2", "m4", "m7", "m8", "m9", "z1"]
    assert Postings.of_parts(built.parts()[:9]) is None  # a file of an older layout: built again


def test_a_loaded_vocabulary_scores_as_the_built_one_through_later_writes() -> None:
    """A saved index keeps its terms sorted and finds them by bisection; terms written after the load
    get new codes, and saving again keeps every term's postings."""
    docs = [" coffee invoice", " zebra order", " apple late", " order coffee"]
    rows = [1, 2, 3, 4]
    ids = [f"m{i}" for i in rows]
    built = Postings.build(rows, ids, [0] * 4, docs)
    loaded = Postings.of_parts(built.parts())
    assert loaded is not None

    def scored(p: Postings, terms: list[str]) -> dict[int, float]:
        found = p.scores(terms)
        return {} if found is None else dict(zip(found.rowids.tolist(), found.scores.tolist(), strict=True))

    for terms in (["coffee"], ["zebra", "apple"], ["missing"], ["order", "late"]):
        assert scored(loaded, terms) == scored(built, terms)
    for p in (built, loaded):
        p.add(5, "m5", ["banana", "coffee"], 0)
    again = Postings.of_parts(loaded.parts())
    assert again is not None
    for terms in (["banana"], ["coffee", "zebra"], ["apple"]):
        assert scored(loaded, terms) == scored(built, terms) == scored(again, terms)
    terms, codes = built._vocab.sorted_terms()
    assert Vocabulary.of_sorted(terms[::-1], codes[::-1]) is None  # out of order: not a saved vocabulary


@pytest.mark.parametrize("seed", range(3))
def test_best_equals_sorting_every_match(seed: int) -> None:
    """The n best matches a filter keeps, by score then id, as sorting every match would give them:
    over many matches (a threshold from a sample finds the head), heavy ties, and filters that reject
    most rows (several rounds)."""
    rng = np.random.default_rng(seed)
    for trial in range(30):
        m = int(rng.integers(0, 300)) if trial % 2 else int(rng.integers(5_000, 20_000))
        if trial % 3 == 0:  # few distinct scores
            scores = rng.choice(np.array([0.25, 0.5, 1.0, 2.0]), size=m, p=[0.9, 0.07, 0.02, 0.01])
        else:
            scores = np.round(rng.random(m) * 10, int(rng.integers(0, 3)))
        ids = [f"m{int(x):06d}" for x in rng.permutation(10**6)[:m]]
        order = sorted(range(m), key=lambda i: ids[i])
        ranks = np.empty(m, dtype=np.int64)
        ranks[order] = np.arange(m)
        rowids = rng.permutation(2 * m)[:m].astype(np.int64)
        rejected = set(rowids[rng.random(m) < rng.choice([0.0, 0.5, 0.95])].tolist())
        # Rows from ``placed`` on have no place (added out of id order): their ranks are not read.
        placed = m if trial % 4 == 0 else int(rng.integers(0, m + 1))
        ranks[placed:] = -1
        matches = Matches(scores.astype(np.float64), np.arange(m, dtype=np.int64), rowids, ranks, placed,
                          string_array(ids))
        n = int(rng.integers(1, 60))
        got = best(matches, n, lambda r, no=rejected: np.asarray([x for x in r.tolist() if x not in no], np.int64))
        every = sorted((i for i in range(m) if int(rowids[i]) not in rejected), key=lambda i: (-scores[i], ids[i]))
        assert got == [(ids[i], float(scores[i])) for i in every[:n]], (seed, trial)
