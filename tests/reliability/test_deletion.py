"""Deletion: what is deleted is gone from every table, index and cache; nothing else is touched.

Guards against mem0#3928 (a per-user delete that wiped every user), mem0#3695 and cognee#3526
(deleted memories still recalled). The table checks read SQLite directly: every table listed in
sqlite_master, the FTS5 index through MATCH and its vocabulary, the in-memory vector index, the
retrieval cache; and the raw bytes of the database file and its WAL, right after a delete or an edit
returns and after close.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import MemoryNotFound
from engram.ext import Store, Vector
from engram.model import Filters, MemoryRecord
from tests.reliability._workers import report, scale

ANY = RetrievalConfig(min_score=0.0, top_k=50)
EVERYTHING = Filters(statuses=("active", "archived", "superseded", "deleted"))
FAR_PAST = datetime(1970, 1, 2, tzinfo=UTC)
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    if request.param == "sqlite":
        with Memory(tmp_path / "del.db", embedder=FakeEmbedder()) as m:
            yield m
    else:
        store: Store = request.getfixturevalue("postgres_store")
        yield Memory(store=store, embedder=FakeEmbedder())


def _populate(memory: Memory, user: str, marker: str, n: int = 4) -> list[MemoryRecord]:
    records = memory.add_many([
        {"user_id": user, "content": f"{marker}word{i} invoice shipment note due on Dec 3",
         "tags": [f"{marker}tag", "shared"],
         "entities": [f"customer:{marker}", "customer:shared"], "metadata": {"owner": user, "i": i},
         "kind": "fact" if i % 2 else "message"}
        for i in range(n)
    ] + [
        {"user_id": user, "content": f"{marker}doc version {v} contract text", "kind": "document",
         "tags": ["file_ingest"], "doc_key": f"{marker}/file.md", "version": v,
         "metadata": {"filename": "file.md", "version": v}}
        for v in (1, 2)
    ])
    memory.link(records[0].id, records[1].id, "related", user_id=user)
    memory.link(records[2].id, records[0].id, "supersedes", 0.5, user_id=user)
    memory.add_entity(f"customer:{marker}", user_id=user, name=f"{marker} Corp", aliases=[f"{marker}co"])
    return records


def _visible_ids(memory: Memory, user: str, probe: MemoryRecord) -> set[str]:
    """Every id any API or store primitive can hand back for ``user``, given a probe memory."""
    store = memory.store
    seen: set[str] = set()
    vector = memory.embedder.embed_batch([probe.content])[0]
    seen.update(r.id for r in memory.list(user_id=user, limit=10_000, filters=EVERYTHING))
    seen.update(e.id for e in memory.retrieve(probe.content, user_id=user, config=ANY).memories)
    seen.update(h[0] for h in store.keyword_search(user, probe.content, 100, EVERYTHING))
    seen.update(h[0] for h in store.vector_search(user, vector, 100, EVERYTHING))
    seen.update(h[0] for h in store.by_entities(user, list(probe.entities), 100, EVERYTHING))
    seen.update(h[0] for h in store.by_time_range(user, FAR_PAST, FAR_FUTURE, 100, EVERYTHING))
    seen.update(h[0] for h in store.most_recent(user, 100, EVERYTHING))
    seen.update(h[0] for h in store.most_important(user, 100, EVERYTHING))
    seen.update(h[0] for h in store.most_accessed(user, 100, EVERYTHING))
    seen.update(h[0] for h in store.most_recently_accessed(user, 100, EVERYTHING))
    return seen


def _live_cached_ids(memory: Memory, user: str) -> set[str]:
    """Ids inside any cache entry the pipeline would still serve for ``user``."""
    cache = memory.pipeline.cache
    out: set[str] = set()
    for cached_user, key in list(cache._entries):
        if cached_user == user:
            value = cache.get(user, key)
            if value is not None:
                out.update(e.id for e in value.memories)
    return out


def _tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: conn.execute(f'SELECT * FROM "{name}"').fetchall() for name in names}
    finally:
        conn.close()


def _mentions(value: Any, needle: str) -> bool:
    if isinstance(value, str):
        return needle in value
    if isinstance(value, bytes):
        return needle.encode() in value
    return False


def _rows_mentioning(db: Path, needle: str) -> dict[str, int]:
    # keyword_fts_data holds FTS5's binary segments; checked on its own (see the xfail below).
    return {
        name: hits for name, rows in _tables(db).items() if name != "keyword_fts_data"
        if (hits := sum(1 for row in rows if any(_mentions(v, needle) for v in row)))
    }


def _fts(db: Path, term: str) -> tuple[list[Any], list[Any]]:
    conn = sqlite3.connect(db)
    try:
        # Indexed terms are stems behind a key of their user: look for the word inside any term.
        vocab = conn.execute("SELECT term, doc FROM keyword_vocab WHERE term LIKE ?", (f"%{term.lower()}%",)).fetchall()
        matched = [r for (t, _) in vocab for r in conn.execute(
            "SELECT rowid FROM keyword_fts WHERE keyword_fts MATCH ?", (f'"{t}"',)).fetchall()]
        return matched, vocab
    finally:
        conn.close()


# -- mem0#3928: a per-user delete must never reach another user ------------------------------------

LOOKALIKES = ["a", "ab", "a%", "A", "a_", "_", "%", "a ", " a", "a\\", "a'", "ａ", "a\u200b", "a%' OR '1'='1"]


@pytest.mark.parametrize("victim", ["a", "a%", "_", "%", "A"])
def test_mem0_3928_forget_user_spares_lookalike_users(memory: Memory, victim: str) -> None:
    owned = {user: _populate(memory, user, f"m{i}x", n=3) for i, user in enumerate(LOOKALIKES)}
    before = {user: sorted(r.id for r in memory.list(user_id=user, limit=1000)) for user in LOOKALIKES}
    links_before = {user: memory.links(recs[0].id, user_id=user) for user, recs in owned.items()}
    entities_before = {user: memory.entities(user_id=user) for user in LOOKALIKES}

    removed = memory.forget_user(victim)

    assert removed == len(owned[victim])
    assert memory.list(user_id=victim, filters=EVERYTHING) == []
    assert memory.entities(user_id=victim) == []
    assert _visible_ids(memory, victim, owned[victim][0]) == set()
    for user in LOOKALIKES:
        if user == victim:
            continue
        assert sorted(r.id for r in memory.list(user_id=user, limit=1000)) == before[user], user
        assert memory.links(owned[user][0].id, user_id=user) == links_before[user], user
        assert memory.entities(user_id=user) == entities_before[user], user
        found = memory.retrieve(owned[user][0].content, user_id=user, config=ANY)
        assert owned[user][0].id in {e.id for e in found.memories}, user
        vector = memory.embedder.embed_batch([owned[user][1].content])[0]
        assert memory.store.vector_search(user, vector, 1, Filters())[0][0] == owned[user][1].id


@pytest.mark.parametrize("wrong", ["B", "b ", "%", "_", "b%", "' OR '1'='1", "ｂ", "b\u200b"])
def test_mem0_3928_delete_with_wrong_user_deletes_nothing(memory: Memory, wrong: str) -> None:
    target = _populate(memory, "b", "own")
    other = _populate(memory, "c", "oth")
    assert memory.delete(target[0].id, user_id=wrong) is False
    assert memory.forget_user(wrong) == 0
    assert memory.delete(other[0].id, user_id="b") is False  # a real user, but not the owner
    with pytest.raises(MemoryNotFound):
        memory.update(target[0].id, user_id=wrong, content="hijacked")
    assert memory.get(target[0].id, user_id="b").content == target[0].content
    assert memory.get(other[0].id, user_id="c").id == other[0].id
    assert len(memory.list(user_id="b", filters=EVERYTHING)) == len(target)
    assert len(memory.list(user_id="c", filters=EVERYTHING)) == len(other)


# -- mem0#3695 / cognee#3526: what is deleted is never recalled ------------------------------------


def test_mem0_3695_deleted_memory_never_recalled(memory: Memory) -> None:
    records = _populate(memory, "u", "zq")
    bystander = _populate(memory, "v", "zq")  # same words, another user
    victim = records[0]
    warm = memory.retrieve(victim.content, user_id="u", config=ANY)  # the answer is now cached
    assert victim.id in {e.id for e in warm.memories}

    assert memory.delete(victim.id, user_id="u") is True
    assert memory.delete(victim.id, user_id="u") is False

    with pytest.raises(MemoryNotFound):
        memory.get(victim.id, user_id="u")
    assert victim.id not in _visible_ids(memory, "u", victim)
    assert victim.id not in _visible_ids(memory, "u", records[1])
    assert memory.store.fetch("u", [victim.id]) == []
    assert memory.store.vectors("u", [victim.id]) == {}
    assert memory.links(victim.id, user_id="u") == []
    assert all(victim.id not in (link.from_id, link.to_id) for r in records for link in memory.links(r.id, user_id="u"))
    assert victim.id not in {h[0] for h in memory.store.by_links("u", [r.id for r in records[1:]], 100, None)}
    assert victim.id not in _live_cached_ids(memory, "u")
    # The rest of u, and the other user, are untouched.
    assert {r.id for r in memory.list(user_id="u", filters=EVERYTHING, limit=1000)} == {r.id for r in records[1:]}
    assert len(memory.list(user_id="v", limit=1000)) == len(bystander)


def test_cognee_3526_deleted_memory_leaves_no_row_fts_vector_or_link(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    with Memory(db, embedder=FakeEmbedder()) as memory:
        records = _populate(memory, "u-7f3a", "qv")
        victim = records[0]
        memory.retrieve(victim.content, user_id="u-7f3a", config=ANY)
        conn = sqlite3.connect(db)
        rowid = conn.execute("SELECT rowid FROM memories WHERE id = ?", (victim.id,)).fetchone()[0]
        assert conn.execute("SELECT COUNT(*) FROM memory_days WHERE memory_rowid = ?", (rowid,)).fetchone()[0] == 1
        conn.close()
        assert memory.delete(victim.id, user_id="u-7f3a")

        assert _rows_mentioning(db, victim.id) == {}
        assert _rows_mentioning(db, "qvword0") == {}  # its unique word, in any column of any table
        matched, vocab = _fts(db, "qvword0")
        assert matched == [] and vocab == []
        tables = _tables(db)
        assert all(row[0] != rowid for row in tables["memory_tags"] + tables["memory_entities"] + tables["memory_days"])
        assert all(row[0] != rowid for row in tables["keyword_fts_docsize"])
        index = memory.store._indexes.get("u-7f3a")  # type: ignore[attr-defined]
        assert index is None or victim.id not in index.ids()
        assert victim.id not in _live_cached_ids(memory, "u-7f3a")
        # The other memories of the user are all still there, in the table and the FTS index.
        assert _fts(db, "qvword1")[0]


def test_cognee_3526_forget_user_leaves_no_row_anywhere(tmp_path: Path) -> None:
    db = tmp_path / "forget.db"
    victim, bystander = "victim-4c1d", "bystander-9e2b"
    with Memory(db, embedder=FakeEmbedder()) as memory:
        gone = _populate(memory, victim, "vk")
        kept = _populate(memory, bystander, "bk")
        memory.retrieve(gone[0].content, user_id=victim, config=ANY)
        memory.retrieve(kept[0].content, user_id=bystander, config=ANY)
        assert memory.forget_user(victim) == len(gone)

        assert _rows_mentioning(db, victim) == {}
        for record in gone:
            assert _rows_mentioning(db, record.id) == {}
        for i in range(4):
            assert _fts(db, f"vkword{i}") == ([], [])
        assert victim not in memory.store._indexes  # type: ignore[attr-defined]
        assert _live_cached_ids(memory, victim) == set()
        assert memory.retrieve(gone[0].content, user_id=victim, config=ANY).memories == ()
        # The bystander keeps every row, FTS entry, vector, link and entity.
        mentions = _rows_mentioning(db, bystander)
        assert mentions.get("memories") == len(kept)
        assert mentions.get("links") == 2 and mentions.get("entities") == 1
        assert all(_fts(db, f"bkword{i}")[0] for i in range(4))
        found = memory.retrieve(kept[0].content, user_id=bystander, config=ANY)
        assert kept[0].id in {e.id for e in found.memories}


def test_document_versions_deleted_one_by_one(memory: Memory) -> None:
    records = _populate(memory, "d", "dv")
    v1, v2 = records[-2], records[-1]
    assert memory.delete(v1.id, user_id="d")
    docs = memory.list(user_id="d", filters=Filters(kinds=("document",)), limit=100)
    assert [r.id for r in docs] == [v2.id]
    memory.forget_user("d")
    assert memory.list(user_id="d", filters=Filters(kinds=("document",), statuses=EVERYTHING.statuses)) == []


def test_update_leaves_no_trace_of_old_content(memory: Memory) -> None:
    record = memory.add("oldtoken7 original wording", user_id="u")
    memory.retrieve("oldtoken7 original wording", user_id="u", config=ANY)
    memory.update(record.id, user_id="u", content="newtoken7 replacement text")
    assert memory.store.keyword_search("u", "oldtoken7", 10, EVERYTHING) == []
    vector = memory.embedder.embed_batch(["oldtoken7 original wording"])[0]
    hits = memory.store.vector_search("u", vector, 1, EVERYTHING)
    assert hits and hits[0][1] < 0.99  # the old vector is gone; the new one is not the same text
    found = memory.retrieve("oldtoken7 original wording", user_id="u", config=ANY)
    assert all("oldtoken7" not in e.content for e in found.memories)


def test_mem0_3695_deleted_memory_not_in_keyword_search_cache_or_recall(memory: Memory) -> None:
    keyword_search = pytest.importorskip("engram.keyword_search")
    recall = pytest.importorskip("engram.recall")
    victim = memory.add("kiwitoken unique ledger", user_id="u", importance=1.0)
    keep = memory.add("kiwitoken second ledger", user_id="u")
    found = keyword_search.search_with_cache(memory, ["kiwitoken"], user_id="u")
    assert victim.id in {r.record.id for r in found}
    assert memory.delete(victim.id, user_id="u")
    after = {r.record.id for r in keyword_search.search_with_cache(memory, ["kiwitoken"], user_id="u")}
    assert victim.id not in after and keep.id in after
    for mode in ("relevant", "recent", "important", "frequent"):
        recalled = recall.recall(memory, "kiwitoken unique ledger", user_id="u", mode=mode)
        assert victim.id not in {m.record.id for m in recalled.memories}, mode


# -- bugs: deleted memories still recalled ---------------------------------------------------------


def test_mem0_3695_delete_during_retrieval_is_not_cached(tmp_path: Path) -> None:
    with Memory(tmp_path / "race.db", embedder=FakeEmbedder()) as memory:
        victim = memory.add("zebra secret ledger", user_id="u")
        fetched, release = threading.Event(), threading.Event()
        original = memory.store.vectors

        def slow_vectors(user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
            out = original(user_id, memory_ids)  # the records are already fetched
            fetched.set()
            release.wait(10)
            return out

        memory.store.vectors = slow_vectors  # type: ignore[method-assign]
        racing = threading.Thread(target=lambda: memory.retrieve("zebra secret ledger", user_id="u", config=ANY))
        racing.start()
        assert fetched.wait(10)
        memory.store.vectors = original  # type: ignore[method-assign]
        assert memory.delete(victim.id, user_id="u")
        release.set()
        racing.join(10)
        after = memory.retrieve("zebra secret ledger", user_id="u", config=ANY)
        assert victim.id not in {e.id for e in after.memories}


def test_mem0_3695_forget_in_another_process_is_not_served_from_cache(tmp_path: Path) -> None:
    db = tmp_path / "xproc.db"
    with Memory(db, embedder=FakeEmbedder()) as a, Memory(db, embedder=FakeEmbedder()) as b:
        a.add_many([{"user_id": "victim", "content": f"pineapple secret {i}"} for i in range(5)])
        assert a.retrieve("pineapple secret", user_id="victim", config=ANY).memories
        assert b.forget_user("victim") == 5
        assert a.retrieve("pineapple secret", user_id="victim", config=ANY).memories == ()


def test_forget_user_leaves_no_words_in_fts_segments(tmp_path: Path) -> None:
    db = tmp_path / "remanence.db"
    with Memory(db, embedder=FakeEmbedder()) as memory:
        memory.add_many([{"user_id": "victim", "content": f"pineapplesecret{i} words"} for i in range(30)])
        memory.add("bystander text", user_id="other")
        memory.forget_user("victim")
    segments = _tables(db)["keyword_fts_data"]
    assert not any(_mentions(v, "pineapplesecret") for row in segments for v in row)
    wal = db.with_name(db.name + "-wal")
    raw = db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert b"pineapplesecret" not in raw


def test_mem0_3695_delete_in_another_process_not_served_from_keyword_cache(tmp_path: Path) -> None:
    keyword_search = pytest.importorskip("engram.keyword_search")
    db = tmp_path / "xkw.db"
    with Memory(db, embedder=FakeEmbedder()) as a, Memory(db, embedder=FakeEmbedder()) as b:
        victim = a.add("kiwitoken secret", user_id="u")
        assert keyword_search.search_with_cache(a, ["kiwitoken"], user_id="u")
        assert b.delete(victim.id, user_id="u")
        assert keyword_search.search_with_cache(a, ["kiwitoken"], user_id="u") == []


# -- issue 12 item 5: deleted and edited text leaves no bytes in the file or its WAL ----------------


def _file_bytes(db: Path) -> bytes:
    """Everything on disk a reader of the file could dig through: the database and its WAL."""
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _busy_history(memory: Memory, user: str, n: int = 40) -> None:
    """Writes before and after, so the old pages sit both in the WAL and in the database file."""
    memory.add_many([{"user_id": user, "content": f"routine note {i} about invoices and shipments"} for i in range(n)])


def test_deleted_text_leaves_no_bytes_in_file_or_wal(tmp_path: Path) -> None:
    db = tmp_path / "bytes.db"
    with Memory(db, embedder=FakeEmbedder()) as memory, Memory(db, embedder=FakeEmbedder()) as other:
        _busy_history(memory, "u")
        victim = memory.add("the zanzibarquokka ledger entry", user_id="u", metadata={"note": "pelicanvault"})
        memory.store._checkpoint()  # type: ignore[attr-defined]  # old pages now in the database file too
        memory.add("later wording", user_id="u")
        memory.retrieve("zanzibarquokka ledger", user_id="u", config=ANY)
        other.retrieve("routine note", user_id="u", config=ANY)  # a second connection on the file, idle now
        assert b"quokka" in _file_bytes(db)

        assert memory.delete(victim.id, user_id="u")

        raw = _file_bytes(db)
        # The word's tail: FTS5 stores a term as a suffix after the prefix it shares with its neighbour.
        assert raw.count(b"quokka") == 0 and raw.count(b"pelicanvault") == 0
        assert raw.count(victim.id.encode()) == 0
        assert b"routine note 7" in raw  # the rest is still there
    raw = _file_bytes(db)
    assert raw.count(b"quokka") == 0 and raw.count(b"pelicanvault") == 0


def test_edited_text_leaves_no_bytes_in_file_or_wal(tmp_path: Path) -> None:
    db = tmp_path / "edit.db"
    with Memory(db, embedder=FakeEmbedder()) as memory:
        _busy_history(memory, "u")
        record = memory.add("the zanzibarquokka ledger entry", user_id="u")
        fact = memory.add_many([{"user_id": "u", "kind": "fact", "subject": "Acme", "predicate": "uses",
                                 "object": "marmosetcipher vault", "content": "Acme uses a vault",
                                 "metadata": {"note": "pelicanvault"}}])[0]
        memory.store._checkpoint()  # type: ignore[attr-defined]
        memory.add("later wording", user_id="u")

        memory.update(record.id, user_id="u", content="the replacement ledger entry")
        # Text outside the keyword index (a fact's object, metadata) is erased the same way.
        memory.update(fact.id, user_id="u", object="plain vault", metadata={"note": "ordinary"})

        raw = _file_bytes(db)
        assert raw.count(b"quokka") == 0
        assert raw.count(b"marmosetcipher") == 0 and raw.count(b"pelicanvault") == 0
        assert b"replacement ledger" in raw and b"plain vault" in raw
    raw = _file_bytes(db)
    assert raw.count(b"quokka") == 0 and raw.count(b"marmosetcipher") == 0 and raw.count(b"pelicanvault") == 0


def test_erasure_blocked_by_a_reader_does_not_stall_delete_and_completes_later(tmp_path: Path) -> None:
    db = tmp_path / "blocked.db"
    memory = Memory(db, embedder=FakeEmbedder())
    _busy_history(memory, "u", n=5)
    victim = memory.add("the zanzibarquokka ledger entry", user_id="u")
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchall()  # holds a snapshot that needs the WAL
    started = time.perf_counter()
    assert memory.delete(victim.id, user_id="u")
    assert time.perf_counter() - started < 2.0  # not the 10 s busy timeout
    assert memory.store.get("u", victim.id) is None
    reader.execute("COMMIT")
    memory.add("the next write finishes the erasure", user_id="u")
    assert b"quokka" not in _file_bytes(db)
    # And when nothing writes again, closing finishes it.
    second = memory.add("the zanzibarquokka returns", user_id="u")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchall()
    assert memory.delete(second.id, user_id="u")
    reader.execute("COMMIT")
    reader.close()
    memory.close()
    assert b"quokka" not in _file_bytes(db)


def test_closing_waits_for_a_read_that_blocks_the_erasure(tmp_path: Path) -> None:
    """A process that deletes and exits (``engram delete``) has no later write to finish a blocked
    erasure: closing retries it while another connection's read ends, then the text is gone."""
    db = tmp_path / "blocked.db"
    memory = Memory(db, embedder=FakeEmbedder())
    _busy_history(memory, "u", n=5)
    victim = memory.add("the zanzibarquokka ledger entry", user_id="u")
    reader = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memories").fetchall()
    assert memory.delete(victim.id, user_id="u")
    release = threading.Timer(1.0, lambda: reader.execute("COMMIT"))
    release.start()
    started = time.perf_counter()
    memory.close()
    assert 0.5 < time.perf_counter() - started < 5.0
    release.join()
    assert b"quokka" not in _file_bytes(db)  # the other connection is still open, idle
    reader.close()


