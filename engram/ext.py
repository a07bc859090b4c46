"""The seams a plugin author implements: stores, embedders, metrics.

Stores return candidates with raw scores and never rank beyond them: ranking and selection are
shared Python, so every backend ranks the same way. The shared contract test suite in
``engram.testing.store_contract`` checks any implementation of :class:`Store`.
"""

from __future__ import annotations

import builtins
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.errors import ValidationError, short_repr
from engram.model import (
    KINDS,
    STATUSES,
    Entity,
    EntityRelation,
    Filters,
    Hit,
    Link,
    LoggedRetrieval,
    MemoryRecord,
    RelationType,
)
from engram.validate import check_utf8, to_utc

__all__ = ["Embedder", "Metrics", "Store", "Vector"]

Vector = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 rows; one method does the work."""

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
    def put_many(self, records: Sequence[MemoryRecord], vectors: Vector) -> None:
        """Insert rows, keyword index entries and vectors in one transaction."""

    def replace(self, record: MemoryRecord, vector: Vector | None) -> None:
        """Overwrite a row (same id and user); a new vector when content changed."""

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

    def entities(self, user_id: str) -> builtins.list[Entity]: ...

    def stats(self) -> Mapping[str, Any]: ...

    # -- candidate primitives: each a ranked list of (id, raw score) ------------------------------
    def vector_search(self, user_id: str, query: Vector, n: int, filters: Filters) -> builtins.list[Hit]:
        """Cosine similarity, best first."""

    def keyword_search(self, user_id: str, text: str, n: int, filters: Filters) -> builtins.list[Hit]:
        """BM25-like relevance (positive, higher is better), best first."""

    def by_time_range(
        self, user_id: str, start: datetime, end: datetime, n: int, filters: Filters
    ) -> builtins.list[Hit]:
        """Memories created in [start, end], newest first; score is the POSIX time."""

    def by_entities(
        self, user_id: str, entity_ids: Sequence[str], n: int, filters: Filters
    ) -> builtins.list[Hit]:
        """Memories naming any of the entities; score is how many they name."""

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


#: Bounds on what one filter may carry (every value ends up as a bound SQL parameter).
_MAX_FILTER_ITEMS = 1000
_MAX_FILTER_CHARS = 10_000
_INT64 = (-(2**63), 2**63 - 1)


def as_filters(value: Filters | Mapping[str, Any] | None) -> Filters:
    """Accept a Filters or a plain mapping of its fields, validated; lists become tuples.

    Every refusal is a ValidationError naming ``filters`` (an unknown key, not a mapping) or
    ``filters.<field>`` (a value of the wrong type or out of range).
    """
    if value is None:
        return Filters()
    if isinstance(value, Filters):
        given = {f.name: getattr(value, f.name) for f in dataclasses.fields(Filters)}
    elif isinstance(value, Mapping):
        given = dict(value)
    else:
        raise ValidationError("filters", f"must be a mapping of filter fields, got {type(value).__name__}")
    allowed = [f.name for f in dataclasses.fields(Filters)]
    for key in given:
        if key not in allowed:
            raise ValidationError("filters", f"unknown filter {short_repr(key)}; allowed: {', '.join(allowed)}")
    return Filters(**{key: _filter_value(key, item) for key, item in given.items()})


def _filter_text(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if len(value) > _MAX_FILTER_CHARS:
        raise ValidationError(field, f"must be at most {_MAX_FILTER_CHARS} characters, got {len(value)}")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL characters")
    return check_utf8(value, field)


def _filter_value(key: str, value: Any) -> Any:
    """One filter field checked and normalized (lists to tuples, ISO strings to UTC datetimes)."""
    field = f"filters.{key}"
    if key in ("kinds", "statuses", "tags_all", "tags_any"):
        if value is None and key != "statuses":
            return None if key == "kinds" else ()
        if isinstance(value, str | bytes):
            raise ValidationError(field, f"must be a list of strings, not a bare string (write [{short_repr(value)}])")
        if not isinstance(value, Sequence | set | frozenset):
            raise ValidationError(field, f"must be a list of strings, got {type(value).__name__}")
        if len(value) > _MAX_FILTER_ITEMS:
            raise ValidationError(field, f"at most {_MAX_FILTER_ITEMS} items allowed, got {len(value)}")
        items = tuple(_filter_text(field, item) for item in value)
        choices = {"kinds": KINDS, "statuses": STATUSES}.get(key)
        if choices is not None:
            for item in items:
                if item not in choices:
                    raise ValidationError(field, f"unknown value {short_repr(item)}; allowed: {', '.join(choices)}")
        return items
    if key in ("session_id", "project_id", "agent_id", "subject", "predicate"):
        return None if value is None else _filter_text(field, value)
    if key in ("created_after", "created_before"):
        if value is None:
            return None
        return to_utc(value, field)
    # metadata: {key: scalar}, compared for equality inside the store
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a mapping of key to value, got {type(value).__name__}")
    if len(value) > _MAX_FILTER_ITEMS:
        raise ValidationError(field, f"at most {_MAX_FILTER_ITEMS} keys allowed, got {len(value)}")
    out: dict[str, Any] = {}
    for name, item in value.items():
        _filter_text(field, name)
        if isinstance(item, str):
            _filter_text(field, item)
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if not _INT64[0] <= item <= _INT64[1]:
                raise ValidationError(field, f"integer value of {short_repr(name)} is outside the signed 64-bit range")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValidationError(field, f"value of {short_repr(name)} must be a finite number")
        else:
            allowed = "a string, number, boolean or null"
            raise ValidationError(field, f"value of {short_repr(name)} must be {allowed}, got {type(item).__name__}")
        out[name] = item
    return out
