"""A large user's exact vector search scans int8 codes of leading principal components first, then
re-scores a pool in float32: the results must match an exact float32 scan, also after writes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engram.stores.sqlite.prescan import Prescan
from engram.stores.sqlite.vectors import QUANTIZE_ABOVE, ExactIndex

DIMS = 384
ROWS = QUANTIZE_ABOVE + 5_000
K = 50


def _clustered(n: int, seed: int) -> npt.NDArray[np.float32]:
    """Unit vectors around a shared mean and 300 topics, as sentence embeddings cluster."""
    rng = np.random.default_rng(seed)
    topics = np.random.default_rng(99).standard_normal((300, DIMS)) / np.sqrt(DIMS)
    mean = np.random.default_rng(98).standard_normal(DIMS) / np.sqrt(DIMS)
    rows = 0.5 * mean + topics[rng.integers(0, 300, n)] + 0.7 * rng.standard_normal((n, DIMS)) / np.sqrt(DIMS)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _index(vectors: npt.NDArray[np.float32]) -> ExactIndex:
    n = len(vectors)
    return ExactIndex.load(
        DIMS, list(range(1, n + 1)), [f"m{i:06d}" for i in range(n)], [v.tobytes() for v in vectors],
        ["message"] * n, ["active"] * n,
    )


def _search(index: ExactIndex, query: npt.NDArray[np.float32], n: int = K) -> list[tuple[str, float]]:
    return index.search(query, n, statuses=("active",), kinds=None, allowed=None)


def _recall(
    index: ExactIndex, vectors: npt.NDArray[np.float32], ids: list[str], queries: npt.NDArray[np.float32]
) -> float:
    """Share of returned rows that score at least the exact K-th score."""
    hits = 0
    for q in queries:
        exact = vectors @ q
        kth = np.partition(exact, len(exact) - K)[len(exact) - K]
        score = {m: float(s) for m, s in zip(ids, exact, strict=True)}
        found = _search(index, q)
        assert len(found) == K
        hits += sum(score[m] >= kth - 1e-6 for m, _ in found)
    return hits / (K * len(queries))


def test_large_search_matches_an_exact_scan() -> None:
    vectors = _clustered(ROWS, 1)
    index = _index(vectors)
    queries = _clustered(40, 2)
    assert _recall(index, vectors, [f"m{i:06d}" for i in range(ROWS)], queries) >= 0.99
    assert index._prescan is not None  # the pre-scan ran: this is the path under test
    # Scores are the float32 ones, best first.
    found = _search(index, queries[0])
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert abs(found[0][1] - float(np.max(vectors @ queries[0]))) < 1e-5


def test_rows_written_after_the_fit_are_found() -> None:
    vectors = _clustered(ROWS, 3)
    index = _index(vectors)
    _search(index, vectors[0])  # fits the pre-scan
    assert index._prescan is not None
    extra = _clustered(3_000, 4)  # more than the spare rows: the index grows
    for i, v in enumerate(extra):
        index.add(ROWS + 1 + i, f"x{i:06d}", v, "message", "active")
    for i in (0, 1_500, 2_999):
        assert _search(index, extra[i], 1)[0][0] == f"x{i:06d}"
    # Removing most of the old rows compacts the index; the survivors are still found.
    for rowid in range(1, 20_001):
        index.remove(rowid)
    assert index._holes < 20_000  # compacted at least once
    assert _search(index, vectors[22_000], 1)[0][0] == "m022000"
    assert _search(index, extra[7], 1)[0][0] == "x000007"


def test_ties_at_the_cut_keep_the_id_order() -> None:
    vectors = _clustered(ROWS, 5)
    vectors[100:160] = vectors[100]  # sixty equal rows: the top 50 cut falls among them
    index = _index(vectors)
    found = _search(index, vectors[100])
    assert [m for m, _ in found] == [f"m{i:06d}" for i in range(100, 150)]


def test_codes_follow_the_leading_directions() -> None:
    vectors = _clustered(30_000, 6)
    prescan = Prescan(vectors, len(vectors), len(vectors))
    q = vectors[10]
    approx = prescan.scores(q, len(vectors))
    exact = vectors @ q
    assert np.corrcoef(approx, exact)[0, 1] > 0.8  # 128 of 384 directions: an estimate, not the score
    pool = set(np.argpartition(-approx, 1000)[:1000].tolist())
    assert set(np.argpartition(-exact, 10)[:10].tolist()) <= pool
