"""Recall by access pattern (the recall modes): relevant, recent, important, frequent, temporal, by kind,
linked, contradictions. Each function takes a context (or a ``Memory``) first. Departures from the recall-modes spec:

* Relevant score is ``similarity * (similarity_weight + salience_weight * salience)``, not the spec's
  plain sum, so salience never outweighs a strong relevance match (see
  :func:`engram.salience.combined_score`); ``RecallOptions`` lives there and is re-exported here.
* Recent, important and frequent keep their mode's order (the spec re-sorts all modes by similarity,
  breaking its own criteria 2-4); their score is the salience, as in the spec's temporal results.
* Salience is derived at read time, so "important" cannot be an ORDER BY: it reads the top of three
  store lists (importance, creation time, access count), growing them four-fold until the k-th
  salience found is at least a bound on every memory outside them, or ``MAX_POOL`` rows each.
* ``user_id`` is always required (the spec's temporal recall takes none to mean every user).
* Temporal results are newest first (the spec's ``ORDER BY created_at DESC``). Only ``recall``
  tracks access, as the spec's ``RecallAsync``, with one ``record_access`` per call.
* Linked recall follows outgoing links (the spec's ``GetLinksFromAsync``); for contradictions a
  ``contradicts`` link in either direction counts, since contradiction is symmetric.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

import numpy as np

from engram.context import context_of
from engram.errors import InvalidQuery, ValidationError
from engram.ext import Vector
from engram.ingest.embed import embed_texts
from engram.metrics import RETRIEVER_LATENCY, RETRIEVER_QUERIES, RETRIEVER_RESULT_COUNT
from engram.model import KINDS, Filters, Hit, MemoryRecord
from engram.retrieve.timeparse import parse_datetime
from engram.salience import (
    DEFAULT_OPTIONS,
    RecallOptions,
    access_term,
    check_unit,
    combined_score,
    recency,
    salience,
)
from engram.validate import choice, integer, to_utc, validate_id

if TYPE_CHECKING:
    from engram.context import Context, ContextSource

__all__ = [
    "MAX_POOL", "MODES", "Recall", "RecallOptions", "RecalledMemory", "combined_score", "find_contradictions",
    "recall", "recall_by_kind", "recall_linked", "recall_temporal",
]

log = logging.getLogger("engram.recall")

#: The recall mode names (``RecallMode``), as they appear in logs and metric labels.
MODES = {"relevant": "Relevant", "recent": "Recent", "important": "Important", "frequent": "Frequent"}
MAX_RESULTS = 1000
MAX_POOL = 10_000
MAX_DEPTH = 3
MAX_LINKED = 1000  # nodes one traversal may visit: a dense graph must not turn one call into a crawl
QUERY_LOG_CHARS = 50

_T = TypeVar("_T", tuple[float, MemoryRecord], tuple[float, float, float, MemoryRecord])


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """One recalled memory (``ScoredMemory``): the record as stored before this recall, a score and why."""

    record: MemoryRecord
    score: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.record.to_dict(), "score": round(self.score, 6), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Recall:
    """A recall's result (``MemoryRecallResult``): memories best first, their count, time taken, and the mode."""

    memories: tuple[RecalledMemory, ...]
    count: int
    duration_ms: float
    mode: str

    def to_dict(self) -> dict[str, Any]:
        memories = [m.to_dict() for m in self.memories]
        return {"mode": self.mode, "count": self.count, "duration_ms": round(self.duration_ms, 3), "memories": memories}


# -- shared plumbing ----------------------------------------------------------------------------------
class RecallKwargs(TypedDict, total=False):
    """The options of :func:`recall`, typed for ``Memory.recall(**options)``."""

    max_results: int
    kind: str | None
    min_salience: float
    project_id: str | None
    include_archived: bool
    now: datetime | str | None
    options: RecallOptions | None


class TemporalKwargs(TypedDict, total=False):
    """The options of :func:`recall_temporal`."""

    kind: str | None
    project_id: str | None
    include_archived: bool
    limit: int
    now: datetime | str | None
    options: RecallOptions | None


