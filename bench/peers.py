"""Engram's search latency beside its peers': same memories, same vectors, same queries, one run.

Each size holds ``--users`` users of equal size, built from :mod:`corpus` with one seed per user
(:func:`multitenant.build`: at 100k and 10 users it is the multi-tenant benchmark's ``even`` store).
The peers are filled from that Engram store's rows, so every system holds the same texts and
vectors (the hashing FakeEmbedder's). Query embedding is excluded for every system: the peers are
handed the query's vector, and the time Engram and Mem0 spend embedding inside a search is subtracted.

Systems, each searching one user's memories for 10 results:

* ``engram``: ``Memory.retrieve`` with the default config (hybrid; result cache off, since queries
  repeat);
* ``engram-vector``: the same with ``search_type="semantic"``;
* ``lancedb``: LanceDB hybrid search (vector + full-text, its default RRF reranker), the user as a
  pre-filter on a bitmap index; no vector index (below LanceDB's advice of 100k+ rows a table, a
  flat scan is its exact and quickest search);
* ``chroma``: Chroma's HNSW (cosine) with the user as a ``where`` filter;
* ``mem0``: Mem0 OSS with its local Qdrant, ``search`` with the user as a filter. Filled through
  ``Memory.add(infer=False)`` (the path that calls no LLM). Its keyword and entity signals need
  spaCy and fastembed models from a hub that this machine cannot reach, so it searches by vector
  alone here; filling took ~2 ms a memory (22 s for 10k), so it runs only at sizes up to ``--mem0-max``;
* ``numpy``: an exact scan of the user's vectors already in memory (``matrix @ q``, top 10), the
  physical floor.

Every measurement is a fresh process that opens the store from disk and times ``--queries``
searches with no warm-up (users chosen uniformly, the same sequence for every system), so the
first search of each user pays whatever its system loads; ``first_ms`` is the very first search.
``--repeat`` alternates the systems that many rounds and reports each run and the median one.
``vector_recall@10`` compares a vector-only system's 10 with the exact scan's (a check that each
peer searched what it was meant to).

The peers are not Engram's dependencies: ``make bench-peers`` installs them into a virtual
environment of their own (``.venv-peers``) and runs this with it::

    .venv-peers/bin/python bench/peers.py --db-dir /tmp/peers [--sizes 10000,100000]
        [--systems engram,lancedb,...] [--queries 300] [--repeat 3]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see retrieve_latency.py)
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # Chroma's

import argparse
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import NOW, QUERIES
from multitenant import DIMENSIONS, build
from retrieve_latency import percentile

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.ingest.embed import embed_texts

SYSTEMS = ("engram", "engram-vector", "lancedb", "chroma", "mem0", "numpy")
#: Systems that answer by similarity alone, whose 10 are checked against the exact scan's. Engram's
#: answers are ranked by more than similarity (and deduplicated), so differ from it by design; its
#: vector source's recall is measured by million.py.
VECTOR_ONLY = ("chroma", "mem0")
#: A search: (user, query text, query vector) -> (the 10 ids, milliseconds of query embedding to exclude).
Search = Callable[[str, str, np.ndarray[Any, Any]], tuple[list[str], float]]


def users_of(size: int, count: int) -> dict[str, int]:
    return {f"u{i:04d}": size // count for i in range(count)}


def rows(engram_db: Path, batch: int = 5000) -> Iterator[list[tuple[str, str, str, np.ndarray[Any, Any], str]]]:
    """(id, user, text, vector, created_at) of every active memory, in batches."""
    conn = sqlite3.connect(f"file:{engram_db}?mode=ro", uri=True)
    try:
        cursor = conn.execute(
            "SELECT id, user_id, content, embedding, created_at FROM memories WHERE status = 'active' ORDER BY rowid")
        while chunk := cursor.fetchmany(batch):
            yield [(i, u, c, np.frombuffer(e, dtype=np.float32), str(t)) for i, u, c, e, t in chunk]
    finally:
        conn.close()


def workload(users: dict[str, int], n: int) -> list[tuple[str, str]]:
    rng = random.Random(23)
    return [(rng.choice(list(users)), rng.choice(QUERIES)) for _ in range(n)]


# --- filling the peers from the Engram store -------------------------------------------------

def fill_lancedb(path: Path, engram_db: Path) -> None:
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(path))
    schema = pa.schema([("id", pa.string()), ("user_id", pa.string()), ("content", pa.string()),
                        ("vector", pa.list_(pa.float32(), DIMENSIONS))])
    table = db.create_table("memories", schema=schema, mode="overwrite")
    for chunk in rows(engram_db):
        table.add(pa.table({"id": [r[0] for r in chunk], "user_id": [r[1] for r in chunk],
                            "content": [r[2] for r in chunk],
                            "vector": pa.array([r[3].tolist() for r in chunk], type=schema.field("vector").type)}))
    table.create_fts_index("content", replace=True)
    table.create_scalar_index("user_id", index_type="BITMAP", replace=True)
    table.optimize()


def fill_chroma(path: Path, engram_db: Path) -> None:
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    collection = client.get_or_create_collection("memories", configuration={"hnsw": {"space": "cosine"}})
    for chunk in rows(engram_db):
        collection.add(ids=[r[0] for r in chunk], embeddings=[r[3] for r in chunk],
                       documents=[r[2] for r in chunk], metadatas=[{"user_id": r[1]} for r in chunk])


def mem0_memory(path: Path) -> Any:
    os.environ.setdefault("OPENAI_API_KEY", "unused")  # its LLM is built at start, never called here
    from mem0 import Memory as Mem0

    embedder = FakeEmbedder(DIMENSIONS)

    class Hashing:  # Mem0's embedder seam, given the same vectors as everyone else
        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return [float(x) for x in embed_texts(embedder, [text], as_query=memory_action == "search")[0]]

    memory = Mem0.from_config({
        "vector_store": {"provider": "qdrant", "config": {
            "path": str(path), "collection_name": "memories", "embedding_model_dims": DIMENSIONS, "on_disk": True}},
        "history_db_path": str(path / "history.db"),
    })
    memory.embedding_model = Hashing()
    return memory


def fill_mem0(path: Path, engram_db: Path) -> None:
    memory = mem0_memory(path)
    for chunk in rows(engram_db, 1000):
        for _id, user, text, _vector, _created in chunk:
            memory.add(text, user_id=user, infer=False)


FILLS = {"lancedb": fill_lancedb, "chroma": fill_chroma, "mem0": fill_mem0}


# --- searching, one system a process ---------------------------------------------------------

def open_search(system: str, size_dir: Path, engram_db: Path) -> tuple[Search, Callable[[], None]]:
    if system in ("engram", "engram-vector"):
        memory = Memory(engram_db, embedder=FakeEmbedder(DIMENSIONS))
        config = RetrievalConfig(cache_ttl=0, search_type="hybrid" if system == "engram" else "semantic")

        def engram(user: str, query: str, _vector: np.ndarray[Any, Any]) -> tuple[list[str], float]:
            result = memory.retrieve(query, user_id=user, now=NOW, config=config)
            return [m.id for m in result.memories], result.metadata.stage_ms.get("embed", 0.0)
        return engram, memory.close
    if system == "lancedb":
        import lancedb

        table = lancedb.connect(str(size_dir / "lancedb")).open_table("memories")

        def lance(user: str, query: str, vector: np.ndarray[Any, Any]) -> tuple[list[str], float]:
            hits = (table.search(query_type="hybrid").vector(vector).text(query)
                    .where(f"user_id = '{user}'", prefilter=True).limit(10).to_list())
            return [h["id"] for h in hits], 0.0
        return lance, lambda: None
    if system == "chroma":
        import chromadb

        collection = chromadb.PersistentClient(path=str(size_dir / "chroma")).get_collection("memories")

        def chroma(user: str, _query: str, vector: np.ndarray[Any, Any]) -> tuple[list[str], float]:
            found = collection.query(query_embeddings=[vector], n_results=10, where={"user_id": user})
            return list(found["ids"][0]), 0.0
        return chroma, lambda: None
    if system == "mem0":
        memory = mem0_memory(size_dir / "mem0")
        embedded = memory.embedding_model.embed

        def mem0(user: str, query: str, _vector: np.ndarray[Any, Any]) -> tuple[list[str], float]:
            spent = [0.0]

            def timed_embed(text: str, memory_action: str | None = None) -> list[float]:
                started = time.perf_counter()
                try:
                    return embedded(text, memory_action)
                finally:
                    spent[0] += (time.perf_counter() - started) * 1000

            memory.embedding_model.embed = timed_embed
            # Mem0 keeps its own ids; the text tells which memory it is.
            found = memory.search(query, filters={"user_id": user}, top_k=10)["results"]
            return [r["memory"] for r in found], spent[0]
        return mem0, lambda: None
    raise SystemExit(f"unknown system {system!r}")


class Exact:
    """Each user's vectors, read outside the timings; the numpy floor and the recall reference."""

    def __init__(self, engram_db: Path) -> None:
        self._db = engram_db
        self._users: dict[str, tuple[np.ndarray[Any, Any], list[str], list[str]]] = {}

    def user(self, user: str) -> tuple[np.ndarray[Any, Any], list[str], list[str]]:
        if user not in self._users:
            conn = sqlite3.connect(f"file:{self._db}?mode=ro", uri=True)
            found = conn.execute("SELECT id, embedding, content FROM memories WHERE user_id = ? AND status = 'active'",
                                 (user,)).fetchall()
            conn.close()
            matrix = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32).reshape(len(found), -1)
            self._users[user] = (matrix, [r[0] for r in found], [r[2] for r in found])
        return self._users[user]

    def search(self, user: str, _query: str, vector: np.ndarray[Any, Any]) -> tuple[list[str], float]:
        matrix, ids, _ = self.user(user)
        scores = matrix @ vector
        top = np.argpartition(-scores, 9)[:10]
        return [ids[i] for i in top[np.argsort(-scores[top])]], 0.0

    def best(self, user: str, vector: np.ndarray[Any, Any]) -> tuple[set[str], set[str]]:
        """The exact 10 as ids and as texts (Mem0 keeps ids of its own)."""
        matrix, ids, texts = self.user(user)
        top = np.argpartition(-(matrix @ vector), 9)[:10]
        return {ids[i] for i in top}, {texts[i] for i in top}


