"""Approximate candidates for very large users: a faiss IVF snapshot, exact float32 on top.

An :class:`AnnIndex` is an :class:`~.vectors.ExactIndex` (the float32 matrix, the ids, kinds and
statuses, the filters, write-through) that proposes candidates from an inverted-file index instead
of scanning every row. The IVF index only proposes: every candidate is filtered by the same masks
and scored again in float32 from the matrix, so a stale or missing entry costs recall, never a
wrong score or a row the filters exclude.

Why IVF and not a graph (measured in ``bench/ann_choice.py``, 384-d MiniLM-shaped vectors, one
thread): an HNSW graph of 100k vectors took faiss over five minutes and usearch about a minute of
CPU to build on this class of machine, a million ten times that; an IVF index of a million builds
in well under a minute (k-means on a sample, then one assignment pass).

Why 4-bit product-quantization codes scanned with faiss's "fast-scan" kernels (two dimensions per
code, a quarter of the int8 bytes): an IVF index loses recall where a query's neighbours fall in
lists it does not probe, and question-shaped queries of real sentence embeddings spread their
neighbours over many lists. Probing an eighth of the lists in int8 (``QT_8bit``, the previous
codes) found 0.90 of the exact top 10 on Gaussian vectors with MiniLM's covariance at 1M rows;
fast-scan codes let a query probe half the lists in less time (0.995), and the float32 re-scoring
of the best thousand fixes the order. Binary (sign-bit) pre-scans miss the recall target on
MiniLM-shaped vectors (0.79-0.95 at 100k).

The snapshot is immutable: it covers the rows whose rowid was at most its high-water mark when it
was built. Rows added since (and rows written again under an old rowid) are a tail scanned exactly
beside it; when the tail and the rows removed since pass a tenth of the snapshot it is rebuilt in
the background. Until a user's first snapshot exists the exact (int8 pre-scan) search serves.
Snapshots are saved beside the database (``<db>.ann/``) and read by a cold process (0.08 s for a
million rows' 107 MB), so a restart does not rebuild.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.pools import ProcessLock
from engram.stores.sqlite.faiss_ivf import (
    code_bytes,
    faiss_module,
    file_crc,
    ids_of,
    nprobe,
    saved_file,
    snapshot_dir,
    subquantizers,
)
from engram.stores.sqlite.row_codes import ranked
from engram.stores.sqlite.side_files import make_folder, partial_name, private_file
from engram.stores.sqlite.vectors import ExactIndex, Matrix

__all__ = ["AnnIndex", "attached", "index_class", "load_index", "snapshot_dir"]

log = logging.getLogger(__name__)

#: Fewer rows than this pass a filter: score them all exactly (a gather and one product).
EXACT_ROWS = 20_000
#: Candidates asked of the IVF index per result wanted (before scaling by how much a filter keeps):
#: its 4-bit codes rank coarsely, so the float32 re-scoring takes a deep pool (~0.3 ms for 1,000).
_POOL_PER_RESULT = 10
_MIN_POOL = 1000
#: The least depth of an IVF probe, kept for the next search of the same vector: deep enough for
#: the procedural source's (20 results, 10 candidates each, where a tenth or a little less of the
#: rows are procedures). Depth costs little: at 1M rows a probe took 3.97 ms at 2,000 deep, 4.03
#: at 2,500, 4.4 at 4,000; a second probe of its own would cost the whole again.
_SHARED_PROBE = 2500
#: The snapshot's code format, saved with it: a snapshot of another (an older version's int8 codes)
#: is rebuilt rather than opened.
_CODES = "ivf-pq4fs"
#: Rebuild when rows added or removed since the snapshot pass this share of it.
_REBUILD_SHARE = 0.1
#: The least number of rows the lists and the codes are trained on (product quantizers want more
#: than the forty per list that place the centroids).
_TRAINING_ROWS = 65_536
#: One build at a time per process (each holds a copy of its rows); a child's own, as a parent's
#: build may have held it at the fork, and it never ends there.
_builds = ProcessLock()


def index_class(rows: int, ann_above: int) -> type[ExactIndex]:
    """Exact up to ``ann_above`` rows (or when faiss is absent), approximate above."""
    if rows <= ann_above or ann_above <= 0:
        return ExactIndex
    if faiss_module() is None:
        log.warning("faiss is not installed: user with %d vectors searched exactly", rows)
        return ExactIndex
    return AnnIndex


#: Whether an index holds every change to its user committed so far (the store's answer): a
#: snapshot of it may be saved only then.
Current = Callable[[str, ExactIndex], bool]


def attached(index: ExactIndex, user_id: str, db_path: str, current: Current | None = None) -> ExactIndex:
    """``index``, with an approximate one opened from its saved snapshot or built in the background."""
    if isinstance(index, AnnIndex):
        index.attach(user_id, snapshot_dir(db_path), None if current is None else lambda: current(user_id, index))
    return index


def load_index(
    dimensions: int, rowids: Sequence[int], memory_ids: Sequence[str], blobs: Sequence[bytes],
    kinds: Sequence[str], statuses: Sequence[str], *, user_id: str, db_path: str, ann_above: int,
    current: Current | None = None,
) -> ExactIndex:
    """The user's index (see :func:`index_class`)."""
    index = index_class(len(rowids), ann_above).load(dimensions, rowids, memory_ids, blobs, kinds, statuses)
    return attached(index, user_id, db_path, current)