class ByKindKwargs(TypedDict, total=False):
    """The options of :func:`recall_by_kind`."""

    project_id: str | None
    include_archived: bool
    now: datetime | str | None
    options: RecallOptions | None


class LinkedKwargs(TypedDict, total=False):
    """The options of :func:`recall_linked`."""

    direction: Literal["out", "both"]
    include_archived: bool


class ContradictionKwargs(TypedDict, total=False):
    """The options of :func:`find_contradictions`."""

    max_results: int
    min_salience: float
    now: datetime | str | None
    options: RecallOptions | None


def _user(ctx: Context, user_id: str) -> str:
    # Isolation: there is no "every user" recall, so a missing user_id is an error, not a wildcard.
    return ctx.user(user_id)


def _now(now: datetime | str | None) -> datetime:
    return datetime.now(UTC) if now is None else to_utc(now, "now")


def _count(name: str, value: int, high: int) -> int:
    return integer(name, value, 1, high)


def _filters(ctx: Context, kind: str | None, project_id: str | None, include_archived: bool) -> Filters:
    if kind is not None:
        choice("kind", kind, KINDS)
    project = validate_id(project_id, "project_id", ctx.limits, required=False)
    # Superseded and deleted memories are never recalled; archived ones only when asked for.
    statuses = ("active", "archived") if include_archived else ("active",)
    return Filters(kinds=None if kind is None else (kind,), project_id=project, statuses=statuses)


def _admits(record: MemoryRecord, user: str, filters: Filters) -> bool:
    # Checked again after fetch: a store bug must not leak another user's or an excluded memory.
    return (record.user_id == user and record.status in filters.statuses
            and (filters.kinds is None or record.kind in filters.kinds)
            and (filters.project_id is None or record.project_id == filters.project_id))


def _ranked(items: list[_T]) -> list[_T]:
    """Best score (first element) first; ties go to the larger id (newer, for generated ULIDs) so
    equal scores order the same way every time."""
    by_id = sorted(items, key=lambda item: item[-1].id, reverse=True)
    return sorted(by_id, key=lambda item: -item[0])


def _walk(
    ctx: Context, user: str, source: Callable[[int], list[Hit]],
    keep: Callable[[list[MemoryRecord]], list[MemoryRecord]], want: int, start: int,
) -> list[MemoryRecord]:
    """The first ``want`` records of an ordered store list that ``keep`` lets through, fetching more
    of the list (four-fold, up to MAX_POOL) while filters in Python leave too few."""
    n = min(MAX_POOL, max(start, want))
    while True:
        hits = source(n)
        kept = keep(ctx.store.fetch(user, [memory_id for memory_id, _ in hits]))
        if len(kept) >= want or len(hits) < n or n >= MAX_POOL:
            return kept[:want]
        n = min(MAX_POOL, n * 4)


def _finish(ctx: Context, mode: str, label: str, items: list[RecalledMemory], started: float) -> Recall:
    duration_ms = (time.perf_counter() - started) * 1000
    ctx.metrics.increment(RETRIEVER_QUERIES, mode=label)
    ctx.metrics.observe(RETRIEVER_LATENCY, duration_ms)
    ctx.metrics.observe(RETRIEVER_RESULT_COUNT, len(items))
    return Recall(tuple(items), len(items), duration_ms, mode)


def _embed(ctx: Context, text: str, field: str) -> Vector:
    if not isinstance(text, str) or not text.strip():
        raise InvalidQuery(field, "must be a non-empty string")
    if len(text) > ctx.config().query_max_chars:
        raise InvalidQuery(field, f"must be at most {ctx.config().query_max_chars} characters")
    vector: Vector = embed_texts(ctx.embedder(), [text], as_query=True)[0]
    return vector


