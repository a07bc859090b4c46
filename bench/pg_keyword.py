"""PostgreSQL keyword search against an exhaustive BM25 of each user's texts: overlap@10 and latency.

    python bench/pg_keyword.py --url URL [--trees /work/main,/work/wt-x] [--users 10x10000] [--fill]

``--url`` is a database (pgvector installed) that holds the users' memories, e.g. one that
bench/retrieve_latency.py --postgres-url filled (one user, "bench"); ``--fill`` first adds
``--users`` (COUNTxSIZE: that many users of that many memories, bench/corpus.py, seeds per user)
to an empty one. The reference reads every memory of a user and scores every one with the BM25 of
engram.text (the user's own N, average length and document frequencies), ties by id, as the stores
rank. Each tree (an engram source tree) is measured in a fresh process of its own, in turn, so a
before/after pair comes from one run on the same machine; the first search of each user is timed
apart (cold: the slowest is reported), then, once any postings loading in the background are
held, ``--rounds`` searches over the queries and users.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CUSTOMERS, PRODUCTS, QUERIES, memories

WORDS = sorted({w for phrase in CUSTOMERS + PRODUCTS for w in phrase.split()} | {
    "ordered", "kg", "delivery", "invoice", "overdue", "price", "quote", "shipment", "late", "roasted", "batch",
    "stale", "discount", "market", "owner", "menus", "note", "bags", "prefers", "friday", "days"})


def queries(count: int, seed: int = 3) -> list[str]:
    rnd = random.Random(seed)
    return list(QUERIES) + [" ".join(rnd.sample(WORDS, rnd.randint(1, 4))) for _ in range(count - len(QUERIES))]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def exhaustive(rows: list[tuple[Any, ...]], text: str, n: int) -> list[str]:
    from engram.text import bm25, bm25_idf, query_terms

    terms = query_terms(text)
    docs = len(rows)
    if not docs or not terms:
        return []
    df = {t: sum(1 for _, d, _ in rows if t in d) for t in terms}
    idf = {t: bm25_idf(docs, df[t]) for t in terms if df[t]}
    average = sum(length for _, _, length in rows) / docs
    scored = [(-bm25([(float(d[t]), w) for t, w in idf.items() if t in d], length, average), memory_id)
              for memory_id, d, length in rows if any(t in d for t in idf)]
    return [memory_id for _, memory_id in sorted(scored)[:n]]


def measure(url: str, rounds: int, texts: list[str]) -> dict[str, Any]:
    import psycopg

    from engram.model import Filters
    from engram.stores.postgres.store import PostgresStore
    from engram.text import memory_terms

    with psycopg.connect(url) as conn:
        users = [r[0] for r in conn.execute("SELECT DISTINCT user_id FROM engram_memories ORDER BY 1").fetchall()]
    store = PostgresStore(url, min_size=1, max_size=2)
    try:
        cold = {}
        for user in users:
            started = time.perf_counter()
            store.keyword_search(user, texts[0], 10, Filters())
            cold[user] = (time.perf_counter() - started) * 1000
        held = getattr(store._keywords, "get", None)  # trees with postings: wait for the loads under way
        for _ in range(6000 if held else 0):
            if all(held(user) is not None for user in users):
                break
            time.sleep(0.01)
        times: list[float] = []
        for i in range(rounds):
            user = users[i % len(users)]
            started = time.perf_counter()
            store.keyword_search(user, texts[i % len(texts)], 10, Filters())
            times.append((time.perf_counter() - started) * 1000)
        overlaps: list[float] = []
        with psycopg.connect(url) as conn:
            for user in users[:10]:  # the reference is slow: the first ten users
                rows = [(memory_id, Counter(terms), len(terms))
                        for memory_id, *columns in conn.execute(
                            "SELECT id, content, role, subject, predicate, object, trigger_text, action_text "
                            "FROM engram_memories WHERE user_id = %s AND status = 'active'", (user,)).fetchall()
                        for terms in [memory_terms(*columns)]]
                for text in texts:
                    want = exhaustive(rows, text, 10)
                    got = [h[0] for h in store.keyword_search(user, text, 10, Filters())]
                    if want:
                        overlaps.append(len(set(want) & set(got)) / len(want))
    finally:
        store.close()
    return {
        "users": len(users), "p50_ms": round(percentile(times, 0.5), 2), "p95_ms": round(percentile(times, 0.95), 2),
        "mean_ms": round(statistics.mean(times), 2), "cold_max_ms": round(max(cold.values()), 1),
        "overlap_at_10": round(statistics.mean(overlaps), 4), "overlap_min": round(min(overlaps), 2),
        "queries_compared": len(overlaps),
    }


def fill(url: str, spec: str) -> None:
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder

    count, size = (int(x) for x in spec.split("x"))
    memory = Memory(url, embedder=FakeEmbedder(384))
    try:
        for u in range(count):
            batch = list(memories(size, user_id=f"user-{u:03d}", seed=100 + u))
            for start in range(0, size, 2000):
                memory.add_many(batch[start : start + 2000])
    finally:
        memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--trees", default="", help="engram source trees (PYTHONPATH), each measured in turn")
    parser.add_argument("--users", default="10x10000")
    parser.add_argument("--fill", action="store_true")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        fill(args.url, args.users)
    if args.measure or not args.trees:
        print(json.dumps(measure(args.url, args.rounds, queries(args.queries))))
        return
    for tree in args.trees.split(","):
        env = {**os.environ, "PYTHONPATH": tree, "OPENBLAS_NUM_THREADS": "1"}
        out = subprocess.run([sys.executable, __file__, "--url", args.url, "--rounds", str(args.rounds),
                              "--queries", str(args.queries), "--measure"],
                             env=env, capture_output=True, text=True, check=True).stdout
        print(json.dumps({"tree": tree, **json.loads(out.strip().splitlines()[-1])}), flush=True)


if __name__ == "__main__":
    main()
