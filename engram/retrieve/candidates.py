"""Stage 2: every source is a ranked list of (id, raw score); the union is what stage 3 scores.

Each source can recall a memory on its own: a memory found only by its entity, its time, or a link
still reaches ranking (Mem0 recalls only what its vector list found). When the query names entities,
they first expand one level through the ontology (:mod:`engram.ontology`), and memories naming a
related entity come in as the "ontology" source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Protocol, runtime_checkable

import numpy as np

from engram.config import RetrievalConfig
from engram.days import MAX_READ_SPAN
from engram.ext import RetrievalReads, Vector
from engram.metadata_filter import evaluate, record_value
from engram.model import Filters, Hit, MemoryRecord, QueryPlan, TimeRange
from engram.ontology import EXPANSION_LIMIT, SOURCE, EntityRelation, Expansion
from engram.retrieve.latest import CONVERSATION_KINDS, LATEST_LIMIT
from engram.retrieve.mentioned import MENTIONED_LIMIT, inside_ids, reaches_ahead
from engram.retrieve.select import selection_pool
from engram.timeparse import MIN_UTC

__all__ = ["ENTITY_QUERY_LIMIT", "AwaitedVector", "CandidateSet", "PendingVector", "gather", "matches", "ranked_limit"]

_DAY = timedelta(days=1)

# Per-source limits, as the pipeline spec sets: semantic 50, entity 30, temporal 30, procedural 20,
# summaries 5.
ENTITY_LIMIT = 30
TEMPORAL_LIMIT = 30
PROCEDURAL_LIMIT = 20
SUMMARY_LIMIT = 5
#: The newest memories a question about the user as a whole reads ("What do you know about me?",
#: ``QueryPlan.profile``): no source ranks what the user said of themselves by its words.
PROFILE_LIMIT = 100
#: The newest memories with standing sentences a request reads ("Where should I go for a long weekend?"
#: for "... by the way, I take my dog everywhere, so trips have to be pet friendly ..."): the sentence
#: is close to the request, the long message it was said in is not, and no other source finds it.
#: Of those, the few whose closest sentence is closest to the request are scored (:data:`STANDING_KEEP`):
#: scoring all 50 cost a request at 100k memories a third more time. Instructions set, inside long
#: messages, R@10 of 15: 4 reading none, 4 reading the newest 20, 6 reading 50 (with 5 or 50 scored).
STANDING_LIMIT = 50
STANDING_KEEP = 5
#: Query entities the entity source and the ontology expansion read, in the query's order (a query
#: names up to 32). Each costs one more look at every memory naming it: at 20,000 memories each
#: naming 30 of 40 names, the entity source read for 120 ms with 8 of them and 1,080 ms with 32
#: (issue 41, finding 6). Ranking still credits every query entity a candidate names.
ENTITY_QUERY_LIMIT = 8
LINK_SEEDS = 5
LINK_LIMIT = 10
SOURCE_ORDER = ("semantic", "keyword", "keyword_in_range", "entity", SOURCE, "temporal", "procedural", "summary",
                "profile", "latest", "mentioned")


@dataclass
class CandidateSet:
    ids: list[str] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)
    ranks: dict[str, dict[str, int]] = field(default_factory=dict)
    raw: dict[str, dict[str, float]] = field(default_factory=dict)
    expansion: Expansion = field(default_factory=Expansion)
    #: The standing statements a request reads, closest (by their closest sentence) first: each is
    #: scored, none is fused with the sources, and ranking lifts the first few (``closest_rule``) when
    #: the request is one the user's rules govern (``QueryPlan.governed``).
    standing: list[str] = field(default_factory=list)

    def add(self, source: str, hits: list[Hit]) -> None:
        ranks = self.ranks.setdefault(source, {})
        raw = self.raw.setdefault(source, {})
        sources, ids = self.sources, self.ids
        for position, (memory_id, score) in enumerate(hits, start=1):
            found_by = sources.get(memory_id)
            if found_by is None:
                sources[memory_id] = [source]
                ids.append(memory_id)
            elif source not in found_by:
                found_by.append(source)
            if memory_id not in ranks:  # a source's first rank and score of a memory stand
                ranks[memory_id] = position
                raw[memory_id] = score

    def best(self, n: int, rrf_k: int = 60) -> list[str]:
        """At most ``n`` ids, those the sources rank best together (reciprocal rank fusion), in
        :attr:`ids` order: what ranking reads and scores in full."""
        if len(self.ids) <= n:
            return list(self.ids)
        # reciprocal_rank summed source by source, in the same order: the same floats, one pass
        # over each source's ranks instead of a look into every source for each of ~200 ids.
        fused = dict.fromkeys(self.ids, 0.0)
        for ranks in self.ranks.values():
            for memory_id, position in ranks.items():
                fused[memory_id] += 1.0 / (rrf_k + position)
        kept = set(sorted(self.ids, key=fused.__getitem__, reverse=True)[:n])  # stable: ties in ids order
        return [i for i in self.ids if i in kept]

    def scores(self, *sources: str) -> dict[str, float]:
        """Raw scores of these sources; a memory two of them found keeps the first one's score."""
        out: dict[str, float] = {}
        for source in reversed(sources):
            out.update(self.raw.get(source, {}))
        return out