# -- the modes ----------------------------------------------------------------------------------------
def _relevant(
    ctx: Context, user: str, query: str, want: int, filters: Filters, min_salience: float,
    options: RecallOptions, now: datetime,
) -> list[tuple[float, float, float, MemoryRecord]]:
    """(score, similarity, salience, record) best first."""
    vector = _embed(ctx, query, "query")
    hits = ctx.store.vector_search(user, vector, want * options.candidate_multiplier, filters)
    similarity = {memory_id: score for memory_id, score in hits if score >= options.min_similarity}
    out: list[tuple[float, float, float, MemoryRecord]] = []
    for record in ctx.store.fetch(user, list(similarity)):
        value = salience(record, now=now, config=options.salience)
        if _admits(record, user, filters) and value >= min_salience:
            sim = similarity[record.id]
            out.append((combined_score(sim, value, options), sim, value, record))
    return _ranked(out)[:want]


def _important(
    ctx: Context, user: str, want: int, filters: Filters, min_salience: float, options: RecallOptions,
    now: datetime,
) -> list[tuple[float, MemoryRecord]]:
    config = options.salience
    n = min(MAX_POOL, max(100, want * options.candidate_multiplier))
    while True:
        store = ctx.store
        lists = [store.most_important(user, n, filters), store.most_recent(user, n, filters),
                 store.most_accessed(user, n, filters)]
        ids = list(dict.fromkeys(memory_id for hits in lists for memory_id, _ in hits))
        scored = [(salience(r, now=now, config=config), r) for r in ctx.store.fetch(user, ids)]
        kept = _ranked([(s, r) for s, r in scored if _admits(r, user, filters) and s >= min_salience])
        if any(len(hits) < n for hits in lists) or n >= MAX_POOL:
            return kept[:want]  # a short list holds every memory the filters allow: nothing is unseen
        # Any memory outside all three lists is no more important, no newer and no more accessed than
        # each list's last entry, so its salience is at most this.
        newest_unseen = datetime.fromtimestamp(lists[1][-1][1], UTC)
        age_days = (now - newest_unseen).total_seconds() / 86_400
        bound = (
            config.importance_weight * lists[0][-1][1]
            + config.recency_weight * recency(age_days, config.max_half_life(filters.kinds))
            + config.access_weight * access_term(int(lists[2][-1][1]), config.access_saturation)
        )
        if bound < min_salience or (len(kept) >= want and kept[want - 1][0] >= bound):
            return kept[:want]
        n = min(MAX_POOL, n * 4)


def _by_usage(
    ctx: Context, user: str, mode: str, want: int, filters: Filters, min_salience: float, opts: RecallOptions,
    now: datetime,
) -> list[RecalledMemory]:
    """Recent (last access, never-accessed last) or frequent (access count), in the store's order."""
    store = ctx.store
    order = store.most_recently_accessed if mode == "recent" else store.most_accessed

    def keep(records: list[MemoryRecord]) -> list[MemoryRecord]:
        admitted = [r for r in records if _admits(r, user, filters)]
        return [r for r in admitted if salience(r, now=now, config=opts.salience) >= min_salience]

    out = []
    start = want * opts.candidate_multiplier
    for record in _walk(ctx, user, lambda n: order(user, n, filters), keep, want, start):
        value = salience(record, now=now, config=opts.salience)
        seen = record.last_accessed_at.isoformat() if record.last_accessed_at else "never"
        key = f"Last accessed: {seen}" if mode == "recent" else f"Access count: {record.access_count}"
        out.append(RecalledMemory(record, value, f"{key}, Salience: {value:.2f}"))
    return out


