"""Recall by access pattern (the recall modes): relevant, recent, important, frequent, temporal, by kind,
linked, contradictions. Each function takes a context (or a ``Memory``) first, and each mode is a preset of
the retrieval engine (:mod:`engram.retrieve.engine`): it names the store lists to read, the filters, the
signals and their weights, and the order. Departures from the recall-modes spec:

* Relevant score is ``similarity * (similarity_weight + salience_weight * salience)``, not the spec's
  plain sum, so salience never outweighs a strong relevance match (see
  :func:`engram.salience.combined_score`); ``RecallOptions`` lives there and is re-exported here.
* Recent, important and frequent keep their mode's order (the spec re-sorts all modes by similarity,
  breaking its own criteria 2-4); their score is the salience, as in the spec's temporal results.
* Salience is derived at read time, so "important" cannot be an ORDER BY: it reads the top of three
  store lists (importance, creation time, access count), growing them four-fold until the k-th
  salience found beats a bound on every memory outside them, or a list ends.
* ``user_id`` is always required (the spec's temporal recall takes none to mean every user).
* Temporal results are newest first (the spec's ``ORDER BY created_at DESC``). Only ``recall``
  tracks access, as the spec's ``RecallAsync``, with one ``record_access`` per call.
* Kinds: the spec's types (semantic, episodic, procedural) are accepted for fact, episode and procedure.
* Linked recall follows outgoing links (the spec's ``GetLinksFromAsync``) to memories of any status,
  superseded included (archived ones can be left out); for contradictions a
  ``contradicts`` link in either direction counts, since contradiction is symmetric; the link is a
  filter, so ``max_results`` counts memories that have one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

import numpy as np

from engram.context import context_of
from engram.errors import InvalidQuery, ValidationError
from engram.ext import Vector
from engram.ingest.embed import embed_texts
from engram.metrics import RETRIEVER_LATENCY, RETRIEVER_QUERIES, RETRIEVER_RESULT_COUNT
from engram.model import KIND_ALIASES, KINDS, STATUSES, Filters, Hit, MemoryRecord
from engram.recall_types import Recall, RecalledMemory
from engram.retrieve.engine import Evidence, Raw, Source, Strategy, Weighting, run
from engram.retrieve.signals import similarity_range
from engram.retrieve.types import Scored
from engram.salience import (
    DEFAULT_OPTIONS,
    RecallOptions,
    access_term,
    check_unit,
    combined_score,
    recency,
    salience,
)
from engram.validate import aware_time, choice, integer, to_utc, validate_id

if TYPE_CHECKING:
    from engram.context import Context, ContextSource

__all__ = [
    "MAX_POOL", "MODES", "Recall", "RecallOptions", "RecalledMemory", "combined_score", "find_contradictions",
    "recall", "recall_by_kind", "recall_linked", "recall_temporal",
]

log = logging.getLogger("engram.recall")

#: The recall mode names (``RecallMode``), as they appear in logs and metric labels.
MODES = {"relevant": "Relevant", "recent": "Recent", "important": "Important", "frequent": "Frequent"}
#: The other modes, named to :func:`recall`: answered in relevant mode, as the spec's ``RecallAsync``
#: does; each has a function of its own (recall_temporal, recall_by_kind, recall_linked, find_contradictions).
AS_RELEVANT = frozenset({"temporal", "by_type", "bytype", "by_kind", "linked", "contradictions"})
MAX_RESULTS = 1000
MAX_POOL = 10_000  # the most a temporal recall may be asked for
MAX_DEPTH = 3
MAX_LINKED = 1000  # nodes one traversal may visit: a dense graph must not turn one call into a crawl
QUERY_LOG_CHARS = 50


# -- shared plumbing ----------------------------------------------------------------------------------
def _user(ctx: Context, user_id: str) -> str:
    # Isolation: there is no "every user" recall, so a missing user_id is an error, not a wildcard.
    return ctx.user(user_id)


def _now(now: datetime | str | None) -> datetime:
    return datetime.now(UTC) if now is None else aware_time(now, "now")  # its zone is the asker's calendar


def _count(name: str, value: int, high: int) -> int:
    return integer(name, value, 1, high)


def _kind(kind: str | None) -> str | None:
    """A kind, or one of the specifications' type names (``KIND_ALIASES``: semantic -> fact, ...)."""
    if kind is None:
        return None
    kind = KIND_ALIASES.get(kind.casefold(), kind) if isinstance(kind, str) else kind
    choice("kind", kind, (*KINDS, *KIND_ALIASES))
    return kind


