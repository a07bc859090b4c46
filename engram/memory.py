"""The ``Memory`` facade: opens a store, an embedder and the pipeline, and wires calls through."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from types import TracebackType
from typing import Any, Unpack, overload

from engram import documents, keyword_search
from engram import mem0_calls as mem0
from engram import recall as recall_modes
from engram.caches import Caches
from engram.config import Limits, RetrievalConfig, check_settings
from engram.context import Context
from engram.conversation import FROM_MESSAGE, Messages, as_items, is_conversation
from engram.documents import Document
from engram.domain import DomainSource
from engram.errors import MemoryNotFound, ValidationError
from engram.experiments import Experiment, ExperimentReport, report_store
from engram.ext import Embedder, Metrics, Store
from engram.feedback import FeedbackResult, record_feedback
from engram.ingest import writer
from engram.ingest.files import IngestReport
from engram.ingest.files import ingest as ingest_files
from engram.keyword_search import EnrichKwargs, KeywordResult, SearchKwargs
from engram.metrics import InMemoryMetrics
from engram.model import Entity, Filters, HistoryEvent, Link, MemoryChanges, MemoryFields, MemoryRecord
from engram.ontology import EntitiesAccessor, EntityRelation, RelationType
from engram.ontology import define_relation as define_ontology_relation
from engram.ontology import relate as relate_entities
from engram.pools import PerProcess
from engram.recall_types import ByKindKwargs, ContradictionKwargs, LinkedKwargs, Recall, RecallKwargs, TemporalKwargs
from engram.retrieve import Pipeline
from engram.retrieve.types import Retrieval
from engram.salience import memory_salience
from engram.stores.open import open_store, store_target
from engram.tune import DEFAULT_HOLDOUT, MIN_EXAMPLES, TuneReport, tune_user
from engram.validate import as_filters, aware_time, integer, to_utc, top_k_shortcut, user_id, validate_id
from engram.wiring import Wiring, reopened, wire

__all__ = ["Memory", "open_store"]

MAX_OFFSET = 10**9  # list(): beyond any real page, and far inside SQLite's 64-bit integers


class Memory:
    """Store what an agent learns; ask what matters now.

    >>> with Memory("demo.db") as memory:                                    # doctest: +SKIP
    ...     memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    ...     memory.retrieve("How does Acme pay?", user_id="u1").to_prompt()
    """

    def __init__(
        self,
        path_or_url: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        config: RetrievalConfig | None = None,
        limits: Limits | None = None,
        metrics: Metrics | None = None,
        store: Store | None = None,
        domain_source: DomainSource | None = None,
        log_retrievals: bool = True,
        experiment: Experiment | None = None,
    ) -> None:
        check_settings(config, limits)
        self.config = config or RetrievalConfig()
        self.limits = limits or Limits()
        self.metrics: Metrics = metrics or InMemoryMetrics()
        self._embedder = embedder
        target = store_target(path_or_url)  # a child reopens this, whatever its directory or environment
        first = wire(
            store if store is not None else open_store(target),
            None if store is not None else lambda: open_store(target),
            embedder=self._get_embedder, limits=self.limits, metrics=self.metrics, config=lambda: self.config,
            domain_source=domain_source, log_retrievals=log_retrievals, experiment=experiment,
        )
        # Each process's own: a forked child opens the store again on first use (engram.wiring).
        self._wiring: PerProcess[Wiring] = PerProcess(lambda parent: first if parent is None else reopened(parent))
        self._wiring.get()

    @property
    def store(self) -> Store:
        return self._wiring.get().store

    @property
    def caches(self) -> Caches:
        return self._wiring.get().caches

    @property
    def context(self) -> Context:
        return self._wiring.get().context

    @property
    def pipeline(self) -> Pipeline:
        return self._wiring.get().pipeline

    # -- wiring ---------------------------------------------------------------------------------------
    def _get_embedder(self) -> Embedder:
        """Load the model on first need, and bind the store to it (refusing to mix models)."""
        wiring = self._wiring.get()
        with wiring.lock:
            if self._embedder is None:
                from engram.embedders import default_embedder

                self._embedder = default_embedder()
            if not wiring.bound:
                wiring.store.bind_embedder(self._embedder.model_id, self._embedder.dimensions)
                wiring.bound = True
            return self._embedder

    @property
    def embedder(self) -> Embedder:
        return self._get_embedder()

    def _user(self, value: Any) -> str:
        return user_id(value, self.limits)

    def close(self) -> None:
        """Close the store and stop the pipeline's worker threads (a retrieval still running finishes).
        A forked child that never used this Memory has nothing of its own to close."""
        wiring = self._wiring.current()
        if wiring is not None:
            wiring.pipeline.executor.shutdown(wait=False)
            wiring.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- writes: engram.ingest.writer -----------------------------------------------------------------
    @overload
    def add(self, content: str, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]) -> MemoryRecord:
        ...

    @overload
    def add(
        self, content: Messages, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]
    ) -> builtins.list[MemoryRecord]: ...

    def add(
        self, content: str | Messages, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]
    ) -> MemoryRecord | builtins.list[MemoryRecord]:
        """Store a text as one memory (returns its record), or chat messages as one ``message``
        memory each, in order (returns their records, a list); see ``engram.conversation``.

        ``run_id`` is the session (Mem0's name), ``agent_id`` and ``metadata`` go on every memory.
        """
        conversation = is_conversation(content)
        records = writer.add_many(self.context, as_items(content, user_id=user_id, kind=kind, fields=fields),
                                  numbered="messages" if conversation else None, itemwise=FROM_MESSAGE)
        return records if conversation else records[0]

    def add_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryRecord]:
        """Validate every item first, then embed in batches and store; all or nothing per batch. A
        refused item is named by its place: ``memories[17].content: 348,112 characters, at most 200,000``."""
        return writer.add_many(self.context, items, numbered="memories")

    def update(self, memory_id: str, data: str | None = None, *, user_id: str | None = None,
               **changes: Unpack[MemoryChanges]) -> MemoryRecord:
        """Change fields of a memory (``data`` is new content, as in Mem0); a content change re-embeds it.

        Without ``user_id`` the memory is found by its id alone: the embedded API owns its file.
        """
        if data is not None:
            changes["content"] = data
        return writer.update(self.context, memory_id, user_id=self._owner(memory_id, user_id), changes=changes)

    def delete(self, memory_id: str, *, user_id: str | None = None) -> bool:
        """Remove a memory from every index at once; False if it was not there.

        Deleting a version makes the one it superseded current again (:mod:`engram.ingest.truth`); a
        document takes its passages with it.
        """
        try:
            user = self._owner(memory_id, user_id)
        except MemoryNotFound:
            return False
        return writer.delete(self.context, memory_id, user_id=user)

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, Any]:
        """Mem0's ``delete_all``: see ``engram.mem0_calls.delete_all``."""
        return mem0.delete_all(self, user_id=user_id, agent_id=agent_id, run_id=run_id)

    def reset(self) -> int:
        """DESTRUCTIVE: forget every user of this store (all memories, entities, links, feedback)."""
        removed = sum(writer.forget_user(self.context, user) for user in self.store.users())
        self.caches.retrievals.clear()
        return removed

    def forget_user(self, user_id: str) -> int:
        """Remove every row of one user from every table and index; returns memories removed."""
        return writer.forget_user(self.context, user_id)

    def upgrade(self, user_id: str | None = None) -> int:
        """Bring memories an older version stored up to what this one derives when writing (today:
        the vectors of the standing instructions said inside a longer message, and the entity ids
        today's extractor and entity table give), for one user or every user; returns how many
        memories changed. Safe to run again: it then changes none."""
        users = [self._user(user_id)] if user_id is not None else self.store.users()
        return sum(writer.upgrade(self.context, user) for user in users)

    def link(self, from_id: str, to_id: str, type: str, strength: float = 1.0, *, user_id: str) -> Link:
        return writer.link(self.context, from_id, to_id, type, strength, user_id=user_id)

    def add_entity(
        self, entity_id: str, *, user_id: str, type: str | None = None, name: str | None = None,
        aliases: Sequence[str] = (),
    ) -> Entity:
        """Register a canonical entity (``customer:a1b2``) and the names queries may use for it."""
        return writer.add_entity(self.context, entity_id, user_id=user_id, type=type, name=name, aliases=aliases)

    # -- entity relations and ontology: engram.ontology
    def define_relation(self, from_type: str, relation: str, to_type: str, *, user_id: str) -> RelationType:
        """Declare that entities of ``from_type`` may have ``relation`` to ``to_type`` (customer HAS_MANY order)."""
        return define_ontology_relation(self.context, from_type, relation, to_type, user_id=user_id)

    def relate(self, a: str, relation: str, b: str, *, user_id: str) -> EntityRelation:
        """Relate two entities; the ontology must declare the relation for their types."""
        return relate_entities(self.context, a, relation, b, user_id=user_id)

    # -- domain database, feedback and tuning: engram.domain, engram.feedback, engram.tune
    def set_domain_source(self, source: DomainSource | None) -> None:
        """Where queries that need live data (``requires_domain_db``) get their rows; None turns it off."""
        self.pipeline.domain_source = source
        self.caches.retrievals.clear()

    def feedback(
        self, retrieval_id: str, used_ids: Sequence[str], *, user_id: str, now: datetime | str | None = None
    ) -> FeedbackResult:
        """Record which memories of a retrieval were used; they gain reinforcement and teach ``tune``.

        ``now`` is when they were used (default: the clock), as ``retrieve``'s ``now``: a caller
        replaying a scenario keeps one clock for retrieval and access times."""
        user = self._user(user_id)
        at = to_utc(now, "now") if now is not None else None
        result = record_feedback(self.context, retrieval_id, used_ids, user_id=user, at=at)
        self.context.wrote(user)
        return result

    def tune(
        self, *, user_id: str, holdout: float = DEFAULT_HOLDOUT, min_examples: int = MIN_EXAMPLES,
        dry_run: bool = False,
    ) -> TuneReport:
        """Fit the user's strategy weights to their feedback; kept only where they beat the defaults."""
        user = self._user(user_id)
        report = tune_user(self.store, user, holdout=holdout, min_examples=min_examples, dry_run=dry_run)
        self.caches.invalidate(user, weights=True)
        return report

    def experiment_report(self, name: str) -> ExperimentReport:
        """How each variant of A/B test ``name`` fared on the feedback its users gave (every user)."""
        return report_store(self.store, name)

    # -- reads ----------------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """One memory; without ``user_id``, found by its id alone (the embedded API owns its file)."""
        return self.context.get(self._owner(memory_id, user_id), memory_id)

    def history(self, memory_id: str, *, user_id: str | None = None) -> builtins.list[HistoryEvent]:
        """Every change to a memory, oldest first (``engram.mem0_calls.history``); id-only as ``get``."""
        return mem0.history(self.store, memory_id, None if user_id is None else self._user(user_id))

    def _owner(self, memory_id: str, user_id: str | None) -> str:
        return self._user(user_id) if user_id is not None else mem0.owner_of(self.store, memory_id)

    def get_all(self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                filters: Mapping[str, Any] | None = None, limit: int = 100, top_k: int | None = None) -> dict[str, Any]:
        """Mem0's ``get_all``: ``{"results": [...]}`` (``engram.mem0_calls``); ``filters`` in Mem0's operators,
        ``top_k`` Mem0's newer name of ``limit``."""
        return mem0.get_all(self, user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters,
                            limit=mem0.top_k_or(top_k, limit))

    def search(self, query: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
               limit: int = 100, filters: Mapping[str, Any] | None = None, threshold: float | None = None,
               config: RetrievalConfig | None = None, top_k: int | None = None) -> dict[str, Any]:
        """Mem0's ``search`` over ``retrieve``: ``{"results": [...]}``, best first, each with its reasons;
        ``top_k`` is Mem0's newer name of ``limit``."""
        return mem0.search(self, query, user_id=user_id, agent_id=agent_id, run_id=run_id,
                           limit=mem0.top_k_or(top_k, limit), filters=filters, threshold=threshold, config=config)

    def list(
        self, *, user_id: str, filters: Filters | Mapping[str, Any] | None = None, limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[MemoryRecord]:
        integer("limit", limit, 1, 10_000)
        integer("offset", offset, 0, MAX_OFFSET)
        return self.store.list(self._user(user_id), as_filters(filters), limit=limit, offset=offset)

    def links(self, memory_id: str, *, user_id: str) -> builtins.list[Link]:
        return self.store.links(self._user(user_id), memory_id)

    @property
    def entities(self) -> EntitiesAccessor:
        """``memory.entities(user_id=...)`` lists entities; ``memory.entities.relate(...)`` relates two."""
        return EntitiesAccessor(self.context)

    def stats(self) -> Mapping[str, Any]:
        return self.store.stats()

    def retrieve(
        self,
        query: str,
        *,
        user_id: str,
        config: RetrievalConfig | None = None,
        now: datetime | str | None = None,
        session_id: str | None = None,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        filters: Filters | Mapping[str, Any] | None = None,
        use_memory: bool = True,
        as_of: datetime | str | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        also: Sequence[str] | None = None,
    ) -> Retrieval:
        """What from this user's memory matters for ``query`` now: ranked, selected, explained.

        ``limit`` and ``top_k`` (one thing under Mem0's name and Engram's) set the config's top_k.
        ``also`` names shared scopes (user ids such as a knowledge base's, ``also=["kb"]``) whose
        memories are ranked together with the user's own; each entry's ``collection`` says where it
        came from. Such retrievals are not cached."""
        user = self._user(user_id)
        if isinstance(also, str):
            raise ValidationError("also", "must be a list of user ids, not one string")
        shared = tuple(str(validate_id(scope, f"also[{i}]", self.limits)) for i, scope in enumerate(also or ()))
        k = top_k_shortcut(limit, top_k, config)
        if k is not None:
            config = (config or self.config).with_(top_k=k)
        base = as_filters(filters)
        if session_id is not None:
            base = replace(base, session_id=validate_id(session_id, "session_id", self.limits))
        if kinds is not None:
            base = replace(base, kinds=kinds)  # type: ignore[arg-type]  # as_filters checks and converts
        if tags:
            base = replace(base, tags_all=tags)  # type: ignore[arg-type]
        base = as_filters(base)
        when = aware_time(now, "now") if now is not None else None  # its zone is the asker's calendar
        return self.pipeline.retrieve(
            query, user_id=user, config=config or self.config, now=when, filters=base,
            use_memory=use_memory, as_of=to_utc(as_of, "as_of") if as_of is not None else None, also=shared,
        )

    # -- recall modes and keyword search: engram.recall, engram.keyword_search
    def recall(
        self, query: str | None = None, *, user_id: str, mode: str = "relevant", **options: Unpack[RecallKwargs]
    ) -> Recall:
        """Recall by mode: relevant, recent, important or frequent (see ``engram.recall.recall``)."""
        return recall_modes.recall(self.context, query, user_id=self._user(user_id), mode=mode, **options)

    def recall_temporal(
        self, start: datetime | str, end: datetime | str, *, user_id: str, topic: str | None = None,
        **options: Unpack[TemporalKwargs],
    ) -> Recall:
        """Memories created in [start, end], newest first, optionally filtered by topic similarity."""
        user = self._user(user_id)
        return recall_modes.recall_temporal(self.context, start, end, user_id=user, topic=topic, **options)

    def recall_by_kind(self, kind: str, *, user_id: str, limit: int = 10, **options: Unpack[ByKindKwargs]) -> Recall:
        return recall_modes.recall_by_kind(self.context, kind, user_id=self._user(user_id), limit=limit, **options)

    def recall_linked(
        self, memory_id: str, *, user_id: str, link_types: Sequence[str] | None = None, depth: int = 1,
        **options: Unpack[LinkedKwargs],
    ) -> Recall:
        """Memories reachable over links from one memory (breadth-first, depth 1-3)."""
        return recall_modes.recall_linked(
            self.context, memory_id, user_id=self._user(user_id), link_types=link_types, depth=depth, **options
        )

    def find_contradictions(self, content: str, *, user_id: str, **options: Unpack[ContradictionKwargs]) -> Recall:
        """Memories similar to ``content`` that carry a ``contradicts`` link."""
        return recall_modes.find_contradictions(self.context, content, user_id=self._user(user_id), **options)

    def salience(self, memory_id: str, *, user_id: str, now: datetime | None = None) -> float:
        """Read-time salience in [0, 1] from importance, age and access; never stored."""
        return memory_salience(self.context, memory_id, user_id=self._user(user_id), now=now)

    def search_keywords(
        self, keywords: str | Sequence[str], *, user_id: str, cached: bool = False, **options: Unpack[SearchKwargs]
    ) -> builtins.list[KeywordResult]:
        """Keyword search with match reasons; ``cached=True`` uses the 300 s cache."""
        search = keyword_search.search_with_cache if cached else keyword_search.search_keywords
        return search(self.context, keywords, user_id=self._user(user_id), **options)

    def enrich_context(
        self, query: str | Sequence[str], *, user_id: str, **options: Unpack[EnrichKwargs]
    ) -> dict[str, Any]:
        """Prompt context from a keyword search: {memories, summary, count, last_retrieved}."""
        return keyword_search.enrich_context(self.context, query, user_id=self._user(user_id), **options)

    # -- documents: engram.ingest.files, engram.documents
    def ingest(
        self, paths: Any, *, user_id: str, tags: Sequence[str] = (), topic: str | None = None,
        note: str | None = None, provider: str | None = None, force: bool = False,
        now: datetime | None = None, progress: Callable[[Any, int, int], None] | None = None,
        follow_symlinks: bool = False,
    ) -> IngestReport:
        """Ingest files, directories and glob patterns as versioned documents, split into chunks.

        Symlinks that lead out of a directory or pattern being ingested are skipped unless
        ``follow_symlinks``."""
        return ingest_files(
            self.context, paths, user_id=self._user(user_id), tags=tags, topic=topic, note=note, provider=provider,
            force=force, now=now, progress=progress, follow_symlinks=follow_symlinks,
        )

    def get_document(
        self, meta: Mapping[str, Any], *, user_id: str, k: int = 50, default_tags: Sequence[str] | None = None,
        strategy: str = "latest", as_of: str | datetime | None = None,
    ) -> Document:
        """Exactly one version of one ingested document (by strategy: latest, earliest, longest, score)."""
        return documents.get_document(
            self.context, meta, user_id=self._user(user_id), k=k, default_tags=default_tags, strategy=strategy,
            as_of=as_of,
        )

    def document_versions(self, filename_or_doc_key: str, *, user_id: str) -> builtins.list[Document]:
        """Every stored version of a file, oldest first."""
        return documents.document_versions(self.context, filename_or_doc_key, user_id=self._user(user_id))

    # -- for the HTTP service (engram.service), which otherwise reached into the pipeline ----------------
    def retrieve_cached(
        self, query: str, *, user_id: str, config: RetrievalConfig | None = None, now: datetime | None = None,
        filters: Filters | Mapping[str, Any] | None = None,
    ) -> Retrieval:
        """The retrieval policy when rate limited: a cached answer, else an empty one (error RATE_LIMITED)."""
        return self.pipeline.retrieve(query, user_id=self._user(user_id), config=config or self.config, now=now,
                                      filters=as_filters(filters), rate_limited=True)

    def clear_cached_retrievals(self) -> None:
        """Forget every cached retrieval, e.g. after the settings they ran under changed."""
        self.caches.retrievals.clear()
