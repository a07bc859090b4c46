"""retrieve(): understand -> candidates -> rank -> select, with the retrieval policy's gating and fallbacks.

Around the memory pipeline: the domain source is asked in parallel when the query needs live data
(:mod:`engram.domain`), tuned weights replace the defaults when a user has them (:mod:`engram.tune`),
and each computed retrieval is logged for feedback (:mod:`engram.feedback`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from engram.config import RetrievalConfig
from engram.domain import DomainSource, RelatedEntities, domain_relations, domain_rows
from engram.embedders.scale import measuring
from engram.errors import DeadlineExceeded, EmbedderMismatch, StoreError, ValidationError
from engram.experiments import Experiment, logged_settings, weights_source
from engram.ext import Embedder, Metrics, RetrievalReads, Store
from engram.feedback import log_entry, log_retrieval
from engram.ingest import truth
from engram.ingest.embed import embed_texts
from engram.ingest.entity_index import EntityIndexes
from engram.model import Filters, Hit, new_id
from engram.ontology import credit, restore
from engram.retrieve.budget import PARTIAL, Budget, until
from engram.retrieve.cache import RetrievalCache, make_key, retrieval_bytes, scope_key
from engram.retrieve.candidates import AwaitedVector, PendingVector, gather, matches, ranked_limit
from engram.retrieve.common_names import BlendedVector, without_common_names
from engram.retrieve.episodes import lenders
from engram.retrieve.event_day import event_scope
from engram.retrieve.fallbacks import empty, marked
from engram.retrieve.hop import bridged, second_hop
from engram.retrieve.in_range import apply_min_score, in_range_first, scope_trust
from engram.retrieve.latest import Asked
from engram.retrieve.loading import Loaded
from engram.retrieve.mentioned import asks_only_about_days
from engram.retrieve.names import named_in_lowercase
from engram.retrieve.newest import Newest
from engram.retrieve.past import held_then, read_in_past, reading_filters
from engram.retrieve.planned import planned
from engram.retrieve.rank import rank
from engram.retrieve.ranking import AHEAD_SIGNAL, PAST_SIGNAL, RULE_SIGNAL, Ranking
from engram.retrieve.scopes import Scopes
from engram.retrieve.select import select
from engram.retrieve.signals import DEFAULT_SIMILARITY_RANGE
from engram.retrieve.speaker_names import NameVectors
from engram.retrieve.specific import UNWEIGHTED, read_entity_weights
from engram.retrieve.standing import how_it_is_done
from engram.retrieve.types import Retrieval, RetrievalMetadata, Scored
from engram.retrieve.understand import about_the_user
from engram.retrieve.users_words import UsersWords
from engram.validate import asked_at

__all__ = ["Pipeline", "Retrieval"]

log = logging.getLogger("engram.retrieve")
T = TypeVar("T")


@dataclass
class Pipeline:
    """The read path; ``Memory`` owns one and hands it the store and embedder."""

    store: Store
    embedder: Callable[[], Embedder]
    metrics: Metrics
    cache: RetrievalCache[Retrieval] = field(default_factory=lambda: RetrievalCache(ttl=60.0, sizeof=retrieval_bytes))
    weights_by_strategy: Callable[[str], Mapping[str, Mapping[str, float]] | None] = lambda _u: None
    executor: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=2, thread_name_prefix="engram-candidates")
    )
    domain_source: DomainSource | None = None
    #: Log every computed retrieval (one INSERT after the result is built) for feedback and tuning.
    log_retrievals: bool = True
    #: Each user's entity index, read again only after a write to the user (the version below).
    entity_indexes: EntityIndexes = field(default_factory=EntityIndexes)
    #: Retrievals ranking at once (None: no bound), the others waiting their turn; each starts
    #: embedding its query before it waits, so a model's time overlaps the others' ranking.
    slots: threading.BoundedSemaphore | None = None
    #: An A/B test of strategy weights: each user ranks under the variant it assigns them.
    experiment: Experiment | None = None
    #: Each speaker name's vectors, per scope; its owner drops a user's with their other caches.
    speaker_names: NameVectors = field(default_factory=NameVectors)

    def retrieve(
        self, query: str, *, user_id: str, config: RetrievalConfig, now: datetime | None, filters: Filters,
        use_memory: bool = True, rate_limited: bool = False, as_of: datetime | None = None, also: tuple[str, ...] = (),
    ) -> Retrieval:
        """``also`` names more scopes (user ids whose memories are shared with this user, already
        checked by the caller) ranked together with the user's own. Such retrievals are not cached:
        a write to a shared scope must show at once, and caches are kept per user."""
        started = time.perf_counter()
        scopes = tuple(s for s in dict.fromkeys(also) if s != user_id)
        reads: RetrievalReads = Scopes(self.store, (user_id, *scopes)) if scopes else self.store
        if scopes:
            config = config.with_(cache_ttl=0)
        # The key holds a caller's own ``now`` but never the clock's: the clock's time would make an
        # answer expire when its minute (or any bucket) turns, not after ``cache_ttl``.
        given_now = now
        now = asked_at(datetime.now(UTC) if now is None else now, config.timezone)  # whose days "today" means
        if (config.include_superseded or as_of is not None) and "superseded" not in filters.statuses:
            filters = replace(filters, statuses=(*filters.statuses, "superseded"))
        if as_of is not None:
            if as_of.tzinfo is None:
                raise ValidationError("as_of", "must be timezone-aware")
            before = as_of if filters.created_before is None else min(as_of, filters.created_before)
            filters = replace(filters, created_before=before)
        try:
            # The store's change token joins the key: a write by another process (a second worker,
            # the CLI) makes every cached answer of this user unreachable at once.
            token = reads.change_token(user_id)
        except StoreError as exc:
            log.warning("[MEM:RETRIEVE] store unavailable, continuing without memory: %s", exc)
            return empty(query, config, filters, started, "ZEP_UNAVAILABLE")
        # Only a cached answer needs the key (~0.1 ms over a config and its filters).
        key = make_key(user_id, query, config, filters, given_now, scope_key(query, now), as_of, token) \
            if rate_limited or config.cache_ttl > 0 else ""
        generation = self.cache.generation(user_id)
        if rate_limited:
            cached = self.cache.get(user_id, key)
            if cached is not None:
                return marked(cached, cached=True, error="RATE_LIMITED")
            return empty(query, config, filters, started, "RATE_LIMITED")
        if not use_memory:
            return empty(query, config, filters, started, None)
        if (
            not isinstance(query, str) or not query.strip() or len(query) > config.query_max_chars
            or (not query.isascii() and any("\ud800" <= ch <= "\udfff" for ch in query))  # not UTF-8 encodable
        ):
            return empty(query if isinstance(query, str) else "", config, filters, started, "INVALID_QUERY")
        try:
            if config.cache_ttl > 0:
                cached = self.cache.get(user_id, key)
                if cached is not None:
                    self.metrics.increment("retrieval.cache_hits")
                    self._observe(cached, cached=True)
                    return marked(cached, cached=True, error=None)
            if not reads.user_exists(user_id):
                return empty(query, config, filters, started, "COLLECTION_NOT_FOUND")
            embedding = self._embed(about_the_user(query, user_id), config)
            with self.slots or nullcontext():
                result = self._run(query, user_id, config, now, filters, started, as_of, (token, generation), reads,
                                   embedding)
        except DeadlineExceeded as exc:
            log.warning("[MEM:RETRIEVE] %s; continuing without memory", exc)
            return empty(query, config, filters, started, "TIMEOUT")
        except EmbedderMismatch:
            raise  # a configuration error, not an outage: an empty answer would hide it for good
        except StoreError as exc:
            log.warning("[MEM:RETRIEVE] store unavailable, continuing without memory: %s", exc)
            return empty(query, config, filters, started, "ZEP_UNAVAILABLE")
        if config.cache_ttl > 0 and not result.metadata.cut_stages:
            # Dropped if this user was written to while it ran: it may hold what was just deleted.
            # An answer cut by its deadline is not kept: the next asking may have the time for all of it.
            self.cache.put(user_id, key, result, ttl=config.cache_ttl, generation=generation)
        self.metrics.increment("retrieval.cache_misses")
        self._observe(result, cached=False)
        return result

    def _run(
        self, query: str, user_id: str, config: RetrievalConfig, now: datetime, filters: Filters,
        started: float, as_of: datetime | None, version: tuple[str, int], reads: RetrievalReads,
        embedding: Future[Any] | None,
    ) -> Retrieval:
        stage_ms: dict[str, float] = {}
        budget = Budget(config.timeout_ms)  # see engram.retrieve.budget: what runs past the deadline

        def timed(name: str, call: Callable[[], T]) -> T:
            t0 = time.perf_counter()
            try:
                return call()
            finally:
                stage_ms[name] = stage_ms.get(name, 0.0) + (time.perf_counter() - t0) * 1000

        def optional(name: str, call: Callable[[], T], default: T) -> T:
            return budget.optional(name, lambda: timed(name, call), default)

        tuned = self.weights_by_strategy(user_id)
        variant = self.experiment.assign(user_id) if self.experiment is not None else None
        if variant is not None and variant.weights is not None:
            tuned = {**(tuned or {}), **variant.weights}  # the variant's strategies over the user's own
        plan, index = planned(query, now, tuned, partial(self.entity_indexes.get, self.store, user_id, version),
                              budget, timed)
        reading = reading_filters(filters, plan.past)  # "What was my old gym?": superseded facts too
        asked = plan  # "the Tuesday after moving day": the event's day is read from the user's memories
        embed = None if config.search_type == "keyword" else lambda text: until(self.executor.submit(
            lambda: embed_texts(self.embedder(), [text], as_query=True)[0]), budget.embedded_by, "embedding the event")
        plan = optional("event", lambda: event_scope(asked, reads, user_id, reading, now, embed,
                                                     lambda: self._similarity_range(config, budget)), asked)
        days_only = plan.time_range is not None and asks_only_about_days(plan.text)
        widened = reading is not filters
        source_of_weights = weights_source(config.weights is not None, variant, plan.strategy, tuned)
        domain = None
        if self.domain_source is not None and plan.requires_domain_db and plan.entities:
            # The domain database is asked in parallel with memory retrieval.
            domain = self.executor.submit(domain_rows, self.domain_source, plan, self.metrics)
        # The SQL sources are read while the query is embedded. It is waited for only until most of
        # the deadline has passed: a long query on a loaded machine embeds for longer than the whole
        # retrieval may take (the work finishes on the worker, unused), and the other sources
        # answer without it.
        def waited(future: Future[Any]) -> Any:
            return optional("embed", lambda: until(future, budget.embedded_by, "embedding the query"), None)

        telling = optional("entity_shares", lambda: read_entity_weights(reads, user_id, plan.entities), UNWEIGHTED)
        pending: PendingVector | None = None if embedding is None else AwaitedVector(embedding, waited)
        scope = plan.time_range.expression if plan.time_range is not None else None
        unnamed = None if pending is None else without_common_names(plan.text, plan.entities, telling, scope)
        if pending is not None and unnamed is not None:  # "What activities does Melanie partake in?"
            second = self._embed(about_the_user(unnamed.text, user_id), config)
            pending = pending if second is None else BlendedVector(pending, AwaitedVector(second, waited))

        def timed_hits(name: str, call: Callable[[], list[Hit]]) -> list[Hit]:
            return optional(f"candidates.{name}", call, [])

        owners = set(reads.scopes) if isinstance(reads, Scopes) else {user_id}
        loaded = Loaded(reads, user_id, lambda r: r.user_id in owners and matches(r, reading) and (
            not widened or read_in_past(r)) and (as_of is None or truth.valid_at(r, as_of)), index,
            UsersWords(index, plan.entities), plan.requests, timed, optional)

        source = self.domain_source
        relations_of = partial(domain_relations, source, self.metrics) if isinstance(source, RelatedEntities) else None
        found = gather(
            reads, user_id=user_id, plan=plan, query_vec=pending, config=config,
            filters=reading, timed=timed_hits, executor=self.executor, prefetch=loaded.prefetch,
            relations_of=relations_of, now=now,
        )
        query_vec = None if pending is None else pending.result()
        set_aside = unnamed.names if isinstance(pending, BlendedVector) and pending.blended and unnamed else ()
        records, vectors, facets, neighbors, speakers, first = (loaded.records, loaded.vectors, loaded.facets,
                                                                 loaded.neighbors, loaded.speakers, loaded.first)
        fetched, load = loaded.fetched, loaded.load

        similarity_range = self._similarity_range(config, budget)

        def ranked(bridges: Mapping[str, tuple[float, str]] | None = None) -> Ranking:
            asked = named_in_lowercase(plan, speakers.values())  # "what did priya say?": Priya all the same
            return timed("rank", lambda: rank(
                credit(records, found.expansion), query_vec=query_vec, vectors=vectors,
                query_entities=asked.entities, time_range=plan.time_range, now=now, weights=plan.weights,
                keyword_scores=found.scores("keyword", "keyword_in_range"), sources=found.sources,
                source_ranks=found.ranks, config=config, recency=plan.recency,
                similarity_range=similarity_range, neighbors=neighbors, bridges=bridges, speakers=speakers,
                asks=plan.asks, speaking=asked.speaking, requests=plan.requests, known=first, facets=facets,
                procedural=how_it_is_done(plan.text, plan.procedural),
                profile=user_id if plan.profile else None, latest=Asked(user_id, plan.text) if plan.latest else None,
                described=plan.described, permission=plan.permission,
                newest=Newest(plan.text, frozenset(asked.newest)) if asked.newest is not None else None,
                value=plan.value, past=plan.held or plan.past, days_only=days_only, yours=plan.yours,
                cause=plan.cause, how=plan.how, outcome=plan.outcome,
                rules=found.standing if plan.governed else None, entity_weights=telling,
                speaker_names=partial(self.speaker_names.of, tuple(sorted(owners)), self.embedder(), self.executor,
                                      budget.embedded_by),
            ))

        with budget.essential():  # past the deadline too: the answer is read and ranked from what was found
            load(found.best(ranked_limit(config), config.rrf_k))
            # A turn's conversation context is its neighbours' relevance: they are scored whether or not a
            # source found them, so a memory's score does not depend on how deep the sources looked.
            known = {r.id for r in records}
            budget.read(lambda ids: load(lenders(records, neighbors, fetched(ids)), beside=True),  # that can lend
                        neighbors=[n for r in records for n in neighbors.get(r.id, ()) if n not in known])
            budget.read(load, standing=[i for i in found.standing if i not in known])  # each a request reads
            ranking = ranked()
            hop: tuple[Mapping[str, Mapping[str, float]], list[Hit]] | None = None
            if config.fusion != "rrf":
                voices = frozenset(speakers.values())
                hop = optional(
                    "candidates.hop", lambda: second_hop(reads, user_id, ranking, plan.entities, reading, voices,
                                                         plan.keywords), None
                )
            if hop is not None and hop[0]:
                bridges, hits = hop
                known = {r.id for r in records}
                load([i for i, _ in hits if i not in known])
                links = bridged({r.id: r.entities for r in records}, bridges)
                if links:  # else nothing but the seeds names a bridge: the first ranking stands
                    ranking = ranked(links)
        originals = {r.id: r for r in records}
        scored = restore(ranking.unexplained(), originals, found.expansion, reasons=False)

        held: set[str] = set()  # the facts asked for that held during a scope gone by

        def explain(items: list[Scored]) -> list[Scored]:  # only what selection returns is explained
            out = restore(ranking.explained(items), originals, found.expansion)
            said = f"held during '{plan.time_range.expression}'" if plan.time_range is not None else ""
            return [replace(s, reasons=(*s.reasons, said)) if s.record.id in held else s for s in out]

        # What names a day to come in the scope, for a question of nothing but when, and what held
        # during a scope gone by ("Which gym did I go to in September?"): as if said in it.
        ahead = (ranking.having(AHEAD_SIGNAL) if days_only else frozenset()) | ranking.having(PAST_SIGNAL)
        if plan.held and plan.time_range is not None:
            held = held_then([s.record for s in scored], plan.time_range, now, plan.held, plan.entities)
            ahead |= held
        trust = scope_trust(query, plan.requests)
        # What names a day in the scope, said outside it, for a question that is no request: with what
        # was said in it, on the same terms (in_range.pointed_at).
        naming = ranking.having(AHEAD_SIGNAL) if plan.time_range is not None and not plan.requests else frozenset()
        if plan.time_range is not None:
            scored = in_range_first(scored, plan.time_range, ahead, trust, naming, ranking.having(RULE_SIGNAL))
        kept, below = apply_min_score(scored, config.min_score, keep_best=bool(filters.describe()),
                                      time_range=plan.time_range, ahead=ahead, trust=trust, naming=naming)
        selection = timed(
            "select",
            lambda: select(
                kept, config, collection=f"user:{user_id}", similarity_range=similarity_range, explain=explain
            ),
        )
        if len(owners) > 1:  # each entry names the scope it came from
            selection = replace(selection, entries=[
                replace(e, collection=f"user:{e.record.user_id}") if e.record is not None else e
                for e in selection.entries
            ])
        if config.track_access and selection.entries:
            optional("track_access", lambda: reads.record_access(user_id, [e.id for e in selection.entries], now), None)
        suppressed = 0
        versioned = [e.id for e in selection.entries if e.record is not None and e.record.kind in truth.VERSIONED_KINDS]
        if not config.include_superseded and as_of is None and versioned and not widened:
            # How many older versions of the returned facts and documents current truth held back
            # (only those kinds have versions: the read is spared when none is returned).
            older: list[Hit] = []
            suppressed = len(optional("suppressed", lambda: reads.by_links(
                user_id, versioned, 1000, ["supersedes"]), older))
        applied = list(filters.describe())
        if as_of is not None:
            applied.append("as_of")
        if below:
            applied.append("score_threshold")
        applied.extend(selection.applied_filters)
        rows: tuple[Mapping[str, Any], ...] = ()
        error: Mapping[str, str] | None = None
        if domain is not None:
            task, unanswered = domain, (rows, error)
            rows, error = optional("domain", lambda: until(task, budget.soft, "asking the domain source"), unanswered)
        if budget.cut:  # the deadline's answer: what the stages that finished found, and which did not
            error = PARTIAL
        metadata = RetrievalMetadata(
            query_time_ms=(time.perf_counter() - started) * 1000,
            total_results=len(records),
            included_results=len(selection.entries),
            total_tokens=selection.total_tokens,
            applied_filters=tuple(applied),
            # Which weights ranked this retrieval travels with the config it ran with.
            config={**config.to_dict(), "weightsSource": source_of_weights},
            error=error,
            retrieval_id=new_id(),
            query_type=plan.category,
            strategy=plan.strategy,
            stage_ms=stage_ms,
            dedup_removed=selection.dedup_removed,
            suppressed_superseded=suppressed,
            time_range=plan.time_range,
            below_min_score=below,
            mmr_removed=selection.mmr_removed,
            beyond_top_k=selection.beyond_top_k,
            budget_removed=selection.budget_removed,
            cut_stages=tuple(budget.cut),
            meaning_without=set_aside,
        )
        result = Retrieval(query=query, memories=tuple(selection.entries), metadata=metadata, now=now, domain_rows=rows)
        if self.log_retrievals and result.memories:
            log_retrieval(self.store, self.metrics, user_id, result,
                          log_entry(result, config, source_of_weights, datetime.now(UTC),
                                    logged_settings(self.experiment, variant), owner=user_id))
        return result

    def _embed(self, query: str, config: RetrievalConfig) -> Future[Any] | None:
        """The query's embedding, started on the executor (None for a keyword search)."""
        if config.search_type == "keyword":
            return None
        embedder = self.embedder()  # loading the model (once per process) is set-up, not retrieval time
        future = self.executor.submit(lambda: embed_texts(embedder, [query], as_query=True)[0])
        # The scale of a model that declares none is measured once the query no longer needs it.
        future.add_done_callback(lambda _: measuring(embedder))
        return future

    def _similarity_range(self, config: RetrievalConfig, budget: Budget) -> tuple[float, float]:
        return DEFAULT_SIMILARITY_RANGE if config.search_type == "keyword" else budget.scale(self.embedder())

    def _observe(self, result: Retrieval, *, cached: bool) -> None:
        meta = result.metadata
        self.metrics.observe("retrieval.latency_ms", meta.query_time_ms)
        self.metrics.observe("retrieval.results_count", meta.included_results)
        self.metrics.observe("retrieval.tokens_used", meta.total_tokens)
        total = meta.total_results or 0
        if total and not cached:
            self.metrics.observe("retrieval.dedup_ratio", meta.dedup_removed / total)
        # One observation per retrieval, 1 for a hit: the summary's mean is then the true hit rate
        # (observing the cache's running rate each time weighted early retrievals many times over).
        self.metrics.observe("retrieval.cache_hit_rate", 1.0 if cached else 0.0)