def gather(
    store: RetrievalReads,
    *,
    user_id: str,
    plan: QueryPlan,
    query_vec: Vector | PendingVector | None,
    config: RetrievalConfig,
    filters: Filters,
    timed: Callable[[str, Callable[[], list[Hit]]], list[Hit]] | None = None,
    executor: Executor | None = None,
    expand_entities: bool = True,
    prefetch: Callable[[list[str]], None] | None = None,
    relations_of: Callable[[list[str], int], Sequence[EntityRelation]] | None = None,
    now: datetime | None = None,
) -> CandidateSet:
    """Ask every source that applies to this query; ``timed`` wraps each call for per-stage timing.

    ``query_vec`` may still be on its way (a :class:`PendingVector`, the query being embedded): the
    SQL sources are read meanwhile, and the vector searches start as soon as it is there.
    ``prefetch`` is called, while the vector searches still run, with the ids the other sources
    rank best (as many as a vector source may add): reading those records then overlaps the scan
    instead of following it. ``relations_of`` (a domain source's ``related_entities``) adds the relations
    of the caller's own database to the store's for the ontology expansion."""
    run = timed or (lambda _name, call: call())
    limit = _source_depth(config)
    out = CandidateSet()
    lists: dict[str, list[Hit]] = {}
    # A time-scoped query also searches its keywords inside its range, so the in-range memories that
    # matter are candidates even when the whole store holds better matches outside it; the temporal
    # source brings the range's most recent memories, whose similarity ranking computes anyway (a
    # second, filtered vector scan cost more than the rest of the retrieval at 100k memories).
    scoped = _within(filters, plan.time_range) if plan.time_range is not None else None
    pending: dict[str, Callable[[], list[Hit]]] = {}
    waiting = [query_vec] if query_vec is not None and config.search_type != "keyword" else []

    def start_vectors(wait: bool) -> None:
        """Start the vector searches once the query's vector is there (waiting for it if ``wait``).
        They overlap the SQL reads that follow: a store that can start one (SQLite) reads its SQL
        on this thread and scans on a worker of its own; any other search goes whole to the executor
        (a remote index waits on the network: two database connections)."""
        if not waiting or (isinstance(waiting[0], PendingVector) and not wait and not waiting[0].done()):
            return
        given = waiting.pop()
        vec = given.result() if isinstance(given, PendingVector) else given
        if vec is None:  # the embedding failed or passed its deadline: the other sources answer
            return
        vector_args = {"semantic": (limit, filters)}
        if plan.procedural and _allows(filters, "procedure"):
            vector_args["procedural"] = (PROCEDURAL_LIMIT, replace(filters, kinds=("procedure",)))
        pending.update((name, _start_vector_search(store, user_id, vec, n, f, run, name, executor))
                       for name, (n, f) in vector_args.items())

    start_vectors(wait=False)
    if config.search_type != "semantic":
        lists["keyword"] = run("keyword", lambda: store.keyword_search(user_id, plan.text, limit, filters))
        start_vectors(wait=False)
        if scoped is not None:
            lists["keyword_in_range"] = run(
                "keyword_in_range", lambda: store.keyword_search(user_id, plan.text, limit, scoped)
            )
    start_vectors(wait=False)
    if plan.entities:
        asked = list(plan.entities[:ENTITY_QUERY_LIMIT])
        lists["entity"] = run("entity", lambda: store.by_entities(user_id, asked, ENTITY_LIMIT, filters))
        # Two reads only for queries that name entities, and the second only if something is related
        # (or the query asks about a type of entity as a whole: its entities fill the type's slot).
        relations: list[EntityRelation] = []
        if expand_entities:

            def related_entities() -> list[Hit]:  # a list of hits only so ``run`` can time it
                relations.extend(store.related_entities(user_id, asked, EXPANSION_LIMIT))
                return []

            run("expand", related_entities)
            if relations_of is not None:
                domain = relations_of

                def domain_relations() -> list[Hit]:  # its failure costs only its own relations
                    relations.extend(domain(asked, EXPANSION_LIMIT))
                    return []

                run("expand_domain", domain_relations)
        if expand_entities or plan.typed:
            out.expansion = Expansion.of(plan.entities, relations, plan.typed)
            related = out.expansion.ids()
            if related:
                lists[SOURCE] = run(SOURCE, lambda: store.by_entities(user_id, related, ENTITY_LIMIT, filters))
    start_vectors(wait=False)
    time_range = plan.time_range
    if time_range is not None:
        lists["temporal"] = run(
            "temporal",
            lambda: store.by_time_range(user_id, time_range.start, time_range.end, TEMPORAL_LIMIT, filters),
        )
    if _allows(filters, "summary"):
        # A time-scoped query reads the summaries written in its range (the summaries of that period's
        # sessions); any other the most recent ones.
        summaries = replace(scoped if scoped is not None else filters, kinds=("summary",))
        if scoped is not None or time_range is None:
            lists["summary"] = run("summary", lambda: store.most_recent(user_id, SUMMARY_LIMIT, summaries))
    if plan.profile:  # the newest memories, and the newest facts (what holds is often said early)
        facts = [replace(filters, kinds=("fact",))] if _allows(filters, "fact") else []
        lists["profile"] = run("profile", lambda: [hit for f in (*facts, filters)
                                                   for hit in store.most_recent(user_id, PROFILE_LIMIT, f)])
    # A replay's ``now``: nothing said after it.
    said_by_now = filters if now is None else replace(
        filters, created_before=now if filters.created_before is None else min(now, filters.created_before))
    standing: list[str] = []
    if plan.requests:  # the asker's own (a shared scope's rules are no instruction to them)
        standing = [i for i, _ in run("standing", lambda: store.by_standing(user_id, STANDING_LIMIT, said_by_now))]
    said = tuple(k for k in CONVERSATION_KINDS if _allows(filters, k))
    if time_range is not None and not time_range.vague and now is not None:
        scope = time_range

        def mentioned() -> list[Hit]:  # what names a day of the scope, through the stores' index of days
            ahead = reaches_ahead(scope, now)
            if ahead:  # "next week": what was said before of days to come
                when, first, last = said_by_now, *_utc_days(scope)
                if last - first > MAX_READ_SPAN:  # "until Friday", "after March": read from today on
                    first = max(first, now.astimezone(UTC).date() - _DAY)
                    last = last if last - first <= MAX_READ_SPAN else first + MAX_READ_SPAN  # no overflow at 9999
            elif scope.start > MIN_UTC:  # "on Sunday": what was told of it after ("yesterday")
                after = scope.end if filters.created_after is None else max(scope.end, filters.created_after)
                when, first, last = replace(said_by_now, created_after=after), *_utc_days(scope)
                first = first if last - first <= MAX_READ_SPAN else last - MAX_READ_SPAN
            else:  # an open scope ("before today") holds every day gone by, and points at none
                return []
            near = store.by_named_days(user_id, first, last, MENTIONED_LIMIT, when, told=not ahead)
            inside = inside_ids(store.fetch(user_id, [i for i, _ in near]), scope, now)
            return [hit for hit in near if hit[0] in inside]

        lists["mentioned"] = run("mentioned", mentioned)
    if plan.latest and said:  # the newest of what was said: the last conversation, in words the query cannot know
        lists["latest"] = run("latest", lambda: store.most_recent(user_id, LATEST_LIMIT, replace(filters, kinds=said)))
    start_vectors(wait=True)
    if prefetch is not None and pending:
        early = CandidateSet()
        for source in SOURCE_ORDER:
            if source in lists:
                early.add(source, lists[source])
        if early.ids:
            prefetch(early.best(ranked_limit(config) - limit, config.rrf_k))
    for name, finish in pending.items():
        lists[name] = finish()
    if standing:
        vec = query_vec.result() if isinstance(query_vec, PendingVector) else query_vec
        out.standing = [i for i, _ in run("standing", lambda: _closest_standing(store, user_id, standing, vec))]
    floor = config.min_similarity
    if floor is not None and "semantic" in lists:
        # The pipeline specification's semantic source admits only hits at or above its floor (0.5
        # there); off by default, since a memory below it may still come through another source.
        lists["semantic"] = [hit for hit in lists["semantic"] if hit[1] >= floor]
    for source in SOURCE_ORDER:
        if source in lists:
            out.add(source, lists[source])
    seeds = out.ids[:LINK_SEEDS]
    if seeds:
        linked = run("links", lambda: store.by_links(user_id, seeds, LINK_LIMIT, None))
        out.add("links", linked)
    return out


