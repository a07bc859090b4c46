"""A large user's exact vector search scans int8 codes of leading principal components first, then
re-scores a pool in float32: the results must match an exact float32 scan, also after writes. The
codes are fitted on a background thread after the first large search, which scans float32."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import pytest

from engram.stores.sqlite import prescan
from engram.stores.sqlite import vectors as vectors_module
from engram.stores.sqlite.prescan import Fitting, Prescan
from engram.stores.sqlite.vectors import QUANTIZE_ABOVE, ExactIndex
from tests.waiting import until

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


def _fitted(index: ExactIndex, query: npt.NDArray[np.float32]) -> ExactIndex:
    """The index once the fit its first search started is done; its top ten for ``query``, found
    through the codes, are the float32 scan's."""
    assert index._prescan is None
    exact = _search(index, query, 10)  # scans float32 while the codes are fitted
    assert until(lambda: index._prescan is not None)
    index._last = None  # not the float32 scores kept from the scan
    assert _search(index, query, 10) == exact
    return index


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
    queries = _clustered(40, 2)
    index = _fitted(_index(vectors), queries[1])  # the pre-scan runs: this is the path under test
    assert _recall(index, vectors, [f"m{i:06d}" for i in range(ROWS)], queries) >= 0.99
    # Scores are the float32 ones, best first.
    found = _search(index, queries[0])
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert abs(found[0][1] - float(np.max(vectors @ queries[0]))) < 1e-5


def test_rows_written_after_the_fit_are_found() -> None:
    vectors = _clustered(ROWS, 3)
    index = _fitted(_index(vectors), vectors[0])
    extra = _clustered(3_000, 4)  # more than the spare rows: the index grows
    for i, v in enumerate(extra):
        index.add(ROWS + 1 + i, f"x{i:06d}", v, "message", "active")
    for i in (0, 1_500, 2_999):
        assert _search(index, extra[i], 1)[0][0] == f"x{i:06d}"
    # Removing most of the old rows compacts the index; the survivors are still found.
    for rowid in range(1, ROWS - 2_000):
        index.remove(rowid)
    assert index._holes < ROWS - 2_001  # compacted at least once
    assert _search(index, vectors[ROWS - 1_000], 1)[0][0] == f"m{ROWS - 1_000:06d}"
    assert _search(index, extra[7], 1)[0][0] == "x000007"


def test_ties_at_the_cut_keep_the_id_order() -> None:
    vectors = _clustered(ROWS, 5)
    vectors[100:160] = vectors[100]  # sixty equal rows: the top 50 cut falls among them
    index = _fitted(_index(vectors), vectors[7])
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


def _fit_with(monkeypatch: pytest.MonkeyPatch, index: ExactIndex, meanwhile: object) -> None:
    """Run the index's fit here, calling ``meanwhile()`` once the codes are computed, before they
    are installed: as a write landing while the background thread fits."""

    class Interrupted(Prescan):
        def __init__(self, *args: object) -> None:
            super().__init__(*args)  # type: ignore[arg-type]
            meanwhile()  # type: ignore[operator]

    monkeypatch.setattr(vectors_module, "Prescan", Interrupted)
    index._fit()


def test_rows_written_while_the_codes_are_fitted_are_coded(monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = _clustered(ROWS, 7)
    index = _index(vectors)
    extra = _clustered(200, 8)

    def write() -> None:
        for i, v in enumerate(extra):
            index.add(ROWS + 1 + i, f"x{i:06d}", v, "message", "active")

    _fit_with(monkeypatch, index, write)
    assert index._prescan is not None
    for i in (0, 99, 199):  # found through the codes: a row left uncoded would score zero there
        assert _search(index, extra[i], 1)[0][0] == f"x{i:06d}"


def test_a_fit_that_a_compaction_overtook_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = _clustered(ROWS, 9)
    index = _index(vectors)

    def compact() -> None:  # a quarter of the rows gone compacts; the rest stay above the threshold
        for rowid in range(1, ROWS // 4 + 100):
            index.remove(rowid)

    _fit_with(monkeypatch, index, compact)
    assert index._compactions > 0 and index._prescan is None  # its codes were of rows since moved
    monkeypatch.undo()
    index = _fitted(index, vectors[ROWS - 10])
    assert _search(index, vectors[ROWS - 10], 1)[0][0] == f"m{ROWS - 10:06d}"


def test_a_failed_fit_is_logged_and_not_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    fitting, calls = Fitting(), []

    def fit() -> None:
        calls.append(1)
        raise MemoryError("no room for the codes")

    fitting.start(fit)
    assert until(lambda: fitting._pid is None)
    assert fitting.failed and "pre-scan failed" in caplog.text
    fitting.start(fit)
    assert until(lambda: fitting._pid is None) and calls == [1]


def test_a_fit_that_cannot_start_leaves_the_search_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    stopped = ThreadPoolExecutor(1)
    stopped.shutdown()  # as at interpreter exit: submit raises
    monkeypatch.setattr(prescan, "fitter", lambda: stopped)
    vectors = _clustered(ROWS, 11)
    index = _index(vectors)
    assert _search(index, vectors[5], 1)[0][0] == "m000005"
    assert index._prescan is None and index._fitting._pid is None  # may start once the pool is back
    monkeypatch.undo()
    _fitted(index, vectors[6])

