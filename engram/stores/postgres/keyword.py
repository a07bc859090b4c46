"""Exact BM25 keyword candidates on PostgreSQL, from each user's postings held in memory, as on SQLite.

The tsvector holds the stemmed terms of :func:`engram.text.memory_terms` (its GIN index serves the
SQL reads of :mod:`.keyword_scan`); scoring them in SQL could not be both exact and fast: the old
query took terms rarest first within a budget of 2,000 postings (at 100k memories of one user its
top 10 shared 9 % with an exhaustive BM25), and with the budget lifted it took p50 0.7 s, p95 1.9 s
there (busy cores; 80 / 126 ms budgeted). A user's first keyword search instead reads
their stored terms once into a :class:`~engram.stores.postings.Postings` (the structure SQLite's
store holds), and every search scores the query terms' postings with the shared BM25 of
:mod:`engram.text` over the user's own rows (leaving out only rows that provably cannot reach the
answer: :mod:`engram.stores.accumulate`): the exhaustive BM25 of their texts at any size, with the
same hits and scores as SQLite's.

Currency. ``engram_user_versions.terms`` (schema migration 9) moves, in the writing transaction,
with every insert or delete of the user's memories (and any update of what is indexed), not with
access counts, statuses, links or retrieval logs. A held index carries the value read with its
rows; each search reads the value now (one primary-key lookup) and reloads on a difference, so
another process's write is seen at the next search. This store's own writes are applied to a held
index after they commit (:meth:`KeywordIndex.track`): each reads the value before (row locked)
and after its change in its transaction, so the index moves to the new value only when it was
current before, and a search meanwhile waits for the write rather than reloading.

Loads. A user of up to :data:`BUILD_INLINE` memories is loaded by the search that needs it; a
larger user's load (~1.5 s of SQL, parsing and build at 100k memories, more on busy cores) runs on
a thread of its own, and searches meanwhile read the same hits from SQL (:mod:`.keyword_scan`)
unless their terms match more than :data:`SCAN_LIMIT` rows: a cold retrieval does not wait for it.
Indexes are dropped least recently searched first while they hold more than the cache's bytes
(~350 bytes a memory).

Filters: the time range is applied in memory; every other filter is checked in SQL on the best
rows only, in rounds of growing size (:func:`engram.stores.matches.best`), so the top ``n`` are
exact whatever the filters reject.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from engram.model import Filters, Hit
from engram.stores.builds import Builds
from engram.stores.matches import exact_best
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.postgres.keyword_scan import scan_hits
from engram.stores.postings import Postings
from engram.stores.sql.rows import filter_sql
from engram.text import memory_terms, query_terms

__all__ = ["TERMS_VERSION", "USER_TERMS", "Held", "KeywordIndex", "load", "passing_sql", "search", "to_us"]

Conn = psycopg.Connection[Any]
#: Read with each search; a user with no row has never had a memory.
TERMS_VERSION = "SELECT terms FROM engram_user_versions WHERE user_id = %s"
_LOCK_VERSIONS = (
    "SELECT user_id, terms FROM engram_user_versions WHERE user_id = ANY(%s::text[]) ORDER BY user_id FOR UPDATE"
)
_VERSIONS = "SELECT user_id, terms FROM engram_user_versions WHERE user_id = ANY(%s::text[])"
#: A user's rows as the postings keep them. The tsvector's text form ('term':1,4 'other':2) is parsed
#: in a few passes in C; its stored terms are those of memory_terms, but it keeps at most 256
#: positions of a term: a row whose count then differs from doc_len is read again from its text.
USER_TERMS = (
    "SELECT id, (extract(epoch FROM created_at) * 1000000)::int8, doc_len, content_tsv::text "
    "FROM engram_memories WHERE user_id = %s"
)
_USER_TEXTS = (
    "SELECT id, content, role, subject, predicate, object, trigger_text, action_text "
    "FROM engram_memories WHERE user_id = %s AND id = ANY(%s::text[])"
)
_POSITIONS = re.compile(r"':[0-9,]+")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Without a configured size, the keyword cache takes a quarter of the vector cache's default
#: budget, as SQLite's does (:data:`engram.stores.sqlite.keyword.KEYWORD_CACHE_SHARE`).
CACHE_SHARE = 0.25
#: Up to this many memories a user's postings are loaded by the search that needs them; a larger
#: user's on a thread of their own while searches read from SQL (:mod:`.keyword_scan`).
BUILD_INLINE = 2000
#: Meanwhile a search reads from SQL when its terms match at most this many of the user's rows;
#: one matching more waits for the load.
SCAN_LIMIT = 10_000
_SIZE = "SELECT count(*) FROM (SELECT 1 FROM engram_memories WHERE user_id = %s LIMIT %s) s"


def to_us(value: datetime | None) -> int | None:
    """Microseconds since the epoch, as USER_TERMS gives a row's creation time."""
    return None if value is None else (value - _EPOCH) // timedelta(microseconds=1)