def _closest_standing(store: RetrievalReads, user_id: str, ids: list[str], vec: Vector | None) -> list[Hit]:
    """The :data:`STANDING_KEEP` of ``ids`` whose closest standing sentence is closest to the query
    (the newest without a query vector), with that cosine."""
    if vec is None:
        return [(i, 0.0) for i in ids[:STANDING_KEEP]]
    query = np.asarray(vec, dtype=np.float32).ravel()
    near = [(i, float(np.max(parts @ query))) for i, parts in store.facets(user_id, ids).items()
            if parts.ndim == 2 and parts.shape[1] == query.size and len(parts)]
    return sorted(near, key=lambda hit: (-hit[1], hit[0]))[:STANDING_KEEP]


def ranked_limit(config: RetrievalConfig) -> int:
    """How many of the union the sources found are read and scored in full (those the sources rank
    best together): as many as one source's depth plus the selection pool
    (:func:`engram.retrieve.select.selection_pool`), 80 by default. Up to
    :data:`engram.retrieve.select.POOL_TOP_K` the same candidates are scored whatever ``top_k`` is: a
    memory's score does not depend on it."""
    # Reading and scoring a candidate costs ~20 us at 100k memories, and the union reaches ~230.
    # Against twice the source depth (100 by default, which changed no result of any dev set
    # against scoring them all), one source's depth plus the selection pool moved one dev-set figure,
    # up (LoCoMo turn recall@5 0.650 -> 0.659), and took the 1,000-user p50 0.47 ms lower. Fewer lost
    # recall at larger k: scoring 1.5 times the depth (75 at top_k 25) took LoCoMo recall@25 from
    # 0.861 to 0.854, the depth alone LongMemEval recall@50 from 0.964 to 0.952. A pool as deep as
    # the sources needs the union beyond them.
    return _source_depth(config) + selection_pool(config)