def recall(
    source: ContextSource, query: str | None = None, *, user_id: str, mode: str = "relevant", max_results: int = 10,
    kind: str | None = None, min_salience: float = 0.0, project_id: str | None = None,
    include_archived: bool = False, now: datetime | str | None = None, options: RecallOptions | None = None,
) -> Recall:
    """Recall by mode (``RecallAsync``): ``query`` is required in relevant mode and only logged otherwise."""
    started = time.perf_counter()
    ctx = context_of(source)
    user = _user(ctx, user_id)
    choice("mode", mode, list(MODES))
    if query is not None and not isinstance(query, str):
        raise InvalidQuery("query", f"must be a string, got {type(query).__name__}")
    want = _count("max_results", max_results, MAX_RESULTS)
    check_unit("min_salience", min_salience, ValidationError)
    opts = options or DEFAULT_OPTIONS
    when = _now(now)
    filters = _filters(ctx, kind, project_id, include_archived)
    items: list[RecalledMemory] = []
    if mode == "relevant":
        for score, sim, value, record in _relevant(ctx, user, query or "", want, filters, min_salience, opts, when):
            items.append(RecalledMemory(record, score, f"Similarity: {sim:.2f}, Salience: {value:.2f}"))
    elif mode == "important":
        for value, record in _important(ctx, user, want, filters, min_salience, opts, when):
            items.append(RecalledMemory(record, value, f"Salience: {value:.2f}"))
    else:
        items = _by_usage(ctx, user, mode, want, filters, min_salience, opts, when)
    if opts.track_access and items:
        # One statement for the whole result, not one per memory as in the spec.
        ctx.store.record_access(user, [item.record.id for item in items], when)
    result = _finish(ctx, mode, MODES[mode], items, started)
    log.info(
        "[MEM:RETRIEVE] Recalled %d memories in %s mode for query '%s' in %dms",
        result.count, MODES[mode], (query or "")[:QUERY_LOG_CHARS], round(result.duration_ms),
    )
    return result


def recall_temporal(
    source: ContextSource, start: datetime | str, end: datetime | str, *, user_id: str, topic: str | None = None,
    kind: str | None = None, project_id: str | None = None, include_archived: bool = False, limit: int = 1000,
    now: datetime | str | None = None, options: RecallOptions | None = None,
) -> Recall:
    """Memories created in [start, end], newest first; with ``topic``, only those at least
    ``min_similarity`` similar to it. ``limit`` bounds the answer (the spec has none)."""
    started = time.perf_counter()
    ctx = context_of(source)
    user = _user(ctx, user_id)
    begin, finish = parse_datetime(start, "start"), parse_datetime(end, "end")
    if begin > finish:
        raise ValidationError("start", f"must not be after end ({begin.isoformat()} > {finish.isoformat()})")
    want = _count("limit", limit, MAX_POOL)
    opts = options or DEFAULT_OPTIONS
    when = _now(now)
    filters = _filters(ctx, kind, project_id, include_archived)
    topic_vector = None if topic is None else _embed(ctx, topic, "topic")

    def keep(records: list[MemoryRecord]) -> list[MemoryRecord]:
        admitted = [r for r in records if _admits(r, user, filters)]
        if topic_vector is None:
            return admitted
        vectors = ctx.store.vectors(user, [r.id for r in admitted])
        # Stored and query vectors are L2-normalized (the Embedder contract): a dot product is the cosine.
        close = {i for i, v in vectors.items() if float(np.dot(v, topic_vector)) >= opts.min_similarity}
        return [r for r in admitted if r.id in close]

    records = _walk(
        ctx, user, lambda n: ctx.store.by_time_range(user, begin, finish, n, filters), keep, want,
        want if topic is None else want * opts.candidate_multiplier,
    )
    items = [RecalledMemory(r, salience(r, now=when, config=opts.salience), "Temporal match") for r in records]
    result = _finish(ctx, "temporal", "Temporal", items, started)
    log.info("[MEM:RETRIEVE] Temporal recall found %d memories from %s to %s", result.count, begin.isoformat(),
             finish.isoformat())
    return result