class AnnIndex(ExactIndex):
    """An exact index whose searches take candidates from an IVF snapshot once one is ready."""

    def __init__(self, dimensions: int, capacity: int = 64, matrix: Matrix | None = None) -> None:
        super().__init__(dimensions, capacity, matrix)
        self._ivf: Any = None
        self._hwm = -1  # rows with a rowid at most this are in the snapshot
        self._snapshot_rows = 0
        self._changed = 0  # rows added or removed since the snapshot
        self._dirty: set[int] = set()  # rowids written again since the snapshot, so stale in it
        self._tail: npt.NDArray[np.int64] | None = None
        self._removals = 0  # rows removed so far: a build that saw one removed since must not be saved
        self._building: threading.Thread | None = None
        self._file: Path | None = None
        self._user_id = ""
        self._current: Callable[[], bool] | None = None  # see _save
        self.nprobe = 0  # 0: chosen from the number of lists
        self._last_probe: tuple[tuple[bytes, int], npt.NDArray[np.int64]] | None = None  # of this snapshot

    def attach(self, user_id: str, directory: Path | None, current: Callable[[], bool] | None = None) -> None:
        """Use the user's saved snapshot if there is one, else build one in the background.
        ``current`` says whether this index still holds every change to the user (see :meth:`_save`)."""
        self._user_id = user_id
        self._current = current
        if directory is not None:
            self._file = saved_file(directory, user_id)
            if self._open_saved(user_id):
                return
        self.rebuild()

    def _open_saved(self, user_id: str) -> bool:
        assert self._file is not None
        meta_file = self._file.with_suffix(".json")
        try:
            meta = json.loads(meta_file.read_text())
            if meta.get("user_id") != user_id or meta.get("dimensions") != self._dim or meta.get("codes") != _CODES:
                return False
            # Snapshots without a checksum (older versions) are rebuilt, as damaged ones are.
            if [meta.get("bytes"), meta.get("crc32")] != list(file_crc(self._file)):
                log.warning("ignored a damaged or unchecked approximate index %s; rebuilding it", self._file)
                return False
            faiss = faiss_module()
            ivf = faiss.read_index(str(self._file), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        except (OSError, ValueError, TypeError, AttributeError, RuntimeError):
            return False
        with self._lock:
            self._install(ivf, int(meta["hwm"]), int(meta["rows"]))
            present = int(np.count_nonzero(self._rowids[: self._size][self._alive[: self._size]] <= self._hwm))
            self._changed = self._snapshot_rows - present + len(self._tail_rows())
        self._maybe_rebuild()
        return True

    @property
    def ready(self) -> bool:
        """Whether searches use a snapshot (False while the first one is built)."""
        return self._ivf is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background build; whether a snapshot is ready."""
        building = self._building
        if building is not None:
            building.join(timeout)
        return self.ready

    @property
    def nbytes(self) -> int:
        extra = 0 if self._ivf is None else self._snapshot_rows * (code_bytes(self._dim) + 8)
        return super().nbytes + extra

    # Writes: the matrix is current at once; the snapshot learns of them through the tail.

    def _add(self, rowid: int, memory_id: str, vector: Matrix, kind: str, status: str) -> None:
        if rowid <= self._hwm:
            self._dirty.add(rowid)
        super()._add(rowid, memory_id, vector, kind, status)
        self._changed += 1
        self._tail = None
        self._maybe_rebuild()

    def _remove(self, rowid: int) -> None:
        if rowid in self._pos:
            self._changed += 1
            self._removals += 1
            self._tail = None
        super()._remove(rowid)

    def _compact(self) -> None:
        super()._compact()
        self._tail = None

    def _tail_rows(self) -> npt.NDArray[np.int64]:
        """Positions of live rows the snapshot does not hold (or holds stale)."""
        if self._tail is None:
            size = self._size
            newer = self._alive[:size] & (self._rowids[:size] >= self._hwm)  # >=: a reused top rowid
            tail = np.flatnonzero(newer)
            if self._dirty:
                dirty = [self._pos[r] for r in self._dirty if r in self._pos]
                tail = np.union1d(tail, np.asarray(dirty, dtype=np.int64))
            self._tail = tail.astype(np.int64)
        return self._tail

    # Search.

    def _search(
        self,
        query: Matrix,
        n: int,
        statuses: Collection[str],
        kinds: Collection[str] | None,
        allowed: Collection[int] | None,
    ) -> list[tuple[str, float]]:
        if self._ivf is None or self._size == 0 or n <= 0:
            return super()._search(query, n, statuses, kinds, allowed)
        query = np.ascontiguousarray(query, dtype=np.float32)
        mask = self._mask(statuses, kinds, allowed)
        live = int(mask.sum())
        if live <= max(EXACT_ROWS, n):  # a selective filter: the ANN would return too few rows
            return self._ranked(query, np.flatnonzero(mask), n)
        pool = max(_POOL_PER_RESULT * n * self._size // live, _MIN_POOL)
        while True:
            pool = min(pool, self._snapshot_rows)
            rows = np.union1d(self._positions_of(self._probe(query, pool)), self._tail_rows())
            rows = rows[mask[rows]]
            if len(rows) >= n or pool >= self._snapshot_rows or pool >= 16 * EXACT_ROWS:
                break
            pool *= 4
        if len(rows) < n:  # the filter keeps rows the IVF lists probed rarely hold
            rows = np.flatnonzero(mask)
        return self._ranked(query, rows, n)

    def _probe(self, query: Matrix, pool: int) -> npt.NDArray[np.int64]:
        """The snapshot's ``pool`` rowids nearest ``query`` (-1 pads). A retrieval asks twice with one
        vector (the semantic source, then the procedural one under a kind filter, ~16 ms a probe at
        1M rows): a probe is made :data:`_SHARED_PROBE` deep at least and kept, and a search of the
        same vector takes the head of it. The head of a deeper probe is the shallower probe."""
        key = (query.tobytes(), self.nprobe)
        last = self._last_probe
        if last is None or last[0] != key or len(last[1]) < pool:
            rowids = self._ivf.search(query[None, :], max(pool, _SHARED_PROBE), params=self._params())[1][0]
            last = self._last_probe = (key, rowids)
        return last[1][:pool]

    def _params(self) -> Any:
        faiss = faiss_module()
        nlist = int(self._ivf.nlist)
        return faiss.SearchParametersIVF(nprobe=self.nprobe or nprobe(nlist))

    def _ranked(self, query: Matrix, rows: npt.NDArray[np.int64], n: int) -> list[tuple[str, float]]:
        if len(rows) == 0:
            return []
        return ranked(self._ids, rows, self._matrix[rows] @ query, n)

    # Building.

    def rebuild(self) -> None:
        """Build a new snapshot on a background thread (unless one is being built)."""
        with self._lock:
            if self._building is not None and self._building.is_alive():
                return
            self._building = threading.Thread(target=self._build, name="engram-ann-build", daemon=True)
            self._building.start()

    def _maybe_rebuild(self) -> None:
        if self._ivf is not None and self._changed > _REBUILD_SHARE * max(self._snapshot_rows, 1):
            self.rebuild()

    def _build(self) -> None:
        try:
            with _builds.get():
                built = self._train_and_fill()
        except Exception:  # a failed build leaves the exact search serving
            log.exception("building the approximate vector index failed")
            return
        if built is not None:
            self._save(*built)

    def _train_and_fill(self) -> tuple[Any, int, int, int] | None:
        faiss = faiss_module()
        with self._lock:
            removals = self._removals
            positions = np.flatnonzero(self._alive[: self._size])
            rowids = self._rowids[positions].copy()
            compactions, changed = self._compactions, self._changed
            nlist = max(1, int(np.sqrt(len(positions))))
            wanted = min(len(positions), max(40 * nlist, _TRAINING_ROWS))
            sample = np.random.default_rng(0).choice(positions, wanted, replace=False)
            training = self._matrix[np.sort(sample)].copy()
        if len(positions) == 0:
            return None
        hwm = int(rowids.max())
        ivf = faiss.index_factory(
            self._dim, f"IVF{nlist},PQ{subquantizers(self._dim)}x4fs", faiss.METRIC_INNER_PRODUCT
        )
        # Centroids only route queries: a rough clustering loses little recall.
        faiss.extract_index_ivf(ivf).cp.niter = 10
        ivf.train(training)
        del training
        step = 50_000
        for start in range(0, len(positions), step):
            chunk = positions[start : start + step]
            with self._lock:
                if self._compactions != compactions:  # positions moved: build again from scratch
                    self._building = None
                    self.rebuild()
                    return None
                vectors = self._matrix[chunk].copy()
            ivf.add_with_ids(vectors, rowids[start : start + step])
        with self._lock:
            self._install(ivf, hwm, len(positions))
            self._changed -= changed  # what changed during the build is still not in it
        return ivf, hwm, len(positions), removals

    def _wants_prescan(self) -> bool:
        return self._ivf is None  # the exact search before the approximate index is ready

    def _install(self, ivf: Any, hwm: int, rows: int) -> None:
        self._ivf, self._hwm, self._snapshot_rows = ivf, hwm, rows
        self._last_probe = None
        self._tail = None
        self._prescan = None  # the exact search's pre-scan is no longer used
        self._last = None

    def save_again(self) -> None:
        """Save the snapshot without the rows removed since it was built or written again under
        their rowid (a removal erased its file; a rebuild would cost a minute of both cores at a
        million rows, this a copy and a pass over its lists)."""
        if self._ivf is None or self._file is None:
            return
        faiss = faiss_module()
        with self._lock:
            ivf, hwm, removals = self._ivf, self._hwm, self._removals  # hwm: which rows it holds
            live = self._rowids[: self._size][self._alive[: self._size]]
            live = live[live <= hwm].copy()
            dirty = np.fromiter(self._dirty, dtype=np.int64, count=len(self._dirty))
            rewritten = np.asarray([r for r in self._dirty if r in self._pos], dtype=np.int64)
            vectors = self._matrix[[self._pos[r] for r in rewritten.tolist()]].copy()
        copy = faiss.clone_index(ivf)
        held = ids_of(copy)
        dropped = ~np.isin(held, live) | np.isin(held, dirty)
        if dropped.any():
            copy.remove_ids(faiss.IDSelectorBatch(held[dropped]))
        if len(rewritten):  # at or below the mark: a loader would look for them in the snapshot
            copy.add_with_ids(vectors, rewritten)
        # The mark falls to the newest row the copy holds: a row inserted later at a rowid the
        # removed rows freed is then in a loader's tail, not taken for one of the snapshot's.
        kept = np.concatenate([held[~dropped], rewritten])
        self._save(copy, int(kept.max()) if len(kept) else -1, int(copy.ntotal), removals)

    def _save(self, ivf: Any, hwm: int, rows: int, removals: int) -> None:
        """Save the snapshot unless a row it holds was removed meanwhile: the file would keep what a
        delete erased from the database (the store erases saved files at every delete too). A removal
        here is seen by this index; one by another process, which erases the files after its commit,
        is seen by ``current`` (asked outside this index's lock: the store's cache takes it), before
        the files replace any others and again after, when they are removed if it no longer holds."""
        if self._file is None:
            return
        faiss = faiss_module()
        partial, partial_meta = partial_name(self._file, "ivf"), partial_name(self._file, "json")
        current = self._current or (lambda: True)
        try:
            folder = self._file.parent
            db_path = str(folder)[: -len(".ann")] if folder.name.endswith(".ann") else ""  # "": 0600
            if db_path:
                make_folder(folder, db_path)
            else:
                folder.mkdir(parents=True, exist_ok=True)
            os.close(private_file(partial, db_path))  # faiss writes into a file of the database's mode
            faiss.write_index(ivf, str(partial))
            size, crc = file_crc(partial)  # checked before faiss maps it: a damaged file is rebuilt
            meta = {"user_id": self._user_id, "dimensions": self._dim, "codes": _CODES, "hwm": hwm, "rows": rows,
                    "bytes": size, "crc32": crc}
            with os.fdopen(private_file(partial_meta, db_path), "w") as out:
                out.write(json.dumps(meta))
            if not current():
                return
            with self._lock:  # a removal takes this lock first, then the store erases the files
                if self._removals != removals:
                    return
                os.replace(partial, self._file)
                os.replace(partial_meta, self._file.with_suffix(".json"))
            if not current():  # another process's erasure landed between the look and the rename
                for path in (self._file, self._file.with_suffix(".json")):
                    path.unlink(missing_ok=True)
        except (OSError, RuntimeError):
            log.warning("could not save the approximate vector index to %s", self._file, exc_info=True)
        finally:
            partial.unlink(missing_ok=True)
            partial_meta.unlink(missing_ok=True)