def passing_sql(where: str) -> str:
    """Which of these ids of the user pass the filters; parameters: user, ids, the filters' parameters."""
    return f"SELECT m.id FROM engram_memories m WHERE m.user_id = ? AND m.id = ANY(?::text[]) AND {where}"


def _documents(texts: Sequence[str]) -> list[str]:
    """Each tsvector text as the documents of :meth:`.Postings.build` (" a b b"): a term once per
    position."""
    if not texts:
        return []
    joined = _POSITIONS.sub("", "\n".join(texts)).replace(" '", " ").replace("\n'", "\n ")
    documents = (" " + joined[1:] if joined.startswith("'") else joined).split("\n")
    for i, text in enumerate(texts):
        if "," in text:  # a term at several positions: repeated as often
            documents[i] = "".join(
                f" {term[1:]}" * (positions.count(",") + 1)
                for token in text.split(" ") for term, positions in [token.rsplit(":", 1)]
            ).replace("'", "")
    return documents


class Held:
    """One user's postings; rowids are places in ``ids``, which only grows (until a reload)."""

    __slots__ = ("changed", "ids", "postings", "version", "writes")

    def __init__(self, postings: Postings, ids: list[str], version: int) -> None:
        self.postings = postings
        self.ids = ids
        self.version = version
        self.writes = 0  # this store's writes to the user under way
        self.changed = threading.Condition()

    @property
    def nbytes(self) -> int:
        return self.postings.nbytes + 8 * len(self.ids)

    def add(self, memory_id: str, terms: Sequence[str], created: int) -> None:
        self.postings.add(len(self.ids), memory_id, terms, created)
        self.ids.append(memory_id)


class _Write:
    """A write of this store to some users, for the indexes held of them (see the module docstring)."""

    def __init__(self, cache: KeywordIndex, held: dict[str, Held]) -> None:
        self._cache = cache
        self.held = held
        self._before: dict[str, int] = {}
        self._after: dict[str, int] = {}
        self._done = False

    def __enter__(self) -> _Write:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._done:  # failed, or changed nothing: a search compares the versions
            self.done(None)

    def before(self, conn: Conn) -> None:
        if self.held:
            self._before = dict(conn.execute(_LOCK_VERSIONS, (list(self.held),)).fetchall())

    def after(self, conn: Conn) -> None:
        if self.held:
            self._after = dict(conn.execute(_VERSIONS, (list(self.held),)).fetchall())

    def done(self, apply: Callable[[str, Held], None] | None) -> None:
        """After the commit: ``apply`` the write to each index that was current before it (None:
        the write failed)."""
        self._done = True
        for user_id, held in self.held.items():
            with held.changed:
                before, after = self._before.get(user_id), self._after.get(user_id)
                if apply is not None and before is not None and after is not None and held.version == before:
                    apply(user_id, held)
                    held.version = after
                elif apply is not None:
                    self._cache.drop(user_id, held)
                held.writes -= 1
                held.changed.notify_all()
            self._cache.account(user_id, held)


