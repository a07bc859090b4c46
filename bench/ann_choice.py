"""Which approximate index for a very large user: build time, recall@10 against an exact scan,
single-thread query latency, memory and persistence, on MiniLM-like vectors.

    python bench/ann_choice.py [--n 100000] [--queries 200] [--methods binary,int8,faiss-ivf,...]

The vectors are Gaussian samples with the mean and covariance of real all-MiniLM-L6-v2 embeddings
(``--data minilm-fitted``, the default: their spectrum without their neighbourhoods, a pessimistic
case), the ~22k real vectors themselves (``--data minilm-real``, the vectors in Engram's embedding
cache), real sentence vectors searched by real questions (``--data minilm-sentences``, the dev sets'
conversations: see :func:`minilm_sentences`), or synthetic topic clusters (``--data clusters``, an
easy case); ``--db`` reads a benchmark store's vectors instead (queries: stored vectors plus a
little noise). Recall@10 counts a returned row as right when it scores at least the exact 10th
score (ties between equal vectors are not misses).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]
K = 10
MINILM_CACHE = Path.home() / ".cache/engram/embeddings.sqlite"


def minilm_like(n: int, dim: int, points_seed: int, centers: int = 4000) -> Matrix:
    rng = np.random.default_rng(0)  # the same topics for the data and the queries
    mean = rng.standard_normal(dim).astype(np.float32)
    mean /= np.linalg.norm(mean)
    topics = rng.standard_normal((centers, dim)).astype(np.float32) / np.sqrt(dim)
    rng = np.random.default_rng(points_seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        chunk = 0.45 * mean + 1.0 * topics[rng.integers(0, centers, m)]
        chunk += 0.8 * rng.standard_normal((m, dim)).astype(np.float32) / np.sqrt(dim)
        out[start : start + m] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    return out


def minilm_real() -> Matrix:
    conn = sqlite3.connect(f"file:{MINILM_CACHE}?mode=ro", uri=True)
    blobs = [r[0] for r in conn.execute("SELECT vector FROM embeddings WHERE model_id LIKE 'all-MiniLM%'")]
    real = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    unit: Matrix = real / np.linalg.norm(real, axis=1, keepdims=True)
    return unit


def minilm_fitted(n: int, points_seed: int) -> Matrix:
    """Gaussian samples with the mean and covariance of real all-MiniLM-L6-v2 vectors (the embedding
    cache of the LongMemEval/LoCoMo runs): their anisotropy and spectrum, without their clusters,
    which is the harder case for a quantized scan or a graph."""
    conn = sqlite3.connect(f"file:{MINILM_CACHE}?mode=ro", uri=True)
    blobs = [r[0] for r in conn.execute("SELECT vector FROM embeddings WHERE model_id LIKE 'all-MiniLM%'")]
    real = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).astype(np.float64)
    mean, cov = real.mean(axis=0), np.cov(real, rowvar=False)
    root = np.linalg.cholesky(cov + 1e-9 * np.eye(len(mean)))
    rng = np.random.default_rng(points_seed)
    out = np.empty((n, len(mean)), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        chunk = mean + rng.standard_normal((m, len(mean))) @ root.T
        out[start : start + m] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    return out


DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def minilm_sentences(n: int) -> tuple[Matrix, Matrix]:
    """Real all-MiniLM-L6-v2 vectors of every sentence of the dev sets' conversations (LongMemEval
    and LoCoMo, ~416k, read from ``../shared/data/``), and of their ~400 questions as the queries:
    the realistic case, questions searched against statements. Embedded once into the embedding
    cache (~45 min on two cores), then read from it."""
    import gzip

    from engram.embedders import default_embedder
    from engram.eval.cached_embedder import CachedEmbedder
    from engram.retrieve.sentences import split_sentences

    if not DATA.is_dir():
        raise SystemExit(f"--data minilm-sentences reads the dev sets from {DATA}, which is absent")
    with gzip.open(DATA / "longmemeval_s_dev.json.gz") as handle:
        lme = json.load(handle)
    locomo = json.loads((DATA / "locomo_dev.json").read_text())
    turns = [t["content"] for item in lme for session in item["haystack_sessions"] for t in session]
    turns += [t["text"] for item in locomo for key, session in item["conversation"].items()
              if key.startswith("session_") and isinstance(session, list) for t in session]
    questions = [item["question"] for item in lme] + [qa["question"] for item in locomo for qa in item["qa"]]
    sentences = list(dict.fromkeys(s for turn in turns for s in split_sentences(turn) if len(s) > 12))[:n]
    embedder = CachedEmbedder(default_embedder())
    vectors = np.concatenate([embedder.embed_batch(sentences[i : i + 2000]) for i in range(0, len(sentences), 2000)])
    return vectors.astype(np.float32), embedder.embed_batch(questions).astype(np.float32)


def store_vectors(db: Path, n: int) -> Matrix:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    blobs = [r[0] for r in conn.execute("SELECT embedding FROM memories WHERE embedding IS NOT NULL LIMIT ?", (n,))]
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).copy()


def recall(found: list[int], kth: float, data: Matrix, query: Matrix) -> float:
    """Share of the top K found that score at least the exact K-th score."""
    scores = data[np.asarray(found[:K], dtype=np.int64)] @ query
    return float(np.count_nonzero(scores >= kth - 1e-6)) / K


def timed(search: Callable[[Matrix], list[int]], queries: Matrix) -> tuple[list[list[int]], list[float]]:
    results, ms = [], []
    for q in queries:
        started = time.perf_counter()
        results.append(search(q))
        ms.append((time.perf_counter() - started) * 1000)
    return results, ms


def rescore(data: Matrix, q: Matrix, pool: npt.NDArray[np.int64]) -> list[int]:
    scores = data[pool] @ q
    return [int(pool[i]) for i in np.argsort(-scores)[:K]]


def methods(data: Matrix, tmp: Path) -> dict[str, Callable[[], tuple[Callable[[Matrix], list[int]], dict[str, Any]]]]:
    import faiss
    import simsimd

    faiss.omp_set_num_threads(1)

    def engram_ann() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
        """The store's own approximate index (``AnnIndex``, its default probes), searched as the store does."""
        from engram.model import KINDS, STATUSES
        from engram.stores.sqlite.ann import AnnIndex

        n = len(data)
        started = time.perf_counter()
        index = AnnIndex.of_arrays(data.shape[1], np.arange(1, n + 1, dtype=np.int64), [str(i) for i in range(n)],
                                   data, np.full(n, KINDS.index("message"), dtype=np.int8),
                                   np.full(n, STATUSES.index("active"), dtype=np.int8))
        index.attach("bench", None)
        index.wait()
        build = time.perf_counter() - started

        def search(q: Matrix) -> list[int]:
            hits = index.search(q, K, statuses=("active",), kinds=None, allowed=None)
            return [int(memory_id) for memory_id, _ in hits]
        return search, {"build_s": round(build, 1), "lists": int(index._ivf.nlist), "nprobe": index._params().nprobe}

    def exact() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
        def search(q: Matrix) -> list[int]:
            s = data @ q
            top = np.argpartition(-s, K)[:K]
            return [int(i) for i in top[np.argsort(-s[top])]]
        return search, {"mb": data.nbytes >> 20}

    def binary(pool: int) -> Callable[[], tuple[Callable[[Matrix], list[int]], dict[str, Any]]]:
        def make() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
            started = time.perf_counter()
            bits = np.packbits(data > 0, axis=1)
            build = time.perf_counter() - started

            def search(q: Matrix) -> list[int]:
                d = np.asarray(simsimd.cdist(np.packbits(q > 0)[None, :], bits, metric="hamming", dtype="bin8"))[0]
                return rescore(data, q, np.argpartition(d, pool)[:pool])
            return search, {"build_s": round(build, 2), "mb": bits.nbytes >> 20, "persist": "not needed"}
        return make

    def int8(pool: int) -> Callable[[], tuple[Callable[[Matrix], list[int]], dict[str, Any]]]:
        def make() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
            started = time.perf_counter()
            codes = np.clip(np.rint(data * 254), -127, 127).astype(np.int8)
            build = time.perf_counter() - started

            def search(q: Matrix) -> list[int]:
                qc = np.clip(np.rint(q * 254), -127, 127).astype(np.int8)[None, :]
                s = np.asarray(simsimd.cdist(qc, codes, metric="dot"), dtype=np.float32)[0]
                return rescore(data, q, np.argpartition(-s, pool)[:pool])
            return search, {"build_s": round(build, 2), "mb": codes.nbytes >> 20, "persist": "not needed"}
        return make

    def prescan(pool: int) -> Callable[[], tuple[Callable[[Matrix], list[int]], dict[str, Any]]]:
        """The exact search's pre-scan as Engram runs it (engram.stores.sqlite.prescan)."""
        def make() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
            from engram.stores.sqlite.prescan import Prescan

            started = time.perf_counter()
            codes = Prescan(data, len(data), len(data))
            build = time.perf_counter() - started

            def search(q: Matrix) -> list[int]:
                s = codes.scores(q, len(data))
                return rescore(data, q, np.argpartition(-s, pool)[:pool])
            return search, {"build_s": round(build, 2), "mb": codes.nbytes >> 20, "persist": "not needed"}
        return make

    built: dict[bool, tuple[Any, float]] = {}  # one IVF build serves every nprobe

    def faiss_ivf(nprobe: int, sq8: bool) -> Callable[[], tuple[Callable[[Matrix], list[int]], dict[str, Any]]]:
        def make() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
            nlist = int(np.sqrt(len(data)))
            index: Any
            if sq8 in built:
                index, build = built[sq8]
                index.nprobe = nprobe

                def again(q: Matrix) -> list[int]:
                    return rescore(data, q, index.search(q[None, :], 10 * K)[1][0].astype(np.int64))
                return again, {"build_s": round(build, 1), "nlist": nlist}
            started = time.perf_counter()
            quantizer = faiss.IndexFlatIP(data.shape[1])
            if sq8:
                index = faiss.IndexIVFScalarQuantizer(
                    quantizer, data.shape[1], nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
            else:
                index = faiss.IndexIVFFlat(quantizer, data.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
            index.cp.niter = 10
            sample = data[np.random.default_rng(0).choice(len(data), min(len(data), 40 * nlist), replace=False)]
            index.train(sample)
            index.add(data)
            build = time.perf_counter() - started
            built[sq8] = index, build
            index.nprobe = nprobe
            path = tmp / "ivf.faiss"
            faiss.write_index(index, str(path))
            started = time.perf_counter()
            faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
            mapped = time.perf_counter() - started

            def search(q: Matrix) -> list[int]:
                return rescore(data, q, index.search(q[None, :], 10 * K)[1][0].astype(np.int64))
            return search, {"build_s": round(build, 1), "nlist": nlist, "mb": path.stat().st_size >> 20,
                            "mmap_open_s": round(mapped, 3)}
        return make

    def faiss_hnsw(ef: int) -> Callable[[], tuple[Callable[[Matrix], list[int]], dict[str, Any]]]:
        def make() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
            started = time.perf_counter()
            index = faiss.IndexHNSWFlat(data.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 100
            index.add(data)
            build = time.perf_counter() - started
            index.hnsw.efSearch = ef
            path = tmp / "hnsw.faiss"
            faiss.write_index(index, str(path))

            def search(q: Matrix) -> list[int]:
                return rescore(data, q, index.search(q[None, :], 4 * K)[1][0].astype(np.int64))
            return search, {"build_s": round(build, 1), "mb": path.stat().st_size >> 20}
        return make

    def usearch_hnsw(dtype: str, ef: int) -> Callable[[], tuple[Callable[[Matrix], list[int]], dict[str, Any]]]:
        def make() -> tuple[Callable[[Matrix], list[int]], dict[str, Any]]:
            from usearch.index import Index  # not a dependency: pip install usearch to compare it

            started = time.perf_counter()
            index = Index(ndim=data.shape[1], metric="ip", dtype=dtype, connectivity=16, expansion_add=128)
            index.add(np.arange(len(data)), data, threads=1)
            build = time.perf_counter() - started
            path = tmp / f"usearch-{dtype}.usearch"
            index.save(str(path))
            started = time.perf_counter()
            viewed = Index.restore(str(path), view=True)
            assert viewed is not None
            mapped = time.perf_counter() - started
            viewed.expansion_search = ef  # type: ignore[misc]  # settable at run time

            def search(q: Matrix) -> list[int]:
                keys = viewed.search(q, 4 * K, threads=1).keys
                return rescore(data, q, np.asarray(keys, dtype=np.int64))
            return search, {"build_s": round(build, 1), "mb": path.stat().st_size >> 20,
                            "view_open_s": round(mapped, 3), "searched": "memory-mapped view"}
        return make

    return {
        "exact-f32": exact,
        "binary-pool500": binary(500), "binary-pool2000": binary(2000),
        "int8-pool256": int8(256), "pca128-int8-pool1000": prescan(1000),
        "faiss-ivf-nprobe16": faiss_ivf(16, False), "faiss-ivf-nprobe48": faiss_ivf(48, False),
        "faiss-ivfsq8-nprobe16": faiss_ivf(16, True), "faiss-ivfsq8-nprobe32": faiss_ivf(32, True),
        "faiss-ivfsq8-nprobe64": faiss_ivf(64, True), "faiss-ivfsq8-nprobe125": faiss_ivf(125, True),
        "faiss-hnsw-ef64": faiss_hnsw(64), "engram-ann": engram_ann,
        "usearch-i8-ef64": usearch_hnsw("i8", 64), "usearch-i8-ef128": usearch_hnsw("i8", 128),
        "usearch-f16-ef64": usearch_hnsw("f16", 64),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--methods", help="comma-separated names; all when omitted")
    parser.add_argument("--db", type=Path, help="read this benchmark store's vectors instead")
    parser.add_argument("--data", choices=["clusters", "minilm-fitted", "minilm-real", "minilm-sentences"],
                        default="minilm-fitted")
    args = parser.parse_args()
    dim = 384
    if args.db:
        data = store_vectors(args.db, args.n)
        queries = data[np.random.default_rng(1).choice(len(data), args.queries, replace=False)] + 0.0
        queries += np.random.default_rng(2).standard_normal(queries.shape).astype(np.float32) * 0.03
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    elif args.data == "minilm-real":  # every cached vector; the queries are held out of the data
        real = minilm_real()[np.random.default_rng(1).permutation(len(minilm_real()))]
        data, queries = real[args.queries :], real[: args.queries]
    elif args.data == "minilm-sentences":
        data, queries = minilm_sentences(args.n)
    elif args.data == "minilm-fitted":
        data = minilm_fitted(args.n, points_seed=1)
        queries = minilm_fitted(args.queries, points_seed=2)
    else:
        data = minilm_like(args.n, dim, points_seed=1)
        queries = minilm_like(args.queries, dim, points_seed=2)  # the same topics, fresh points
    kths = [float(np.partition(data @ q, -K)[-K]) for q in queries]
    with tempfile.TemporaryDirectory(dir="/tmp/ann-1m") as tmp:
        table = methods(data, Path(tmp))
        for name in (args.methods.split(",") if args.methods else table):
            search, info = table[name]()
            found, ms = timed(search, queries)
            rec = float(np.mean([recall(f, kth, data, q) for f, kth, q in zip(found, kths, queries, strict=True)]))
            ordered = sorted(ms)
            row = {"n": len(data), "method": name, "recall@10": round(rec, 4),
                   "p50_ms": round(ordered[len(ms) // 2], 2), "p95_ms": round(ordered[int(len(ms) * 0.95)], 2), **info}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