def measure(system: str, size_dir: Path, engram_db: Path, users: dict[str, int], n: int) -> dict[str, Any]:
    embedder = FakeEmbedder(DIMENSIONS)
    queries = workload(users, n)
    vectors = {q: np.asarray(embed_texts(embedder, [q], as_query=True)[0], dtype=np.float32) for q in QUERIES}
    exact = Exact(engram_db)
    if system == "numpy":
        for user in users:
            exact.user(user)  # the floor: vectors already in memory
        search, close = exact.search, lambda: None
    else:
        search, close = open_search(system, size_dir, engram_db)
    times: list[float] = []
    found: list[list[str]] = []
    try:
        for user, query in queries:
            started = time.perf_counter()
            hits, embedding_ms = search(user, query, vectors[query])
            times.append((time.perf_counter() - started) * 1000 - embedding_ms)
            found.append(hits)
    finally:
        close()
    out: dict[str, Any] = {f"p{q}_ms": round(percentile(times, q / 100), 2) for q in (50, 95, 99)}
    out["first_ms"] = round(times[0], 1)
    if system in VECTOR_ONLY:
        recalls = []
        for (user, query), hits in zip(queries, found, strict=True):
            by_id, by_text = exact.best(user, vectors[query])
            recalls.append(len((by_text if system == "mem0" else by_id) & set(hits)) / 10)
        out["vector_recall@10"] = round(statistics.mean(recalls), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db-dir", type=Path, required=True, help="the stores, built once and reused")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mem0-max", type=int, default=10_000, help="largest size Mem0 is filled to")
    parser.add_argument("--out", default="bench/results/peers.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # system,size: one measurement
    args = parser.parse_args()
    if args.child:
        system, size = args.child.split(",")
        size_dir = args.db_dir / f"{size}x{args.users}"
        print(json.dumps(measure(system, size_dir, size_dir / "engram.db", users_of(int(size), args.users),
                                 args.queries)))
        return
    results: dict[str, Any] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        size_dir = args.db_dir / f"{size}x{args.users}"
        size_dir.mkdir(parents=True, exist_ok=True)
        users = users_of(size, args.users)
        build(size_dir / "engram.db", users)
        systems = [s for s in args.systems.split(",") if s != "mem0" or size <= args.mem0_max]
        filled: dict[str, float | None] = {}
        for system in systems:
            target = size_dir / system
            if system in FILLS and not target.exists():
                started = time.perf_counter()
                FILLS[system](target, size_dir / "engram.db")
                filled[system] = round(time.perf_counter() - started, 1)
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
        for _ in range(args.repeat):
            for system in systems:
                child = [sys.executable, __file__, "--db-dir", str(args.db_dir), "--users", str(args.users),
                         "--queries", str(args.queries), "--child", f"{system},{size}"]
                done = subprocess.run(child, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise SystemExit(f"{system} at {size} failed:\n{done.stderr[-3000:]}")
                runs[system].append(json.loads(done.stdout.strip().splitlines()[-1]))
        for system, measured in runs.items():
            median = sorted(measured, key=lambda r: r["p50_ms"])[len(measured) // 2]
            results[f"{system}@{size}"] = {
                "memories": size, "users": args.users, "fill_s": filled.get(system),
                "runs_p50_p95_p99_ms": [[r["p50_ms"], r["p95_ms"], r["p99_ms"]] for r in measured], **median,
            }
            print(json.dumps({f"{system}@{size}": results[f"{system}@{size}"]}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