def _filters(ctx: Context, kind: str | None, project_id: str | None, include_archived: bool) -> Filters:
    kind = _kind(kind)
    project = validate_id(project_id, "project_id", ctx.limits, required=False)
    # Superseded and deleted memories are never recalled; archived ones only when asked for.
    statuses = ("active", "archived") if include_archived else ("active",)
    return Filters(kinds=None if kind is None else (kind,), project_id=project, statuses=statuses)


def _recalled(items: list[Scored], *, score: str | None = None) -> list[RecalledMemory]:
    """The engine's answer as recall reports it: one reason, and the score (or ``score``'s signal)."""
    return [RecalledMemory(s.record, s.score if score is None else s.signals[score], s.reasons[0]) for s in items]


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


#: Salience alone is the score of every mode but relevant's.
BY_SALIENCE = Weighting({"salience": 1.0})


def _floor(ctx: Context, options: RecallOptions) -> float:
    """The similarity below which a memory is not recalled (see ``RecallOptions.min_similarity``)."""
    if options.min_similarity is not None:
        return options.min_similarity
    return similarity_range(ctx.embedder())[0]


def _by_salience(
    now: datetime, options: RecallOptions, min_salience: float, reason: Callable[[MemoryRecord, float], str],
    admit: Callable[[MemoryRecord, Raw], bool] | None = None,
) -> Callable[[MemoryRecord, Raw], Evidence | None]:
    def judge(record: MemoryRecord, raw: Raw) -> Evidence | None:
        value = salience(record, now=now, config=options.salience)
        if value < min_salience or (admit is not None and not admit(record, raw)):
            return None
        return Evidence({"salience": value}, (reason(record, value),))

    return judge


# -- the modes: presets of the retrieval engine (engram.retrieve.engine) -----------------------------
def _relevant(
    ctx: Context, user: str, query: str, want: int, filters: Filters, min_salience: float,
    options: RecallOptions, now: datetime, admit: Callable[[MemoryRecord], bool] | None = None,
) -> list[Scored]:
    """Similarity gated: ``similarity * (similarity_weight + salience_weight * salience)``, best
    first, ties to the larger id; ``admit`` narrows what may be recalled before the cut."""
    vector = _embed(ctx, query, "query")
    floor = _floor(ctx, options)

    def judge(record: MemoryRecord, raw: Raw) -> Evidence | None:
        sim = raw["semantic"][record.id]
        value = salience(record, now=now, config=options.salience)
        if sim < floor or value < min_salience or (admit is not None and not admit(record)):
            return None
        return Evidence({"similarity": sim, "salience": value}, (f"Similarity: {sim:.2f}, Salience: {value:.2f}",))

    source = Source("semantic", lambda n: ctx.store.vector_search(user, vector, n, filters),
                    want * options.candidate_multiplier)
    weighting = Weighting({"salience": options.salience_weight}, gate="similarity", base=options.similarity_weight)
    return run(ctx.store, user, Strategy("relevant", (source,), filters, judge, weighting, want, ties="larger_id"))


def _important(
    ctx: Context, user: str, want: int, filters: Filters, min_salience: float, options: RecallOptions,
    now: datetime, reason: Callable[[MemoryRecord, float], str] = lambda _r, v: f"Salience: {v:.2f}",
) -> list[Scored]:
    """Salience is derived at read time: the top of three store lists (importance, creation time,
    access count), read further while a memory outside all three could still be among the best."""
    config, store = options.salience, ctx.store
    n = max(100, want * options.candidate_multiplier)
    sources = (
        Source("importance", lambda k: store.most_important(user, k, filters), n, grows=True),
        Source("recent", lambda k: store.most_recent(user, k, filters), n, grows=True),
        Source("accessed", lambda k: store.most_accessed(user, k, filters), n, grows=True),
    )

    def bound(lists: Mapping[str, list[Hit]]) -> float:
        # A memory outside all three lists is no more important, no newer and no more accessed
        # than each list's last entry, so its salience is at most this.
        newest_unseen = datetime.fromtimestamp(lists["recent"][-1][1], UTC)
        age_days = (now - newest_unseen).total_seconds() / 86_400
        return (
            config.importance_weight * lists["importance"][-1][1]
            + config.recency_weight * recency(age_days, config.max_half_life(filters.kinds))
            + config.access_weight * access_term(int(lists["accessed"][-1][1]), config.access_saturation)
        )

    judge = _by_salience(now, options, min_salience, reason)
    return run(store, user, Strategy("important", sources, filters, judge, BY_SALIENCE, want, ties="larger_id",
                                     floor=min_salience, bound=bound))