def recall_by_kind(
    source: ContextSource, kind: str, *, user_id: str, limit: int = 10, project_id: str | None = None,
    include_archived: bool = False, now: datetime | str | None = None, options: RecallOptions | None = None,
) -> Recall:
    """Recall by kind (``RecallByTypeAsync``): the most salient memories of one kind."""
    started = time.perf_counter()
    ctx = context_of(source)
    user = _user(ctx, user_id)
    want = _count("limit", limit, MAX_RESULTS)
    filters = _filters(ctx, kind or "", project_id, include_archived)  # "" is refused as no kind
    found = _important(ctx, user, want, filters, 0.0, options or DEFAULT_OPTIONS, _now(now))
    items = [RecalledMemory(r, value, f"Kind: {kind}, Salience: {value:.2f}") for value, r in found]
    return _finish(ctx, "kind", "Type", items, started)


def _link_name(link_type: str) -> str:
    """``contradicts`` -> ``Contradicts``, ``part_of`` -> ``PartOf``: the spec's enum spelling."""
    return "".join(part[:1].upper() + part[1:] for part in link_type.replace("-", "_").split("_") if part)


def recall_linked(
    source: ContextSource, memory_id: str, *, user_id: str, link_types: Sequence[str] | None = None, depth: int = 1,
    direction: Literal["out", "both"] = "out", include_archived: bool = False,
) -> Recall:
    """Memories within ``depth`` (1-3) links of ``memory_id``, nearest first, breadth-first. Score is the
    product of link strengths along the strongest shortest path; the reason names the last link's type."""
    started = time.perf_counter()
    ctx = context_of(source)
    user = _user(ctx, user_id)
    _count("depth", depth, MAX_DEPTH)
    choice("direction", direction, ("out", "both"))
    if isinstance(link_types, str):
        raise ValidationError("link_types", "must be a list of link types, not a string")
    wanted = None if not link_types else {t.casefold() for t in link_types}
    ctx.get(user, memory_id)  # MemoryNotFound for an unknown or another user's memory
    visited = {memory_id}
    frontier = {memory_id: 1.0}
    found: list[tuple[int, float, str, str]] = []  # depth, score, id, link type
    for level in range(1, depth + 1):
        best: dict[str, tuple[float, str]] = {}
        for node, strength in frontier.items():
            for link in ctx.store.links(user, node):
                other = link.to_id if link.from_id == node else link.from_id
                if (link.from_id != node and direction == "out") or other in visited:
                    continue
                if wanted is not None and link.type.casefold() not in wanted:
                    continue
                score = strength * link.strength
                if other not in best or score > best[other][0]:
                    best[other] = (score, link.type)
        ordered = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[: MAX_LINKED - len(visited)]
        for other, (score, link_type) in ordered:
            visited.add(other)
            found.append((level, score, other, link_type))
        frontier = {other: score for other, (score, _) in ordered}
    filters = _filters(ctx, None, None, include_archived)
    records = {r.id: r for r in ctx.store.fetch(user, [other for _, _, other, _ in found])}
    items = [
        RecalledMemory(records[other], score, f"Linked via {_link_name(link_type)}")
        for _, score, other, link_type in found
        if other in records and _admits(records[other], user, filters)
    ]
    return _finish(ctx, "linked", "Linked", items, started)


def find_contradictions(
    source: ContextSource, content: str, *, user_id: str, max_results: int = 20, min_salience: float = 0.3,
    now: datetime | str | None = None, options: RecallOptions | None = None,
) -> Recall:
    """Memories similar to ``content`` that already take part in a ``contradicts`` link (the spec's
    MaxResults 20 and MinSalience 0.3); best relevance first, scored by salience."""
    started = time.perf_counter()
    ctx = context_of(source)
    user = _user(ctx, user_id)
    want = _count("max_results", max_results, MAX_RESULTS)
    opts = options or DEFAULT_OPTIONS
    filters = _filters(ctx, None, None, False)
    items: list[RecalledMemory] = []
    for _, _, value, record in _relevant(ctx, user, content, want, filters, min_salience, opts, _now(now)):
        if any(link.type.casefold() == "contradicts" for link in ctx.store.links(user, record.id)):
            items.append(RecalledMemory(record, value, "Potential contradiction"))
    return _finish(ctx, "contradictions", "Contradictions", items, started)
