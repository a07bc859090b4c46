"""One user's keyword postings in memory, scored exactly with the shared BM25 of :mod:`engram.text`;
both backends hold them (:mod:`engram.stores.sqlite.keyword`, :mod:`engram.stores.postgres.keyword`).

FTS5 can find a term's rows fast but cannot score them with per-user statistics, and reading every
match's terms back to score them in Python cost tens of milliseconds at 100k memories; the old
answer, scoring only a budget of the rarest terms' postings, missed a tenth to a half of the true
top 10. Here every query term's postings are read in a few array operations (~1 ms for 60k
postings), so a search is exact at any size: the user's document count, average length and document
frequencies are those of their live rows alone. A search that asks only for its best rows may leave
out rows that provably cannot reach them (:mod:`engram.stores.accumulate`).

Layout: one row position per memory (its rowid, id, creation time, length, and whether it is still
live), and per term the positions holding it with their term frequencies, as one CSR pair of arrays
(``_bounds`` into ``_positions``/``_freqs``). Rows added later go to small per-term lists, merged into
the arrays once they hold a sizeable share; removed rows are marked dead and dropped at that merge.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.ma  # imported lazily inside the first np.isin/np.unique otherwise: 30-90 ms of a first query
import numpy.typing as npt

from engram.stores.accumulate import PRUNE_ABOVE, Accumulator, Term, contributions
from engram.stores.id_order import IdOrder
from engram.stores.matches import Matches
from engram.stores.packing import encoded, strings
from engram.stores.untracked import Strings, string_array
from engram.stores.vocabulary import Vocabulary
from engram.text import K1, B, plan_keywords

__all__ = ["Postings"]

Ints = npt.NDArray[np.int64]
Positions = npt.NDArray[np.int32]
Frequencies = npt.NDArray[np.uint32]
_SPARE = 64
#: Objects beside the arrays, per row (its id string and list slot) and per term (its string and
#: dict entry): estimates for the cache's byte budget.
_PER_ROW_OBJECTS = 100
_PER_TERM_OBJECTS = 120
_PER_EXTRA_POSTING = 80  # two list slots and two ints
_PER_WHERE_ENTRY = 100  # the id -> position dict that removals build


G = TypeVar("G", bound=np.generic)


def _grown(array: npt.NDArray[G], size: int) -> npt.NDArray[G]:
    out = np.zeros(size, dtype=array.dtype)
    out[: len(array)] = array
    return out


class Postings:
    """A user's keyword index; thread-safe. Positions are internal: callers get rowids and ids."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._vocab = Vocabulary()
        self._bounds: Ints = np.zeros(1, dtype=np.int64)
        self._positions: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._freqs: npt.NDArray[np.uint32] = np.zeros(0, dtype=np.uint32)
        self._extra: dict[int, tuple[list[int], list[int]]] = {}  # term code -> (positions, freqs)
        self._extra_count = 0
        self._rowids: Ints = np.zeros(_SPARE, dtype=np.int64)
        self._created: Ints = np.zeros(_SPARE, dtype=np.int64)
        self._lengths: Ints = np.zeros(_SPARE, dtype=np.int64)
        self._alive = np.zeros(_SPARE, dtype=bool)
        self._ids: Strings = string_array([], _SPARE)
        self._where: dict[str, int] | None = None  # id -> position, built at the first removal
        # Each row's place in id order, which breaks ties between equal scores (computed at the
        # first search).
        self._order = IdOrder()
        # BM25's length normalization of every row, for the user's average length when computed.
        self._norms: tuple[tuple[int, int, int], npt.NDArray[np.float64], float] | None = None
        self._size = 0
        self._live = 0
        self._holes = 0
        self._total_length = 0
        self.nbytes = 0  # kept current by every change: read without the lock by the cache
        # The last query's matching rows and their scores (its terms, rows, scores, ideal, and the
        # bound on the rows pruning left out): a time-scoped retrieval searches the same words twice,
        # in and out of its range. Every change forgets them.
        self._scored: tuple[tuple[str, ...], Ints, npt.NDArray[np.float64], float, float] | None = None
        self._accumulator = Accumulator()
        # Per term: its live positions and each one's BM25 contribution under the current
        # statistics, most recently used last. A query's terms recur (a retrieval searches them in
        # and out of its range; the same topics come back), and at a million memories computing a
        # common term's ~100k contributions was most of a search. Every change forgets them.
        self._contributions: dict[int, tuple[Ints, npt.NDArray[np.float64]]] = {}
        self._contribution_count = 0

    @classmethod
    def build(
        cls, rowids: Sequence[int], ids: Sequence[str], created: Sequence[int], documents: Sequence[str],
    ) -> Postings:
        """The index of these rows; each document is its row's terms, each after one space (" a b"),
        or empty. A few passes in C over all the terms: splitting one joined string, a dict lookup
        per term, one sort (~6 ms per 1,000 memories on a busy core)."""
        index = cls()
        n = len(ids)
        tokens = "".join(documents).split()
        lengths = np.fromiter(map(str.count, documents, itertools.repeat(" ")), dtype=np.int64, count=n)
        vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
        codes = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        pairs, freqs = np.unique(codes * max(n, 1) + np.repeat(np.arange(n, dtype=np.int64), lengths),
                                 return_counts=True)
        index._vocab = Vocabulary(vocab)
        index._set_postings(pairs, freqs.astype(np.uint32), len(vocab), n)
        index._rowids = _grown(np.asarray(rowids, dtype=np.int64), n + _SPARE)
        index._created = _grown(np.asarray(created, dtype=np.int64), n + _SPARE)
        index._lengths = _grown(lengths, n + _SPARE)
        index._alive = _grown(np.ones(n, dtype=bool), n + _SPARE)
        index._ids = string_array(ids, n + _SPARE)
        index._size = index._live = n
        index._total_length = int(lengths.sum())
        index._prepare()
        return index

    def parts(self) -> list[npt.NDArray[np.generic]]:
        """The arrays :meth:`of_parts` builds this index from (after folding in added rows)."""
        with self._lock:
            if self._extra or self._holes:
                self._merge()
            n = self._size
            arrays: list[npt.NDArray[np.generic]] = [
                self._bounds, self._positions, self._freqs, self._rowids[:n].copy(), self._created[:n].copy(),
                self._lengths[:n].copy(),
            ]
            rank = self._order.complete(self._ids, n, len(self._rowids))[:n].copy()
            ids, vocab = encoded(self._ids[:n].tolist()), self._vocab.copy()
        terms, codes = vocab.sorted_terms()  # outside the lock: a million terms sort in about a second
        # Only terms some live row still holds: the vocabulary keeps every term it ever met, and a
        # saved file listing a deleted memory's words would keep them on disk after the delete.
        counts = np.diff(arrays[0])
        held = np.zeros(len(codes), dtype=bool) if len(counts) == 0 else (
            (codes < len(counts)) & (counts[np.minimum(codes, len(counts) - 1)] > 0))
        if not held.all():
            keep = counts > 0
            renumbered = np.cumsum(keep) - 1
            arrays[0] = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts[keep])]).astype(np.int64)
            terms = list(itertools.compress(terms, held.tolist()))
            codes = renumbered[codes[held]].astype(np.int64)
        return [*arrays, encoded(terms), codes, ids, rank]

    @classmethod
    def of_parts(cls, parts: Sequence[npt.NDArray[np.generic]]) -> Postings | None:
        """The index :meth:`parts` described (arrays may be read-only maps: the postings are replaced,
        never written in place); None when they do not fit together."""
        if len(parts) != 10:
            return None
        bounds, positions, freqs, rowids, created, lengths, terms, codes, ids, rank = parts
        n = len(rowids)
        words, names = strings(terms, len(bounds) - 1), strings(ids, n)  # type: ignore[arg-type]
        vocab = None if words is None else Vocabulary.of_sorted(words, codes)  # type: ignore[arg-type]
        if (vocab is None or names is None or len(positions) != len(freqs) or len(created) != n or len(lengths) != n
                or len(rank) != n):
            return None
        index = cls()
        index._vocab = vocab
        index._bounds, index._positions, index._freqs = bounds, positions, freqs  # type: ignore[assignment]
        index._rowids = _grown(np.asarray(rowids, dtype=np.int64), n + _SPARE)
        index._created = _grown(np.asarray(created, dtype=np.int64), n + _SPARE)
        index._lengths = _grown(np.asarray(lengths, dtype=np.int64), n + _SPARE)
        index._alive = _grown(np.ones(n, dtype=bool), n + _SPARE)
        index._ids = string_array(names, n + _SPARE)
        # The order of ids, saved: sorting them again cost ~6 ms at 10k memories and a second at 1M.
        index._order = IdOrder.loaded(rank, names, n + _SPARE)  # type: ignore[arg-type]
        index._size = index._live = n
        index._total_length = int(index._lengths[:n].sum())
        index._prepare()
        return index

    def _prepare(self) -> None:
        """What the first search would compute, done with the load: the rows' length normalization
        and the accumulator's arrays, their pages touched. At a million memories these took ~30 ms
        of that search (mostly page faults), after a load of ~1 s."""
        self._row_norms()
        self._accumulator.ready(self._size, len(self._rowids))
        self._account()

    def _set_postings(self, pairs: Ints, freqs: npt.NDArray[np.uint32], terms: int, rows: int) -> None:
        """The arrays from sorted, distinct ``term * rows + row`` pairs and their frequencies."""
        self._forget()
        self._positions = (pairs % max(rows, 1)).astype(np.int32)
        self._freqs = freqs
        self._bounds = np.searchsorted(pairs // max(rows, 1), np.arange(terms + 1)).astype(np.int64)

    def _forget(self) -> None:
        """What depends on the rows or the user's statistics: dropped at every change."""
        self._scored = None
        self._contributions.clear()
        self._contribution_count = 0

    def _account(self) -> None:
        arrays = (self._bounds, self._positions, self._freqs, self._rowids, self._created, self._lengths, self._alive,
                  self._order.rank, None if self._norms is None else self._norms[1])
        self.nbytes = (sum(a.nbytes for a in arrays if a is not None) + _PER_ROW_OBJECTS * self._size
                       + _PER_TERM_OBJECTS * len(self._vocab) + _PER_EXTRA_POSTING * self._extra_count
                       + (0 if self._where is None else _PER_WHERE_ENTRY * len(self._where))
                       + 16 * self._contribution_count + self._accumulator.nbytes)

    def __len__(self) -> int:
        return self._live

    # -- writes ---------------------------------------------------------------------------------
    def add(self, rowid: int, memory_id: str, terms: Sequence[str], created: int, *, new: bool = False) -> None:
        """A row written after the load; ``terms`` as :func:`engram.text.memory_terms` gives them.
        ``new``: the id is known not to be held (else its row goes first, a replace: finding it
        builds a map of every id, ~0.4 s at a million memories, the first time)."""
        with self._lock:
            self._forget()
            if not new:
                self._remove(memory_id)
            if self._size == len(self._rowids):
                capacity = self._size + max(_SPARE, self._size // 2)
                self._rowids, self._created = _grown(self._rowids, capacity), _grown(self._created, capacity)
                self._lengths, self._alive = _grown(self._lengths, capacity), _grown(self._alive, capacity)
                self._ids = _grown(self._ids, capacity)
            i = self._size
            self._rowids[i], self._created[i], self._lengths[i], self._alive[i] = rowid, created, len(terms), True
            self._ids[i] = memory_id
            self._order.added(i, memory_id, len(self._rowids))
            if self._where is not None:
                self._where[memory_id] = i
            for term, count in Counter(terms).items():
                code = self._vocab.code(term)
                positions, freqs = self._extra.setdefault(code, ([], []))
                positions.append(i)
                freqs.append(count)
                self._extra_count += 1
            self._size += 1
            self._live += 1
            self._total_length += len(terms)
            if self._extra_count > max(4096, len(self._positions) // 8):
                self._merge()
            self._account()

    def catch_up(self, removed: Sequence[int], rows: Sequence[tuple[int, str, int, str]], after: int) -> None:
        """Another process's changes: the rows of rowids ``removed`` leave, then those of ``rows``
        (rowid, id, creation time, document as :meth:`build` takes it; each inserted after rowid
        ``after`` or one of ``removed`` read again) that no live row holds yet are added: this
        process's own writes may have applied some already. One look and the changes under the
        lock, so a write landing meanwhile is either seen here or removes the row added here before
        adding its own."""
        with self._lock:
            size = self._size
            if len(removed):
                for i in np.flatnonzero(np.isin(self._rowids[:size], np.asarray(removed, dtype=np.int64))
                                        & self._alive[:size]).tolist():
                    self._remove_at(i)
            above = (self._rowids[:size] > after) & self._alive[:size]
            held = set(self._rowids[:size][above].tolist())
            for rowid, memory_id, created, document in sorted(rows):
                if rowid not in held:
                    self.add(rowid, memory_id, document.split(), created, new=True)
            if self._holes > max(1024, self._size // 4):
                self._merge()
            self._account()

    def remove(self, memory_id: str) -> None:
        with self._lock:
            self._remove(memory_id)
            if self._holes > max(1024, self._size // 4):
                self._merge()
            self._account()

    def _remove(self, memory_id: str) -> None:
        if self._where is None:
            self._where = {m: i for i, m in enumerate(self._ids[: self._size].tolist()) if self._alive[i]}
        i = self._where.pop(memory_id, None)
        if i is not None:
            self._remove_at(i)

    def _remove_at(self, i: int) -> None:
        self._forget()
        if not self._alive[i]:
            return
        if self._where is not None and self._where.get(memory_id := str(self._ids[i])) == i:
            del self._where[memory_id]
        self._alive[i] = False
        self._live -= 1
        self._holes += 1
        self._total_length -= int(self._lengths[i])

    def _merge(self) -> None:
        """Fold the added rows' postings into the arrays and drop dead rows (their positions close up)."""
        self._forget()
        terms = len(self._vocab)
        base = np.repeat(np.arange(len(self._bounds) - 1, dtype=np.int64), np.diff(self._bounds))
        extra_codes = [c for c, (p, _) in self._extra.items() for _ in p]
        codes = np.concatenate([base, np.asarray(extra_codes, dtype=np.int64)])
        rows = np.concatenate([self._positions.astype(np.int64),
                               np.asarray([i for p, _ in self._extra.values() for i in p], dtype=np.int64)])
        freqs = np.concatenate([self._freqs, np.asarray([f for _, fs in self._extra.values() for f in fs],
                                                        dtype=np.uint32)])
        alive = self._alive[: self._size]
        keep = alive[rows]
        moved = np.cumsum(alive) - 1  # each live row's new position
        live = int(alive.sum())
        pairs = codes[keep] * max(live, 1) + moved[rows[keep]]
        order = np.argsort(pairs)  # distinct: an added row holds each of its terms once
        self._set_postings(pairs[order], freqs[keep][order], terms, live)
        capacity = live + _SPARE
        if self._order.rank is not None:  # placed before the rows close up, while ids and places agree
            self._order.complete(self._ids, self._size, len(self._rowids))
        self._rowids = _grown(self._rowids[: self._size][alive], capacity)
        self._created = _grown(self._created[: self._size][alive], capacity)
        self._lengths = _grown(self._lengths[: self._size][alive], capacity)
        self._alive = _grown(np.ones(live, dtype=bool), capacity)
        self._ids = _grown(self._ids[: self._size][alive], capacity)
        self._order.compacted(alive, capacity)
        self._where = None
        self._size = self._live = live
        self._holes = 0
        self._extra, self._extra_count = {}, 0

    # -- search ---------------------------------------------------------------------------------
    def _row_norms(self) -> npt.NDArray[np.float64]:
        state = (self._size, self._live, self._total_length)
        if self._norms is None or self._norms[0] != state:
            average = max(self._total_length / self._live if self._live else 1.0, 1e-9)
            norms = (K1 * (1.0 - B + B * self._lengths[: self._size] / average)).astype(np.float64, copy=False)
            # The smallest (the shortest row's, dead rows included: a bound may only be loose).
            self._norms = (state, norms, float(norms.min()) if len(norms) else 0.0)
            self._account()
            return norms
        return self._norms[1]

    def _shortest_norm(self) -> float:
        self._row_norms()
        return 0.0 if self._norms is None else self._norms[2]

    def _postings(self, code: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint32]]:
        """The term's live positions and frequencies: views of the arrays unless rows were added or
        removed since the last merge."""
        start, end = (int(self._bounds[code]), int(self._bounds[code + 1])) if code + 1 < len(self._bounds) else (0, 0)
        positions = self._positions[start:end]
        freqs = self._freqs[start:end]
        extra = self._extra.get(code)
        if extra is not None:
            positions = np.concatenate([positions, np.asarray(extra[0], dtype=positions.dtype)])
            freqs = np.concatenate([freqs, np.asarray(extra[1], dtype=freqs.dtype)])
        if self._holes:
            live = self._alive[positions]
            positions, freqs = positions[live], freqs[live]
        return positions, freqs

    def _contribution(
        self, code: int, idf: float, postings: tuple[Positions, Frequencies] | None,
    ) -> tuple[Ints, npt.NDArray[np.float64]]:
        """The term's live positions and BM25 contributions (``idf`` is the term's, a function of
        the statistics that every change forgets with these), computed from ``postings`` (the
        term's live positions and frequencies) when they are not kept."""
        cached = self._contributions.pop(code, None)
        if cached is None:
            positions, freqs = postings if postings is not None else self._postings(code)
            # Kept as int64: numpy converts any other index array at each use (twice the time).
            rows = positions.astype(np.int64)
            cached = (rows, contributions(idf, rows, freqs, self._row_norms()))
            self._contribution_count += len(positions)
            # Bounded to a share of the postings: the cache's byte budget counts them (nbytes).
            while self._contributions and self._contribution_count > max(65_536, len(self._positions) // 4):
                dropped = self._contributions.pop(next(iter(self._contributions)))
                self._contribution_count -= len(dropped[0])
            self._contributions[code] = cached
            self._account()
        else:
            self._contributions[code] = cached  # most recently used last
        return cached

    def scores(
        self, terms: Sequence[str], after: int | None = None, before: int | None = None, *, depth: int = 0,
    ) -> Matches | None:
        """Every live row matching a term (created in [after, before] when given), unordered, scored
        by BM25 over this user's rows divided by the ``ideal`` of :func:`engram.text.plan_keywords`.
        None when no term occurs in the user's memories. With ``depth``, rows that cannot be among
        the best ``depth`` may be left out (:mod:`engram.stores.accumulate`): the answer's ``bound``
        is then the most a left-out row scores, and :func:`~engram.stores.matches.exact_best` asks
        again without ``depth`` when its answer does not clear it."""
        with self._lock:
            if self._scored is not None and self._scored[0] == tuple(terms) and (depth or not self._scored[4]):
                _, rows, total, ideal, bound = self._scored
            else:
                codes = {t: c for t in terms if (c := self._vocab.get(t)) is not None}
                # A term's kept contributions carry its live positions; the others' postings are read
                # once, for their document frequency and, when scored, their contributions.
                read = {t: self._postings(c) for t, c in codes.items() if c not in self._contributions}
                df = {t: len(read[t][0]) if t in read else len(self._contributions[c][0]) for t, c in codes.items()}
                plan = plan_keywords(terms, df, self._live, budget=len(self._positions) + self._extra_count + 1)
                if plan is None:
                    return None
                # Every term that occurs (the budget above is never reached), rarest first.
                query = [self._term(codes[t], plan.idf[t], read.get(t)) for t in plan.terms]
                found = None
                if depth and len(query) > 1 and plan.postings >= PRUNE_ABOVE:
                    norms, shortest = self._row_norms(), self._shortest_norm()
                    found = self._accumulator.pruned(query, norms, shortest, depth, self._size, len(self._rowids))
                rows, total, bound = found or (*self._accumulator.every(query, self._size, len(self._rowids)), 0.0)
                self._account()
                ideal = plan.ideal
                self._scored = (tuple(terms), rows, total, ideal, bound)
            if after is not None or before is not None:
                created = self._created[rows]
                inside = np.ones(len(rows), dtype=np.bool_)
                if after is not None:
                    inside &= created >= after
                if before is not None:
                    inside &= created <= before
                rows, total = rows[inside], total[inside]
            # Ids are only added after these positions until a merge replaces the array: they stay valid.
            held = self._order.rank
            ranks = self._order.ranks(self._ids, self._size, len(self._rowids))
            if ranks is not held:
                self._account()
            return Matches(total / ideal, rows, self._rowids, ranks, self._order.placed, self._ids, bound / ideal)

    def _term(self, code: int, idf: float, postings: tuple[Positions, Frequencies] | None) -> Term:
        """One term of a query: its kept contributions, or its live postings (``postings`` when read
        already) to compute them from."""
        kept = self._contributions.get(code)
        if kept is not None:
            self._contributions[code] = self._contributions.pop(code)  # most recently used last
            return Term(idf, kept, lambda: self._contribution(code, idf, None))
        live = postings if postings is not None else self._postings(code)
        return Term(idf, None, lambda: self._contribution(code, idf, live), live[0], live[1])