def _by_usage(
    ctx: Context, user: str, mode: str, want: int, filters: Filters, min_salience: float, opts: RecallOptions,
    now: datetime,
) -> list[Scored]:
    """Recent (last access, never-accessed last) or frequent (access count), in the store's order."""
    store = ctx.store
    order = store.most_recently_accessed if mode == "recent" else store.most_accessed

    def reason(record: MemoryRecord, value: float) -> str:
        seen = record.last_accessed_at.isoformat() if record.last_accessed_at else "never"
        key = f"Last accessed: {seen}" if mode == "recent" else f"Access count: {record.access_count}"
        return f"{key}, Salience: {value:.2f}"

    source = Source(mode, lambda n: order(user, n, filters), want * opts.candidate_multiplier, grows=True)
    judge = _by_salience(now, opts, min_salience, reason)
    return run(store, user, Strategy(mode, (source,), filters, judge, BY_SALIENCE, want, order="source"))


def recall(
    source: ContextSource, query: str | None = None, *, user_id: str, mode: str = "relevant", max_results: int = 10,
    kind: str | None = None, min_salience: float = 0.0, project_id: str | None = None,
    include_archived: bool = False, now: datetime | str | None = None, options: RecallOptions | None = None,
) -> Recall:
    """Recall by mode (``RecallAsync``): ``query`` is required in relevant mode and only logged otherwise.
    The other modes' names (temporal, by_type, linked, contradictions) are answered in relevant mode."""
    started = time.perf_counter()
    ctx = context_of(source)
    user = _user(ctx, user_id)
    if isinstance(mode, str) and mode.casefold() in AS_RELEVANT:
        if not (isinstance(query, str) and query.strip()):
            raise InvalidQuery("query", f"mode {mode!r} is answered in relevant mode, which needs a query "
                               "(recall_temporal, recall_by_kind, recall_linked and find_contradictions read "
                               "by time, kind, link or content)")
        mode = "relevant"
    choice("mode", mode, list(MODES))
    if query is not None and not isinstance(query, str):
        raise InvalidQuery("query", f"must be a string, got {type(query).__name__}")
    want = _count("max_results", max_results, MAX_RESULTS)
    check_unit("min_salience", min_salience, ValidationError)
    opts = options or DEFAULT_OPTIONS
    when = _now(now)
    filters = _filters(ctx, kind, project_id, include_archived)
    if mode == "relevant":
        found = _relevant(ctx, user, query or "", want, filters, min_salience, opts, when)
    elif mode == "important":
        found = _important(ctx, user, want, filters, min_salience, opts, when)
    else:
        found = _by_usage(ctx, user, mode, want, filters, min_salience, opts, when)
    items = _recalled(found)
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
    begin, finish = to_utc(start, "start"), to_utc(end, "end")
    if begin > finish:
        raise ValidationError("start", f"must not be after end ({begin.isoformat()} > {finish.isoformat()})")
    want = _count("limit", limit, MAX_POOL)
    opts = options or DEFAULT_OPTIONS
    when = _now(now)
    filters = _filters(ctx, kind, project_id, include_archived)
    topic_vector = None if topic is None else _embed(ctx, topic, "topic")
    floor = -1.0 if topic_vector is None else _floor(ctx, opts)  # without a topic, no model is loaded

    def topic_similarity(records: list[MemoryRecord]) -> Raw:
        if topic_vector is None:
            return {}
        vectors = ctx.store.vectors(user, [r.id for r in records])
        # Stored and query vectors are L2-normalized (the Embedder contract): a dot product is the cosine.
        return {"topic": {i: float(np.dot(v, topic_vector)) for i, v in vectors.items()}}

    def close(record: MemoryRecord, raw: Raw) -> bool:
        return topic_vector is None or raw["topic"].get(record.id, -1.0) >= floor

    in_range = Source("temporal", lambda n: ctx.store.by_time_range(user, begin, finish, n, filters),
                      want if topic is None else want * opts.candidate_multiplier, grows=True)
    judge = _by_salience(when, opts, 0.0, lambda _r, _v: "Temporal match", admit=close)
    found = run(ctx.store, user, Strategy("temporal", (in_range,), filters, judge, BY_SALIENCE, want, order="source",
                                          extra=topic_similarity))
    result = _finish(ctx, "temporal", "Temporal", _recalled(found), started)
    log.info("[MEM:RETRIEVE] Temporal recall found %d memories from %s to %s", result.count, begin.isoformat(),
             finish.isoformat())
    return result