class KeywordIndex:
    """Users' keyword postings, least recently searched dropped first beyond ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[str, Held] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self._total = 0
        self._loading: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._builds = Builds("engram-pg-keyword-builds")

    @property
    def nbytes(self) -> int:
        return self._total

    def users(self) -> list[str]:
        with self._lock:
            return list(self._entries)

    def get(self, user_id: str) -> Held | None:
        with self._lock:
            return self._entries.get(user_id)

    # -- bookkeeping --------------------------------------------------------------------------------
    def account(self, user_id: str, held: Held) -> None:
        with self._lock:
            if self._entries.get(user_id) is not held:
                return
            size = held.nbytes
            self._total += size - self._bytes.get(user_id, 0)
            self._bytes[user_id] = size
            while self._total > self.budget and len(self._entries) > 1:
                self._pop(next(iter(self._entries)))

    def drop(self, user_id: str, held: Held | None = None) -> None:
        """Forget the user's index (only ``held``, when given)."""
        with self._lock:
            if held is None or self._entries.get(user_id) is held:
                self._pop(user_id)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes.clear()
            self._total = 0

    def _pop(self, user_id: str) -> None:
        if self._entries.pop(user_id, None) is not None:
            self._total -= self._bytes.pop(user_id)

    # -- reads --------------------------------------------------------------------------------------
    def current(self, user_id: str, version: int, load: Callable[[], Held]) -> Held:
        """The user's index as of ``version`` or later, loaded by ``load`` when not held, once
        whoever else asks meanwhile."""
        held = self.fresh(user_id, version)
        if held is not None:
            return held
        with self._lock:
            gate = self._loading.setdefault(user_id, threading.Lock())
        with gate:
            try:
                held = self.fresh(user_id, version)  # loaded by whoever held the gate
                if held is None:
                    held = load()
                    with self._lock:
                        self._entries[user_id] = held
                        self._entries.move_to_end(user_id)
            finally:
                with self._lock:
                    self._loading.pop(user_id, None)
        self.account(user_id, held)
        return held

    def build_later(self, user_id: str, build: Callable[[], object]) -> None:
        """Run ``build`` on the loading thread unless a build of the user is queued or running."""
        self._builds.start(user_id, build)

    def close(self) -> None:
        self._builds.close()

    def fresh(self, user_id: str, version: int) -> Held | None:
        with self._lock:
            held = self._entries.get(user_id)
            if held is not None:
                self._entries.move_to_end(user_id)
        if held is None:
            return None
        with held.changed:
            # This store's write to the user may have committed before ``version`` was read.
            held.changed.wait_for(lambda: held.writes == 0, timeout=10.0)
            return held if held.version >= version else None

    def track(self, user_ids: Iterable[str]) -> _Write:
        """A write about to start to these users: call its ``before``/``after`` inside the write's
        transaction (before any change, after the last), then ``done``."""
        held: dict[str, Held] = {}
        for user_id in sorted(set(user_ids)):  # locked in this order: no deadlock between writers
            index = self.get(user_id)
            if index is not None:
                with index.changed:
                    index.writes += 1
                held[user_id] = index
        return _Write(self, held)


def load(conn: Conn, user_id: str) -> Held:
    """The user's index, read in one snapshot with its version."""
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    found = conn.execute(TERMS_VERSION, (user_id,)).fetchone()
    rows = conn.execute(USER_TERMS, (user_id,)).fetchall()
    ids, created, lengths, texts = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
    documents = _documents(texts)
    odd = [i for i, (d, n) in enumerate(zip(documents, lengths, strict=True)) if d.count(" ") != n]
    if odd:  # more positions of a term than a tsvector keeps: the terms again, from the text
        where = {ids[i]: i for i in odd}
        for memory_id, *columns in conn.execute(_USER_TEXTS, (user_id, list(where))).fetchall():
            documents[where[memory_id]] = "".join(" " + t for t in memory_terms(*columns))
    postings = Postings.build(range(len(ids)), ids, created, documents)
    return Held(postings, ids, int(found[0]) if found else 0)


Tx = Callable[[], AbstractContextManager[Conn]]


def search(
    index: KeywordIndex, tx: Tx, user_id: str, text: str, n: int, filters: Filters, build_inline: int = BUILD_INLINE,
) -> list[Hit]:
    """The ``n`` best keyword hits; ``tx`` gives a pooled connection in one transaction."""
    terms = query_terms(text)
    if not terms or n <= 0:
        return []
    rest = replace(filters, created_after=None, created_before=None)
    where, params = filter_sql(POSTGRES, rest)  # first: invalid filters fail before any work
    with tx() as conn:
        found = conn.execute(TERMS_VERSION, (user_id,)).fetchone()
    if found is None:
        return []

    def reload() -> Held:
        with tx() as conn:
            return load(conn, user_id)

    version = int(found[0])
    held = index.fresh(user_id, version)
    if held is None:
        with tx() as conn:
            size = conn.execute(_SIZE, (user_id, build_inline + 1)).fetchone()
        if size is not None and int(size[0]) > build_inline:
            index.build_later(user_id, lambda: index.current(user_id, version, reload))
            with tx() as conn:
                hits = scan_hits(conn, user_id, terms, n, filters, SCAN_LIMIT)
            if hits is not None:
                return hits
        held = index.current(user_id, version, reload)  # waits for a load under way
    after, before = to_us(filters.created_after), to_us(filters.created_before)

    def passing(rowids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        if not params and where == POSTGRES.true:
            return None
        ids = held.ids
        wanted = [ids[r] for r in rowids.tolist()]
        with tx() as conn:
            rows = POSTGRES.run(conn, passing_sql(where), (user_id, wanted, *params)).fetchall()
        kept = {r[0] for r in rows}
        mask = np.fromiter((m in kept for m in wanted), dtype=bool, count=len(wanted))
        return np.asarray(rowids[mask], dtype=np.int64)

    return exact_best(lambda depth: held.postings.scores(terms, after, before, depth=depth), n, passing)
