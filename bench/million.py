"""One user with a million memories: retrieve latency and the vector source's recall against a
numpy exact scan of the same vectors, in the same run.

    python bench/million.py [--n 1000000] [--db /tmp/ann-1m/million.db] [--rounds 200] [--writes 0]

Building the store is resumable: a store holding the first k memories of the corpus gets the
rest (``bench/corpus.py`` yields the same prefix for every n, so a copy of the 100k store of
``bench/retrieve_latency.py`` is a head start). Vectors come from the hashing FakeEmbedder, as in
``bench/retrieve_latency.py``; the query's embedding time is excluded from the figures. The keyword
source's top 10 is checked against scoring every posting of the query's terms.

Each phase reports the share of the store in the OS page cache as its process started
(``resident``, :mod:`page_cache`): a run of a store nobody read for minutes reads much of it from disk.

``--writes N`` ends the run with N rounds of an add followed by a retrieval (an agent storing each
turn), timed apart from the plain retrievals, then N rounds where a second store on the file (another
service worker) adds, then N rounds where it deletes one of the memories it added, each followed by
a retrieval. The deletes erase the user's saved indexes; the store holding them saves them again
when it closes (timed), so the next run maps them instead of rebuilding. The memories this store
added stay.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported: see retrieve_latency.py

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from corpus import CUSTOMERS, NOW, PRODUCTS, QUERIES, memories
from page_cache import resident_share

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.model import Filters
from engram.stores.sqlite.ann import AnnIndex

USER = "bench"


def fill(memory: Memory, n: int) -> float:
    """Add the corpus's memories beyond those the store already holds; seconds taken."""
    held = memory.store.count(USER)
    started = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for i, item in enumerate(itertools.islice(memories(n, user_id=USER), held, None), start=held):
        batch.append(item)
        if len(batch) == 5000:
            memory.add_many(batch)
            batch = []
            if (i + 1) % 50_000 == 0:
                print(json.dumps({"filled": i + 1, "s": round(time.perf_counter() - started, 1)}), flush=True)
    if batch:
        memory.add_many(batch)
    return time.perf_counter() - started


def bulk_fill(memory: Memory, n: int, block: int = 100_000) -> float:
    """Reach ``n`` memories by copying the corpus's first ``block`` memories in SQL with new note
    numbers, so new texts, hashes and (FakeEmbedder) vectors, keeping their templates, kinds,
    times and entities; the store's triggers index them for keyword search as any insert. The
    pipeline (:func:`fill`) runs at 100-300 memories/s on two shared cores: hours for a million."""
    import hashlib
    import re
    import sqlite3

    conn: sqlite3.Connection = memory.store._conn  # type: ignore[attr-defined]  # the bench's own store
    embedder = FakeEmbedder(384)
    note = re.compile(r"\(note \d+\)$")
    conn.create_function("bench_content", 2, lambda c, i: note.sub(f"(note {i})", c), deterministic=True)
    conn.create_function("bench_hash", 1, lambda c: hashlib.sha256(c.encode()).hexdigest(), deterministic=True)
    conn.create_function("bench_embed", 1, lambda c: embedder.embed_batch([c])[0].tobytes(), deterministic=True)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(memories)")
               if r[1] not in ("rowid", "id", "content", "content_hash", "embedding")]
    kept = ", ".join(columns)
    started = time.perf_counter()
    while (held := memory.store.count(USER)) < n:
        count = min(block - held % block, n - held, 20_000)
        (base,) = conn.execute("SELECT max(rowid) + 1 FROM memories").fetchone()
        start = held % block  # the source rows: notes start .. start + count - 1, rowid = note + 1
        conn.execute("BEGIN")
        conn.execute(
            f"INSERT INTO memories (id, content, content_hash, embedding, {kept}) "
            f"SELECT printf('bulk-%08d', note), c, bench_hash(c), bench_embed(c), {kept} FROM ("
            f"SELECT *, rowid - 1 - ? + ? AS note, bench_content(content, rowid - 1 - ? + ?) AS c FROM memories "
            f"WHERE rowid BETWEEN ? AND ? ORDER BY rowid)",
            (start, held, start, held, start + 1, start + count),
        )
        conn.execute(
            "INSERT INTO memory_entities (memory_rowid, user_id, entity, importance, created_at, memory_id) "
            "SELECT memory_rowid - 1 - ? + ?, user_id, entity, importance, created_at, "
            "printf('bulk-%08d', memory_rowid - 1 - ? + ?) FROM memory_entities WHERE memory_rowid BETWEEN ? AND ?",
            (start, base, start, held, start + 1, start + count),
        )
        conn.execute("COMMIT")
        print(json.dumps({"filled": held + count, "s": round(time.perf_counter() - started, 1)}), flush=True)
    return time.perf_counter() - started


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)

    return {"p50_ms": at(0.5), "p95_ms": at(0.95), "p99_ms": at(0.99)}


