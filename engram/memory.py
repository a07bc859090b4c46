"""The ``Memory`` facade: opens a store, an embedder and the pipeline, and wires calls through."""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from engram import documents, keyword_search
from engram import recall as recall_modes
from engram.config import Limits, RetrievalConfig
from engram.documents import Document
from engram.domain import DomainSource
from engram.errors import MemoryNotFound, ValidationError, short_repr
from engram.ext import Embedder, Metrics, Store, as_filters
from engram.feedback import FeedbackResult, TunedWeights, record_feedback
from engram.ingest import truth
from engram.ingest.embed import embed_records
from engram.ingest.entities import EntityIndex, caller_entities, tag_record
from engram.ingest.files import IngestReport
from engram.ingest.files import ingest as ingest_files
from engram.ingest.normalize import FIELDS, normalize, to_utc, validate_id, validate_strings, validate_text
from engram.keyword_search import KeywordResult
from engram.metrics import InMemoryMetrics
from engram.model import Entity, Filters, Link, MemoryRecord
from engram.ontology import EntitiesAccessor, EntityRelation, RelationType
from engram.ontology import define_relation as define_ontology_relation
from engram.ontology import relate as relate_entities
from engram.recall import Recall
from engram.retrieve import Pipeline
from engram.retrieve.types import Retrieval
from engram.salience import memory_salience
from engram.tune import DEFAULT_HOLDOUT, MIN_EXAMPLES, TuneReport, tune_user

__all__ = ["Memory", "open_store"]

DEFAULT_PATH = "engram.db"
BATCH = 256  # records per transaction in add_many: bounded memory, few fsyncs
MAX_OFFSET = 10**9  # list(): beyond any real page, and far inside SQLite's 64-bit integers
MAX_LINK_TYPE_CHARS = 64
MAX_ENTITY_TEXT_CHARS = 200  # an entity's type, name and each alias
MAX_ALIASES = 100  # every retrieve() scans all of a user's aliases