def _source_depth(config: RetrievalConfig) -> int:
    """How many hits each source is asked for: its limit, or the selection pool when that is deeper."""
    return max(config.candidate_limit, config.top_k * config.overfetch)


@runtime_checkable
class PendingVector(Protocol):
    """A query vector still being computed: :meth:`result` waits for it (None: there is none)."""

    def done(self) -> bool: ...

    def result(self) -> Vector | None: ...


class AwaitedVector:
    """A :class:`PendingVector` over a future, read once through ``wait`` (which may give up on it)."""

    def __init__(self, future: Future[Vector], wait: Callable[[Future[Vector]], Vector | None]) -> None:
        self._future, self._wait = future, wait
        self._read: list[Vector | None] = []

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> Vector | None:
        if not self._read:
            self._read.append(self._wait(self._future))
        return self._read[0]


@runtime_checkable
class StartsVectorSearch(Protocol):
    """A store whose vector search can start now and finish later (the SQLite store)."""

    def start_vector_search(
        self, user_id: str, query: Vector, n: int, filters: Filters
    ) -> Callable[[], list[Hit]]: ...


def _start_vector_search(
    store: RetrievalReads, user_id: str, query: Vector, n: int, filters: Filters,
    run: Callable[[str, Callable[[], list[Hit]]], list[Hit]], name: str, executor: Executor | None,
) -> Callable[[], list[Hit]]:
    """Start one vector search; the returned call gives its hits (timed as the source ``name``)."""
    if isinstance(store, StartsVectorSearch):
        finishes: list[Callable[[], list[Hit]]] = []

        def start() -> list[Hit]:  # a list of hits only so ``run`` can time it
            finishes.append(store.start_vector_search(user_id, query, n, filters))
            return []

        run(name, start)
        # Not started (``run`` skips a source once the retrieval's deadline has passed): no hits.
        return lambda: run(name, finishes[0]) if finishes else []

    def search() -> list[Hit]:
        return store.vector_search(user_id, query, n, filters)

    if executor is None:
        return lambda: run(name, search)
    return executor.submit(run, name, search).result