def test_traces_after_delete_and_update_attack(tmp_path: Path) -> None:
    """Each memory carries a word found nowhere else; after deletes, edits of content and metadata and
    a forget_user, interleaved with adds and retrievals and with a second connection open, no byte
    of a removed word may remain in the database file or its WAL, right away or after close."""
    rng = random.Random(12)
    letters = "bcdfghjklmnpqrstvwxz"
    n = scale(120, 1200)

    def needle() -> str:
        return "".join(rng.choice(letters) for _ in range(14))

    db = tmp_path / "traces.db"
    removed: list[str] = []  # needles that must be gone
    kept: list[str] = []
    timings: dict[str, list[float]] = {"delete": [], "edit": []}
    with Memory(db, embedder=FakeEmbedder()) as memory, Memory(db, embedder=FakeEmbedder()) as other:
        owners = ["victim", "bystander", "leaver"]
        words = {user: [needle() for _ in range(n)] for user in owners}
        records = {user: memory.add_many([
            {"user_id": user, "content": f"{w} invoice shipment note {i}", "metadata": {"ref": needle()}}
            for i, w in enumerate(words[user])
        ]) for user in owners}
        for i, record in enumerate(records["victim"]):
            if i % 10 == 0:
                memory.retrieve("invoice shipment note", user_id="victim", config=ANY)
                other.retrieve("shipment note", user_id="bystander", config=ANY)
            if i % 4 == 0:
                started = time.perf_counter()
                assert memory.delete(record.id, user_id="victim")
                timings["delete"].append((time.perf_counter() - started) * 1000)
                removed += [words["victim"][i], record.metadata["ref"]]
            elif i % 4 == 1:
                fresh = needle()
                started = time.perf_counter()
                memory.update(record.id, user_id="victim", content=f"{fresh} edited note", metadata={"ref": "x"})
                timings["edit"].append((time.perf_counter() - started) * 1000)
                removed += [words["victim"][i], record.metadata["ref"]]
                kept.append(fresh)
            else:
                kept.append(words["victim"][i])
            if i % 25 == 0:
                memory.add(f"{needle()} later note", user_id="bystander")

        def found(raw: bytes) -> int:
            # The last 10 letters: FTS5 stores a term after the prefix it shares with its neighbour.
            return sum(raw.count(w[-10:].encode()) * len(w) for w in removed)

        after_deletes = found(_file_bytes(db))  # before forget_user, whose erasure would cover them
        memory.forget_user("leaver")
        removed += words["leaver"] + [r.metadata["ref"] for r in records["leaver"]]
        kept += words["bystander"]
        after_forget = found(_file_bytes(db))
        assert all(w[-10:].encode() in _file_bytes(db) for w in kept[:50])  # the rest is still there
    after_close = found(_file_bytes(db))
    figures = {
        "memories": 3 * n, "deletes": len(timings["delete"]), "edits": len(timings["edit"]), "forget_users": 1,
        "removed_words": len(removed), "bytes_found_after_deletes_and_edits": after_deletes,
        "bytes_found_after_forget_user": after_forget, "bytes_found_after_close": after_close,
        "deleted_text_bytes_found": after_deletes + after_forget + after_close,
        "delete_ms_median": round(statistics.median(timings["delete"]), 2),
        "edit_ms_median": round(statistics.median(timings["edit"]), 2),
    }
    report("traces_after_delete", figures)
    assert after_deletes == 0 and after_forget == 0 and after_close == 0, figures


