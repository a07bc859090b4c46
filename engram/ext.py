"""The seams a plugin author implements: stores, embedders, metrics.

Stores return candidates with raw scores and never rank beyond them: ranking and selection are
shared Python, so every backend ranks the same way. The shared contract test suite in
``tests/contract/test_store_contract.py`` checks any implementation of :class:`Store`.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.model import (
    Entity,
    EntityRelation,
    Filters,
    HistoryEvent,
    Hit,
    Link,
    LoggedRetrieval,
    MemoryRecord,
    RelationType,
)
from engram.validate import as_filters

# ``as_filters`` is a check (engram.validate); it stays importable from here, where callers found it.
__all__ = ["SUBSTRING_MIN", "Embedder", "Metrics", "RetrievalReads", "Store", "Vector", "as_filters"]

Vector = npt.NDArray[np.float32]
#: The shortest term :meth:`Store.substring_search` answers: a trigram index cannot answer a shorter one.
SUBSTRING_MIN = 3


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 rows (made unit length by the caller); one method does the work."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed_batch(self, texts: Sequence[str]) -> Vector: ...


class Metrics(Protocol):
    """Where counters and timings go (the retrieval policy's and the recall modes' metric names)."""

    def observe(self, name: str, value: float, **labels: str) -> None: ...

    def increment(self, name: str, amount: float = 1.0, **labels: str) -> None: ...


class Store(Protocol):
    """Persistence plus raw candidate primitives, every call scoped to one user."""

    # -- lifecycle and embedding bookkeeping --------------------------------------------------
    def close(self) -> None: ...

    def bind_embedder(self, model_id: str, dimensions: int) -> None:
        """Record the model on first use; raise EmbedderMismatch if another model's vectors exist."""

    def cached_vectors(self, user_id: str, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        """Vectors of this user's memories with these content hashes, embedded as their content alone
        (not behind a speaker's name): reuse never crosses users, so it says nothing about another's."""

    # -- writes ---------------------------------------------------------------------------------
    def put_many(
        self, records: Sequence[MemoryRecord], vectors: Vector, *, facets: Sequence[Vector | None] | None = None
    ) -> None:
        """Insert rows, keyword index entries and vectors in one transaction. ``facets`` holds, in
        the records' order, a matrix of vectors of parts of each memory or None (engram.ingest.facets),
        kept with its row and returned by :meth:`facets`."""

    def replace(self, record: MemoryRecord, vector: Vector | None, *, facets: Vector | None = None) -> None:
        """Overwrite a row (same id and user); a new vector when content changed, with that content's
        ``facets`` (none when None); without a new vector the stored facets stay."""

    def put_facets(self, user_id: str, rows: Sequence[tuple[str, str, Vector]], *, replace: bool = False) -> int:
        """Set the facets of memories stored without them (or, with ``replace``, whatever they hold):
        (memory id, the content hash they were read from, matrix) each; a memory whose content
        changed since, or that has facets and no ``replace``, is left alone. Returns how many were set."""

    def delete(self, user_id: str, memory_id: str) -> bool: ...

    def forget_user(self, user_id: str) -> int:
        """Delete every row of the user in every table (memories, links, entities, relations,
        ontology, retrieval log, feedback, tuned weights); returns the memories removed."""

    def record_access(self, user_id: str, memory_ids: Sequence[str], at: datetime) -> None: ...

    def add_link(self, user_id: str, link: Link) -> None: ...

    def upsert_entity(self, user_id: str, entity: Entity) -> None: ...

    # -- reads ----------------------------------------------------------------------------------
    def get(self, user_id: str, memory_id: str) -> MemoryRecord | None: ...

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> list[MemoryRecord]: ...

    def vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]: ...

    def facets(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """The facet matrices (one row per part) of those memories that have any."""

    def list(
        self, user_id: str, filters: Filters, *, limit: int = 100, offset: int = 0
    ) -> builtins.list[MemoryRecord]: ...

    def count(self, user_id: str | None = None) -> int: ...

    def user_exists(self, user_id: str) -> bool: ...

    def change_token(self, user_id: str) -> str:
        """A value that changes whenever this user's data may have changed, in any process."""

    def users(self) -> builtins.list[str]:
        """Every user id with memories, entities or links, sorted."""

    def links(self, user_id: str, memory_id: str) -> builtins.list[Link]: ...

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEvent]:
        """The audit log of one memory, oldest first: a row per add, update, supersede, restore and
        delete, each written in the transaction of its change; [] for a memory never seen. A deleted
        memory keeps its events but not their text (see :mod:`engram.stores.sql.history`)."""

    def entities(self, user_id: str) -> builtins.list[Entity]: ...

    def stats(self) -> Mapping[str, Any]: ...

    # -- candidate primitives: each a ranked list of (id, raw score) ------------------------------
    def vector_search(self, user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]:
        """Cosine similarity, best first."""

    def keyword_search(self, user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]:
        """BM25-like relevance (positive, higher is better), best first."""

    #: Whether :meth:`substring_search` is answered from an index (its cost grows with the matches)
    #: rather than by reading the user's rows (its cost grows with them).
    substring_indexed: bool

    def substring_search(self, user_id: str, terms: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]:
        """Memories whose searched text (content, subject, predicate, object, trigger, action, tags,
        metadata string values) contains any of ``terms`` ignoring case, newest first, score the
        POSIX time; each term at least :data:`SUBSTRING_MIN` characters (ValidationError otherwise)."""

    def by_time_range(
        self, user_id: str, start: datetime, end: datetime, n: int, filters: Filters
    ) -> builtins.list[Hit]:
        """Memories created in [start, end], newest first; score is the POSIX time."""

    def by_named_days(self, user_id: str, first: date, last: date, n: int, filters: Filters, *,
                      told: bool = False) -> builtins.list[Hit]:
        """Memories whose text names a day in [first, last], or with ``told`` also tells of one in
        relative words (the days :func:`engram.days.indexed_days` reads when a memory is written),
        newest first; score is the POSIX time."""

    def by_standing(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        """The newest memories stored with vectors of their standing sentences (``facets``, see
        :func:`engram.retrieve.standing.standing_sentences`), newest first; score is the POSIX time."""

    def by_entities(
        self, user_id: str, entity_ids: Sequence[str], n: int, filters: Filters
    ) -> builtins.list[Hit]:
        """Memories naming any of the entities; score is how many they name."""

    def entity_counts(self, user_id: str, entity_ids: Sequence[str], cap: int) -> dict[str, int]:
        """How many of the user's memories name each entity, counted only up to ``cap`` (a count of
        ``cap`` means "``cap`` or more"): a bounded read however common an entity is."""

    def entity_shares(self, user_id: str, entity_ids: Sequence[str], newest: int) -> tuple[dict[str, int], int]:
        """How many of the user's newest memories name each entity, and how many memories that
        window holds: every memory said after the ``newest + 1``-th newest was (at most ``newest``;
        all when there are no more), so that one window is read alike on every backend."""

    def by_links(
        self, user_id: str, memory_ids: Sequence[str], n: int, link_types: Iterable[str] | None
    ) -> builtins.list[Hit]:
        """Memories one hop from the given ones (either direction); score is link strength."""

    def session_neighbors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """For each given memory with a session, the memories just before and after it in that
        session, ordered by (created_at, id): the turns around a message."""

    def most_recent(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        """By created_at, newest first; score is the POSIX time."""

    def most_recently_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        """By last_accessed_at (never accessed last), score the POSIX time or 0."""

    def most_important(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]: ...

    def most_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]: ...

    # -- entity relations and their ontology (engram.ontology) ------------------------------------
    def define_relation(self, user_id: str, relation: RelationType) -> None:
        """Declare a relation between entity types (idempotent)."""

    def ontology(self, user_id: str) -> builtins.list[RelationType]:
        """The declared relation types, sorted by from_type, relation, to_type."""

    def relate_entities(self, user_id: str, relation: EntityRelation) -> None:
        """Store a relation between two entities (idempotent; the caller checked the ontology)."""

    def related_entities(
        self, user_id: str, entity_ids: Sequence[str], limit_per_entity: int
    ) -> builtins.list[EntityRelation]:
        """One hop outward from each entity along relations whose types the ontology declares:
        at most ``limit_per_entity`` each, newest first, then by relation and to_id."""

    # -- retrieval log, feedback and tuned weights (engram.feedback, engram.tune) -----------------
    def log_retrieval(self, user_id: str, entry: LoggedRetrieval) -> None:
        """One statement; logging the same retrieval id twice keeps the first."""

    def get_retrieval(self, user_id: str, retrieval_id: str) -> LoggedRetrieval | None:
        """The logged retrieval (``used`` filled from feedback), None if unknown or another user's."""

    def record_feedback(self, user_id: str, retrieval_id: str, memory_ids: Sequence[str], at: datetime) -> int:
        """Record uses and increment each newly used memory's ``access_count`` in one transaction;
        returns how many uses were new (feedback repeated for a retrieval counts once)."""

    def feedback_log(self, user_id: str, limit: int) -> builtins.list[LoggedRetrieval]:
        """The newest ``limit`` retrievals that got feedback, oldest first, ``used`` filled."""

    def save_weights(self, user_id: str, weights: Mapping[str, Mapping[str, float]]) -> None:
        """Replace the user's tuned weights (strategy -> signal -> weight)."""

    def load_weights(self, user_id: str) -> dict[str, dict[str, float]]: ...


class RetrievalReads(Protocol):
    """What the read path asks of storage: a subset of :class:`Store` (every store is one), also
    answered by a view over several users (:class:`engram.retrieve.scopes.Scopes`)."""

    def change_token(self, user_id: str) -> str: ...

    def user_exists(self, user_id: str) -> bool: ...

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]: ...

    def vectors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]: ...

    def facets(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]: ...

    def session_neighbors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]: ...

    def record_access(self, user_id: str, memory_ids: Sequence[str], at: datetime) -> None: ...

    def vector_search(self, user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]: ...

    def keyword_search(self, user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]: ...

    def by_time_range(
        self, user_id: str, start: datetime, end: datetime, n: int, filters: Filters
    ) -> builtins.list[Hit]: ...

    def by_named_days(self, user_id: str, first: date, last: date, n: int, filters: Filters, *,
                      told: bool = False) -> builtins.list[Hit]: ...

    def by_standing(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]: ...

    def by_entities(self, user_id: str, entity_ids: Sequence[str], n: int, filters: Filters) -> builtins.list[Hit]: ...

    def entity_counts(self, user_id: str, entity_ids: Sequence[str], cap: int) -> dict[str, int]: ...

    def entity_shares(self, user_id: str, entity_ids: Sequence[str], newest: int) -> tuple[dict[str, int], int]: ...

    def by_links(
        self, user_id: str, memory_ids: Sequence[str], n: int, link_types: Iterable[str] | None
    ) -> builtins.list[Hit]: ...

    def most_recent(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]: ...

    def related_entities(
        self, user_id: str, entity_ids: Sequence[str], limit_per_entity: int
    ) -> builtins.list[EntityRelation]: ...