def queries(count: int) -> list[str]:
    """The corpus's ten questions, then customer-and-product questions."""
    extra = [f"What did {c} say about {p}?" for c in CUSTOMERS for p in PRODUCTS]
    return (QUERIES + extra[:: max(1, len(extra) // count)])[:count]


def first_retrieve(memory: Memory) -> dict[str, Any]:
    """A cold process's first retrieval (loads the user's vectors), and how long until searches
    use the approximate index (a saved snapshot is mapped at once, otherwise it is built)."""
    config = RetrievalConfig(cache_ttl=0)
    started = time.perf_counter()
    memory.retrieve(QUERIES[0], user_id=USER, now=NOW, config=config)
    first = time.perf_counter() - started
    index = memory.store._indexes.get(USER)  # type: ignore[attr-defined]
    ready_at = None
    if isinstance(index, AnnIndex):
        index.wait()
        ready_at = round(time.perf_counter() - started, 1)
    return {"first_retrieve_s": round(first, 2), "ann_ready_s": ready_at, "index": type(index).__name__}


def measure(memory: Memory, texts: list[str], rounds: int) -> dict[str, Any]:
    config = RetrievalConfig(cache_ttl=0)
    totals: list[float] = []
    stages: dict[str, list[float]] = {}
    for i in range(rounds):
        started = time.perf_counter()
        result = memory.retrieve(texts[i % len(texts)], user_id=USER, now=NOW, config=config)
        elapsed = (time.perf_counter() - started) * 1000
        totals.append(elapsed - result.metadata.stage_ms.get("embed", 0.0))
        for name, ms in result.metadata.stage_ms.items():
            stages.setdefault(name, []).append(ms)
    return {"retrieve": percentiles(totals),
            "stages_p50_ms": {k: percentiles(v)["p50_ms"] for k, v in sorted(stages.items())},
            "stages_p95_ms": {k: percentiles(v)["p95_ms"] for k, v in sorted(stages.items())}}


def writes(memory: Memory, other: Memory, texts: list[str], rounds: int) -> dict[str, Any]:
    """Each round adds one memory, then retrieves: every search follows a change to the user. Then
    as many rounds where ``other`` (a second store on the file: another service worker) adds."""
    config = RetrievalConfig(cache_ttl=0)
    out: dict[str, Any] = {"rounds": rounds}
    added: list[str] = []
    for name, writer in (("", memory), ("_by_another_process", other)):
        add_ms: list[float] = []
        after_ms: list[float] = []
        for i in range(rounds):
            started = time.perf_counter()
            record = writer.add(f"Note {i}{name} of the write rounds: {CUSTOMERS[i % len(CUSTOMERS)]} asked "
                                f"about {PRODUCTS[i % len(PRODUCTS)]}", user_id=USER)
            add_ms.append((time.perf_counter() - started) * 1000)
            if writer is other:
                added.append(record.id)
            started = time.perf_counter()
            result = memory.retrieve(texts[i % len(texts)], user_id=USER, now=NOW, config=config)
            after_ms.append((time.perf_counter() - started) * 1000 - result.metadata.stage_ms.get("embed", 0.0))
        out[f"add{name}"] = percentiles(add_ms)
        out[f"retrieve_after_add{name}"] = percentiles(after_ms)
    delete_ms: list[float] = []
    after_ms = []
    for i, memory_id in enumerate(added):
        started = time.perf_counter()
        other.delete(memory_id, user_id=USER)
        delete_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        result = memory.retrieve(texts[i % len(texts)], user_id=USER, now=NOW, config=config)
        after_ms.append((time.perf_counter() - started) * 1000 - result.metadata.stage_ms.get("embed", 0.0))
    out["delete_by_another_process"] = percentiles(delete_ms)
    out["retrieve_after_delete_by_another_process"] = percentiles(after_ms)
    return {"writes": out}


def vector_recall(memory: Memory, texts: list[str], k: int = 10) -> dict[str, Any]:
    """The store's vector source against a numpy exact scan of the same vectors, and both timed."""
    store: Any = memory.store
    index = store._indexes.get(USER)
    embedder = FakeEmbedder(384)
    alive = np.flatnonzero(index._alive[: index._size])
    # The index's own float32 rows (a view when nothing was removed, else one contiguous copy).
    matrix = index._matrix[: index._size] if len(alive) == index._size else index._matrix[alive]
    ids = [index._ids[i] for i in alive]
    exact_ms: list[float] = []
    source_ms: list[float] = []
    strict = tied = 0.0
    for text in texts:
        query = embedder.embed_batch([text])[0]
        started = time.perf_counter()
        scores = matrix @ query
        top = np.argpartition(-scores, k)[:k]
        exact_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        hits = store.vector_search(USER, query, k, Filters())
        source_ms.append((time.perf_counter() - started) * 1000)
        truth = {ids[i] for i in top}
        kth = float(np.min(scores[top]))
        strict += len(truth & {m for m, _ in hits}) / k
        tied += sum(1 for _, score in hits if score >= kth - 1e-6) / k  # equal scores are not misses
    return {"recall@10": round(strict / len(texts), 4), "recall@10_ties_allowed": round(tied / len(texts), 4),
            "vector_source": percentiles(source_ms), "numpy_exact_scan": percentiles(exact_ms),
            "vectors": len(alive)}


def keyword_agreement(memory: Memory, texts: list[str], k: int = 10) -> dict[str, Any]:
    """The keyword source's top ``k`` (which may prune rows that cannot reach it) against scoring
    every posting of every query term (tests/test_keyword_exact.py holds that to an exhaustive BM25
    of the user's texts), and both timed."""
    from engram.stores.matches import best
    from engram.text import query_terms

    store: Any = memory.store
    index = store._current_postings(USER)
    same = 0.0
    source_ms: list[float] = []
    every_ms: list[float] = []
    for text in texts:
        index._scored = None  # each search computed anew
        started = time.perf_counter()
        hits = store.keyword_search(USER, text, k, Filters())
        source_ms.append((time.perf_counter() - started) * 1000)
        index._scored = None
        started = time.perf_counter()
        matches = index.scores(query_terms(text))
        every = [] if matches is None else best(matches, k, lambda _rows: None)  # no filter: all active
        every_ms.append((time.perf_counter() - started) * 1000)
        if not every:  # no query term occurs: agreeing means finding nothing either
            same += float(not hits)
            continue
        tenth = every[-1][1] - 1e-9
        same += sum(1 for _, score in hits if score >= tenth) / len(every)  # ties count
    return {"keyword_overlap@10_vs_every_posting": round(same / len(texts), 4),
            "keyword_source": percentiles(source_ms), "every_posting": percentiles(every_ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, default=Path("/tmp/ann-1m/million.db"))
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", default="bench/results/million.json")
    parser.add_argument("--bulk", action="store_true", help="reach --n by copying rows in SQL (see bulk_fill)")
    parser.add_argument("--writes", type=int, default=0, help="rounds of an add then a retrieval, at the end")
    args = parser.parse_args()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    memory = Memory(args.db, embedder=FakeEmbedder(384))
    try:
        fill_s = bulk_fill(memory, args.n) if args.bulk else fill(memory, args.n)
        report: dict[str, Any] = {"memories": memory.store.count(USER), "fill_s": round(fill_s, 1)}
    finally:
        memory.close()
    print(json.dumps(report), flush=True)
    if args.fill_only:
        return
    texts = queries(args.queries)
    for phase in ("first process", "restarted process"):  # the second finds the saved snapshot
        # What of the store the OS page cache held as the process started (page_cache.py): at a
        # million memories (5.5 GB) the difference between a warm and a cold run.
        resident = resident_share(args.db)
        memory = Memory(args.db, embedder=FakeEmbedder(384))
        try:
            row = {"phase": phase, "resident": resident, **first_retrieve(memory)}
            print(json.dumps(row), flush=True)
            if phase == "restarted process":
                row.update(measure(memory, texts, args.rounds))
                row.update(vector_recall(memory, texts))
                row.update(keyword_agreement(memory, texts))
                if args.writes:
                    other = Memory(args.db, embedder=FakeEmbedder(384))
                    try:
                        row.update(writes(memory, other, texts, args.writes))
                    finally:
                        other.close()
                print(json.dumps(row), flush=True)
            report[phase] = row
        finally:
            started = time.perf_counter()
            memory.close()
            if phase == "restarted process" and args.writes:
                report[phase]["close_s"] = round(time.perf_counter() - started, 2)  # saves what deletes erased
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