def test_deleted_document_version_leaves_no_bytes_of_its_passages(tmp_path: Path) -> None:
    """Deleting a document version takes its passages with it (issue 12, item 9), in one erasure:
    none of their words may remain in the file or its WAL, and the previous version is current."""
    rng = random.Random(9)
    letters = "bcdfghjklmnpqrstvwxz"
    passages = scale(40, 150)
    needles = ["".join(rng.choice(letters) for _ in range(14)) for _ in range(passages)]
    source = tmp_path / "handbook.md"
    db = tmp_path / "documents.db"
    with Memory(db, embedder=FakeEmbedder()) as memory:
        _busy_history(memory, "reader")
        source.write_text("\n\n".join(f"Section {i}: the old policy text." for i in range(passages)))
        memory.ingest([source], user_id="reader")
        # Passages of about 100 words each, one needle in each, so every passage holds one.
        source.write_text("\n\n".join(f"{w} " + " ".join(["policy"] * 100) + "." for w in needles))
        [result] = memory.ingest([source], user_id="reader").files
        assert result.chunks >= passages // 2 and all(w.encode() in _file_bytes(db) for w in needles[:5])
        started = time.perf_counter()
        assert memory.delete(result.memory_id or "", user_id="reader")
        delete_ms = (time.perf_counter() - started) * 1000
        current = memory.list(user_id="reader", filters=Filters(kinds=("document", "chunk")), limit=1000)
        assert current and all("old policy" in r.content for r in current)
    found = sum(_file_bytes(db).count(w[-10:].encode()) * len(w) for w in needles)
    report("traces_after_document_delete", {"passages": result.chunks, "delete_ms": round(delete_ms, 1),
                                            "deleted_text_bytes_found": found})
    assert found == 0