def open_store(path_or_url: str | os.PathLike[str] | None) -> Store:
    """A store for a file path (SQLite) or a ``postgresql://`` URL."""
    target = os.fspath(path_or_url) if path_or_url is not None else os.environ.get("ENGRAM_DB", DEFAULT_PATH)
    if target.startswith(("postgresql://", "postgres://")):
        from engram.stores.postgres.store import PostgresStore

        return PostgresStore(target)
    from engram.stores.sqlite.store import SQLiteStore

    return SQLiteStore(Path(target) if target != ":memory:" else target)


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
    ) -> None:
        self.store: Store = store if store is not None else open_store(path_or_url)
        self.config = config or RetrievalConfig()
        self.limits = limits or Limits()
        self.metrics: Metrics = metrics or InMemoryMetrics()
        self._embedder = embedder
        self._bound = False
        self._lock = threading.Lock()
        self._tuned = TunedWeights(self.store)
        self.pipeline = Pipeline(
            store=self.store, embedder=self._get_embedder, metrics=self.metrics, weights_by_strategy=self._tuned,
            domain_source=domain_source, log_retrievals=log_retrievals,
        )

    # -- wiring ---------------------------------------------------------------------------------------
    def _get_embedder(self) -> Embedder:
        """Load the model on first need, and bind the store to it (refusing to mix models)."""
        with self._lock:
            if self._embedder is None:
                from engram.embedders import default_embedder

                self._embedder = default_embedder()
            if not self._bound:
                self.store.bind_embedder(self._embedder.model_id, self._embedder.dimensions)
                self._bound = True
            return self._embedder

    def _invalidate(self, user_id: str) -> None:
        """Every write ends here: cached retrievals and keyword searches of that user are stale."""
        self.pipeline.cache.invalidate_user(user_id)
        keyword_search.invalidate(self, user_id)

    def _entity_index(self, user_id: str) -> EntityIndex:
        """The user's entity index, shared with retrieval: a write re-reads only the indexed names."""
        version = (self.store.change_token(user_id), self.pipeline.cache.generation(user_id))
        return self.pipeline.entity_indexes.get(self.store, user_id, version)

    @property
    def embedder(self) -> Embedder:
        return self._get_embedder()

    def _user(self, user_id: Any) -> str:
        value = validate_id(user_id, "user_id", self.limits)
        assert value is not None
        return value

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- writes ---------------------------------------------------------------------------------------
    def add(self, content: str, *, user_id: str, kind: str = "message", **fields: Any) -> MemoryRecord:
        """Store one memory; see ``add_many`` for batches."""
        return self.add_many([{"content": content, "user_id": user_id, "kind": kind, **fields}])[0]

    def add_many(self, items: Iterable[Mapping[str, Any]]) -> list[MemoryRecord]:
        """Validate every item first, then embed in batches and store; all or nothing per batch."""
        now = datetime.now(UTC)
        records: list[MemoryRecord] = []
        for item in items:
            if len(records) >= self.limits.max_batch:
                raise ValidationError("items", f"at most {self.limits.max_batch} items per call (Limits.max_batch)")
            records.append(normalize(item, limits=self.limits, now=now))
        if not records:
            return []
        # Link each memory to the entities it names (extracted ids after any the caller gave).
        indexes = {user: self._entity_index(user) for user in sorted({r.user_id for r in records})}
        records = [tag_record(r, indexes[r.user_id], limits=self.limits) for r in records]
        records, supersessions = truth.plan(self.store, records)
        embedder = self._get_embedder()
        for start in range(0, len(records), BATCH):
            chunk = records[start : start + BATCH]
            vectors = embed_records(embedder, self.store, chunk)
            self.store.put_many(chunk, vectors)
        truth.apply(self.store, supersessions, {r.id for r in records})
        for user_id in sorted({r.user_id for r in records}):
            self._invalidate(user_id)
        return records

    def update(self, memory_id: str, *, user_id: str, **changes: Any) -> MemoryRecord:
        """Change fields of a memory; a content change re-embeds it."""
        old = self.get(memory_id, user_id=user_id)
        # Only what add accepts may change: anything else (access_count, last_accessed_at, which
        # reads and feedback keep) would be silently ignored, so it is refused by name.
        allowed = FIELDS - {"id", "user_id"}
        unknown = set(changes) - allowed
        if unknown:
            raise ValidationError(sorted(unknown)[0], f"cannot be updated; allowed: {', '.join(sorted(allowed))}")
        merged = {k: v for k, v in old.to_dict().items() if k in FIELDS and v is not None}
        merged.update({k: v for k, v in changes.items() if k in FIELDS})
        record = normalize(merged, limits=self.limits, now=old.recorded_at)
        record = replace(
            record,
            id=old.id,
            access_count=old.access_count,
            last_accessed_at=old.last_accessed_at,
        )
        # Entities the caller passes replace the list; otherwise the hand-given ones stay and the
        # extracted ones are recomputed, so an edited text drops names it no longer mentions.
        index = self._entity_index(record.user_id)
        given = record.entities if "entities" in changes else caller_entities(old, index)
        record = tag_record(record, index, limits=self.limits, given=given)
        vector = None
        if record.content_hash != old.content_hash:
            vector = embed_records(self._get_embedder(), self.store, [record])[0]
        self.store.replace(record, vector)
        self._invalidate(record.user_id)
        return record

    def delete(self, memory_id: str, *, user_id: str) -> bool:
        """Remove a memory from every index at once; False if it was not there.

        Deleting a version makes the one it superseded current again (:mod:`engram.ingest.truth`); a
        document takes its passages with it.
        """
        user = self._user(user_id)
        record = self.store.get(user, memory_id)
        if record is not None and record.kind == "document":
            truth.withdraw_document(self.store, user, record)
        deleted = self.store.delete(user, memory_id)
        self._invalidate(user_id)
        return deleted

    def forget_user(self, user_id: str) -> int:
        """Remove every row of one user from every table and index; returns memories removed."""
        count = self.store.forget_user(self._user(user_id))
        self._tuned.invalidate(user_id)
        self._invalidate(user_id)
        return count

    def link(self, from_id: str, to_id: str, type: str, strength: float = 1.0, *, user_id: str) -> Link:
        user = self._user(user_id)
        for memory_id in (from_id, to_id):
            self.get(memory_id, user_id=user)
        validate_text(type, "type", MAX_LINK_TYPE_CHARS)
        if isinstance(strength, bool) or not isinstance(strength, int | float) or not 0.0 <= strength <= 1.0:
            raise ValidationError("strength", f"must be a number in [0, 1], got {short_repr(strength)}")
        link = Link(from_id, to_id, type, float(strength))
        self.store.add_link(user, link)
        self._invalidate(user)
        return link

    def add_entity(
        self, entity_id: str, *, user_id: str, type: str | None = None, name: str | None = None,
        aliases: Sequence[str] = (),
    ) -> Entity:
        """Register a canonical entity (``customer:a1b2``) and the names queries may use for it."""
        user = self._user(user_id)
        entity_id = validate_id(entity_id, "entity_id", self.limits) or ""
        if type is not None:
            validate_text(type, "type", MAX_ENTITY_TEXT_CHARS)
        if name is not None:
            validate_text(name, "name", MAX_ENTITY_TEXT_CHARS)
        aliases = validate_strings(aliases, "aliases", MAX_ALIASES, MAX_ENTITY_TEXT_CHARS)
        # Updating a registered entity is always allowed; only a new one counts against the bound.
        # (Two processes adding at once may both pass at bound - 1: the bound is a cost cap, not a quota.)
        # Both bundled stores count from the primary key; another Store is asked for its entities.
        bound = self.limits.max_entities_per_user
        count = getattr(self.store, "count_entities", None)
        others: int = (
            count(user, excluding=entity_id) if callable(count)
            else sum(e.id != entity_id for e in self.store.entities(user))
        )
        if others >= bound:
            raise ValidationError(
                "entity_id", f"user already has {others} entities; at most {bound} per user "
                "(Limits.max_entities_per_user): update or reuse a registered entity",
            )
        entity = Entity(
            id=entity_id,
            type=type or entity_id.split(":", 1)[0],
            name=name or entity_id.split(":", 1)[-1],
            aliases=tuple(aliases),
        )
        self.store.upsert_entity(user, entity)
        self._invalidate(user)
        return entity

    # -- entity relations and ontology (seed 003): engram.ontology
    def define_relation(self, from_type: str, relation: str, to_type: str, *, user_id: str) -> RelationType:
        """Declare that entities of ``from_type`` may have ``relation`` to ``to_type`` (customer HAS_MANY order)."""
        return define_ontology_relation(self, from_type, relation, to_type, user_id=self._user(user_id))

    def relate(self, a: str, relation: str, b: str, *, user_id: str) -> EntityRelation:
        """Relate two entities; the ontology must declare the relation for their types."""
        return relate_entities(self, a, relation, b, user_id=self._user(user_id))

    # -- domain database, feedback and tuning (seed 003): engram.domain, engram.feedback, engram.tune
    def set_domain_source(self, source: DomainSource | None) -> None:
        """Where queries that need live data (``requires_domain_db``) get their rows; None turns it off."""
        self.pipeline.domain_source = source
        self.pipeline.cache.clear()

    def feedback(self, retrieval_id: str, used_ids: Sequence[str], *, user_id: str) -> FeedbackResult:
        """Record which memories of a retrieval were used; they gain reinforcement and teach ``tune``."""
        user = self._user(user_id)
        result = record_feedback(self, retrieval_id, used_ids, user_id=user)
        self._invalidate(user)
        return result

    def tune(
        self, *, user_id: str, holdout: float = DEFAULT_HOLDOUT, min_examples: int = MIN_EXAMPLES,
        dry_run: bool = False,
    ) -> TuneReport:
        """Fit the user's strategy weights to their feedback; kept only where they beat the defaults."""
        user = self._user(user_id)
        report = tune_user(self.store, user, holdout=holdout, min_examples=min_examples, dry_run=dry_run)
        self._tuned.invalidate(user)
        self._invalidate(user)
        return report

    # -- reads ----------------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str) -> MemoryRecord:
        record = self.store.get(self._user(user_id), memory_id)
        if record is None:
            raise MemoryNotFound(f"no memory {memory_id!r} for this user")
        return record

    def list(
        self, *, user_id: str, filters: Filters | Mapping[str, Any] | None = None, limit: int = 100,
        offset: int = 0,
    ) -> builtins.list[MemoryRecord]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise ValidationError("limit", f"must be an integer in [1, 10000], got {short_repr(limit)}")
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
            raise ValidationError("offset", f"must be an integer in [0, {MAX_OFFSET}], got {short_repr(offset)}")
        return self.store.list(self._user(user_id), as_filters(filters), limit=limit, offset=offset)

    def links(self, memory_id: str, *, user_id: str) -> builtins.list[Link]:
        return self.store.links(self._user(user_id), memory_id)

    @property
    def entities(self) -> EntitiesAccessor:
        """``memory.entities(user_id=...)`` lists entities; ``memory.entities.relate(...)`` relates two."""
        return EntitiesAccessor(self)

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
    ) -> Retrieval:
        """What from this user's memory matters for ``query`` now: ranked, selected, explained."""
        user = self._user(user_id)
        base = as_filters(filters)
        if session_id is not None:
            base = replace(base, session_id=validate_id(session_id, "session_id", self.limits))
        if kinds is not None:
            base = replace(base, kinds=kinds)  # type: ignore[arg-type]  # as_filters checks and converts
        if tags:
            base = replace(base, tags_all=tags)  # type: ignore[arg-type]
        base = as_filters(base)
        when = to_utc(now, "now") if now is not None else None
        return self.pipeline.retrieve(
            query, user_id=user, config=config or self.config, now=when, filters=base,
            use_memory=use_memory, as_of=to_utc(as_of, "as_of") if as_of is not None else None,
        )

    # -- recall modes (seed 004) and keyword search (seed 002): engram.recall, engram.keyword_search
    def recall(self, query: str | None = None, *, user_id: str, mode: str = "relevant", **options: Any) -> Recall:
        """Recall by mode: relevant, recent, important or frequent (see ``engram.recall.recall``)."""
        return recall_modes.recall(self, query, user_id=self._user(user_id), mode=mode, **options)

    def recall_temporal(
        self, start: datetime | str, end: datetime | str, *, user_id: str, topic: str | None = None, **options: Any
    ) -> Recall:
        """Memories created in [start, end], newest first, optionally filtered by topic similarity."""
        return recall_modes.recall_temporal(self, start, end, user_id=self._user(user_id), topic=topic, **options)

    def recall_by_kind(self, kind: str, *, user_id: str, limit: int = 10, **options: Any) -> Recall:
        return recall_modes.recall_by_kind(self, kind, user_id=self._user(user_id), limit=limit, **options)

    def recall_linked(
        self, memory_id: str, *, user_id: str, link_types: Sequence[str] | None = None, depth: int = 1, **options: Any
    ) -> Recall:
        """Memories reachable over links from one memory (breadth-first, depth 1-3)."""
        return recall_modes.recall_linked(
            self, memory_id, user_id=self._user(user_id), link_types=link_types, depth=depth, **options
        )

    def find_contradictions(self, content: str, *, user_id: str, **options: Any) -> Recall:
        """Memories similar to ``content`` that carry a ``contradicts`` link."""
        return recall_modes.find_contradictions(self, content, user_id=self._user(user_id), **options)

    def salience(self, memory_id: str, *, user_id: str, now: datetime | None = None) -> float:
        """Read-time salience in [0, 1] from importance, age and access; never stored."""
        return memory_salience(self, memory_id, user_id=self._user(user_id), now=now)

    def search_keywords(
        self, keywords: str | Sequence[str], *, user_id: str, cached: bool = False, **options: Any
    ) -> builtins.list[KeywordResult]:
        """Seed 002 keyword search with match reasons; ``cached=True`` uses the 300 s cache."""
        search = keyword_search.search_with_cache if cached else keyword_search.search_keywords
        return search(self, keywords, user_id=self._user(user_id), **options)

    def enrich_context(self, query: str | Sequence[str], *, user_id: str, **options: Any) -> dict[str, Any]:
        """Seed 002 context building: {memories, summary, count, last_retrieved}."""
        return keyword_search.enrich_context(self, query, user_id=self._user(user_id), **options)

    # -- documents (seed 000): engram.ingest.files, engram.documents
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
            self, paths, user_id=self._user(user_id), tags=tags, topic=topic, note=note, provider=provider,
            force=force, now=now, progress=progress, follow_symlinks=follow_symlinks,
        )

    def get_document(
        self, meta: Mapping[str, Any], *, user_id: str, k: int = 50, default_tags: Sequence[str] | None = None,
        strategy: str = "latest", as_of: str | datetime | None = None,
    ) -> Document:
        """Exactly one version of one ingested document (seed 000: latest, earliest, longest, score)."""
        return documents.get_document(
            self, meta, user_id=self._user(user_id), k=k, default_tags=default_tags, strategy=strategy, as_of=as_of
        )

    def document_versions(self, filename_or_doc_key: str, *, user_id: str) -> builtins.list[Document]:
        """Every stored version of a file, oldest first."""
        return documents.document_versions(self, filename_or_doc_key, user_id=self._user(user_id))

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
        self.pipeline.cache.clear()