def _utc_days(scope: TimeRange) -> tuple[date, date]:
    """The UTC days the stores index that may hold a day of ``scope`` in the asker's zone (whose
    day is at most a day off UTC's either way)."""
    first, last = scope.start.astimezone(UTC).date(), scope.end.astimezone(UTC).date()
    return first - _DAY if first > date.min else first, last + _DAY if last < date.max else last


def _within(filters: Filters, time_range: TimeRange) -> Filters | None:
    """``filters`` narrowed to ``time_range``; None when they already exclude all of it."""
    after = time_range.start if filters.created_after is None else max(filters.created_after, time_range.start)
    before = time_range.end if filters.created_before is None else min(filters.created_before, time_range.end)
    return None if after > before else replace(filters, created_after=after, created_before=before)


def _allows(filters: Filters, kind: str) -> bool:
    return filters.kinds is None or kind in filters.kinds


def matches(record: MemoryRecord, filters: Filters) -> bool:
    """The filters checked again in Python after fetch: links cross them, and a bug in one store
    must not leak what the caller excluded."""
    if filters.statuses and record.status not in filters.statuses:
        return False
    if filters.kinds is not None and record.kind not in filters.kinds:
        return False
    for name in ("session_id", "project_id", "agent_id"):
        wanted = getattr(filters, name)
        if wanted is not None and getattr(record, name) != wanted:
            return False
    for name in ("subject", "predicate"):
        wanted = getattr(filters, name)
        value = getattr(record, name)
        if wanted is not None and (value is None or value.casefold() != wanted.casefold()):
            return False
    if filters.tags_all and not set(filters.tags_all) <= set(record.tags):
        return False
    if filters.tags_any and not set(filters.tags_any) & set(record.tags):
        return False
    for key, value in filters.metadata.items():
        if record.metadata.get(key) != value or (value is not None and key not in record.metadata):
            return False
    if filters.where and not evaluate(filters.where, lambda key: record_value(record, key)):
        return False
    if filters.created_after is not None and record.created_at < filters.created_after:
        return False
    return filters.created_before is None or record.created_at <= filters.created_before