def test_a_memorys_facet_vectors_leave_no_bytes_when_it_is_deleted_or_rewritten(tmp_path: Path) -> None:
    """The vectors of a message's standing sentences (engram.ingest.facets) are part of its row."""
    db = tmp_path / "facets.db"
    embedder = FakeEmbedder()
    said = "Here is my project layout. Please keep every example in the standard library only."
    other = "We talked about the layout. From now on, always answer in French."
    with Memory(db, embedder=embedder) as memory:
        _busy_history(memory, "u")
        first = memory.add(said, user_id="u", role="user")
        second = memory.add(other, user_id="u", role="user")
        memory.store._checkpoint()  # type: ignore[attr-defined]
        memory.add("later wording", user_id="u")
        gone, rewritten = (embedder.embed_batch([text])[0].astype("float32").tobytes()[:64]
                           for text in ("Please keep every example in the standard library only.",
                                        "From now on, always answer in French."))
        assert gone in _file_bytes(db) and rewritten in _file_bytes(db)

        assert memory.delete(first.id, user_id="u")
        memory.update(second.id, user_id="u", content="We talked about the layout of the garden.")

        assert memory.store.facets("u", [first.id, second.id]) == {}
        raw = _file_bytes(db)
        assert raw.count(gone) == 0 and raw.count(rewritten) == 0
    raw = _file_bytes(db)
    assert raw.count(gone) == 0 and raw.count(rewritten) == 0