def recall_by_kind(
    source: ContextSource, kind: str, *, user_id: str, limit: int = 10, project_id: str | None = None,
    include_archived: bool = False, now: datetime | str | None = None, options: RecallOptions | None = None,
) -> Recall:
    """Recall by kind (``RecallByTypeAsync``): the most salient memories of one kind; the
    specifications' type names are accepted for the kinds they are stored as (semantic: fact,
    episodic: episode, procedural: procedure)."""
    started = time.perf_counter()
    ctx = context_of(source)
    user = _user(ctx, user_id)
    want = _count("limit", limit, MAX_RESULTS)
    filters = _filters(ctx, kind or "", project_id, include_archived)  # "" is refused as no kind
    kind = _kind(kind) or kind
    found = _important(ctx, user, want, filters, 0.0, options or DEFAULT_OPTIONS, _now(now),
                       reason=lambda _r, value: f"Kind: {kind}, Salience: {value:.2f}")
    return _finish(ctx, "kind", "Type", _recalled(found), started)


def _link_name(link_type: str) -> str:
    """``contradicts`` -> ``Contradicts``, ``part_of`` -> ``PartOf``: the spec's enum spelling."""
    return "".join(part[:1].upper() + part[1:] for part in link_type.replace("-", "_").split("_") if part)


def recall_linked(
    source: ContextSource, memory_id: str, *, user_id: str, link_types: Sequence[str] | None = None, depth: int = 1,
    direction: Literal["out", "both"] = "out", include_archived: bool = True,
) -> Recall:
    """Memories within ``depth`` (1-3) links of ``memory_id``, nearest first, breadth-first. Score is the
    product of link strengths along the strongest shortest path; the reason names the last link's types.

    A linked memory is returned whatever its status, as the spec returns a link's target: from a
    current fact one walks to the fact it superseded. ``include_archived=False`` leaves archived ones out.
    """
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
    found: list[tuple[int, float, str, tuple[str, ...]]] = []  # depth, score, id, link types
    for level in range(1, depth + 1):
        best: dict[str, tuple[float, tuple[str, ...]]] = {}
        for node, strength in frontier.items():
            for link in ctx.store.links(user, node):
                other = link.to_id if link.from_id == node else link.from_id
                if (link.from_id != node and direction == "out") or other in visited:
                    continue
                if wanted is not None and link.type.casefold() not in wanted:
                    continue
                score = strength * link.strength
                if other not in best or score > best[other][0]:
                    best[other] = (score, (link.type,))
                elif score == best[other][0] and link.type not in best[other][1]:
                    # Two links of one strength (supersedes and contradicts): the memory once, both named.
                    best[other] = (score, (*best[other][1], link.type))
        ordered = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[: MAX_LINKED - len(visited)]
        for other, (score, link_types_found) in ordered:
            visited.add(other)
            found.append((level, score, other, link_types_found))
        frontier = {other: score for other, (score, _) in ordered}
    hits = [(other, score) for _, score, other, _ in found]
    via = {other: types for _, _, other, types in found}

    def judge(record: MemoryRecord, raw: Raw) -> Evidence:
        names = ", ".join(_link_name(t) for t in via[record.id])
        return Evidence({"link_strength": raw["links"][record.id]}, (f"Linked via {names}",))

    statuses = tuple(s for s in STATUSES if s != "deleted" and (include_archived or s != "archived"))
    linked = Strategy("linked", (Source("links", lambda n: hits[:n], len(hits)),),
                      Filters(statuses=statuses), judge, Weighting({"link_strength": 1.0}),
                      len(hits), order="source")
    return _finish(ctx, "linked", "Linked", _recalled(run(ctx.store, user, linked)), started)


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

    def contradicts(record: MemoryRecord) -> bool:
        return any(link.type.casefold() == "contradicts" for link in ctx.store.links(user, record.id))

    found = _relevant(ctx, user, content, want, filters, min_salience, opts, _now(now), admit=contradicts)
    items = [RecalledMemory(s.record, s.signals["salience"], "Potential contradiction") for s in found]
    return _finish(ctx, "contradictions", "Contradictions", items, started)
