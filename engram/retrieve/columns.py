"""The signals of many candidates at once: one array per signal, in the candidates' order.

Each function applies the arithmetic of its signal in :mod:`engram.retrieve.signals` element-wise,
so a ranking scores ~70 candidates with a few array operations instead of a Python call per
candidate and signal. :class:`Known` holds what a query's rankings share: the second hop ranks a
second time, and only the memories it added need their own signals computed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from engram.ingest.entities import MENTION
from engram.model import MemoryRecord, TimeRange
from engram.retrieve.gain_weights import PASSING
from engram.retrieve.signals import entity_overlap, reinforcement, semantic_similarity, temporal_relevance
from engram.retrieve.standing import is_standing, machine_said, standing_sentences
from engram.retrieve.turn_roles import said_by_the_assistant

__all__ = ["BASE", "Known", "base_signals", "calibrated", "facet_sentences", "gains", "lasting"]

Column = npt.NDArray[np.float64]

#: The per-memory signals that do not depend on the other candidates, in :func:`base_signals` order.
BASE = ("semantic_similarity", "keyword", "entity_overlap", "temporal_relevance", "importance", "reinforcement")


@dataclass
class Known:
    """Base signals already computed for this query, by memory id, and the entities each memory
    names. Entity overlap depends on which query entities speak among the candidates (``voices``)
    and on how the query's entities read among them: when a ranking sees other voices or entities,
    what was known is computed again."""

    voices: frozenset[str] = frozenset()
    #: The query entities the values were computed for (a short name may read as a speaker's).
    entities: tuple[str, ...] = ()
    #: The full names the query's first names stand for among the candidates ("mention:alice moreau"
    #: -> "mention:alice") the values were computed with.
    first_names: Mapping[str, str] = field(default_factory=dict)
    values: dict[str, tuple[float, ...]] = field(default_factory=dict)
    named: dict[str, Set[str]] = field(default_factory=dict)
    #: Memory id -> the row of its facets whose meaning was closer than its own vector's.
    facet_rows: dict[str, int] = field(default_factory=dict)
    #: Memory id -> whether it is a standing statement: a pattern over its whole text (~30 us for a
    #: long message), asked by the facets' read and by every ranking of a request.
    standing: dict[str, bool] = field(default_factory=dict)

    def standing_of(self, record: MemoryRecord) -> bool:
        """:func:`~engram.retrieve.standing.is_standing`, read once a query."""
        found = self.standing.get(record.id)
        if found is None:
            found = self.standing[record.id] = is_standing(record)
        return found

    def holds(self, record: MemoryRecord) -> bool:
        """Whether ``record`` states what holds for the user: a fact (what an app's extraction kept:
        "Nadia's accountant is now Farah Siddiqui at Ledgerwise"), a procedure (how the user has
        things done: "Quotes: itemise labour and materials separately, valid for 30 days") or a
        standing statement."""
        return record.kind in ("fact", "procedure") or self.standing_of(record)


def base_signals(
    records: Sequence[MemoryRecord],
    *,
    query_vec: npt.NDArray[np.float32] | None,
    vectors: Mapping[str, npt.NDArray[np.float32]],
    keyword_scores: Mapping[str, float],
    query_entities: Sequence[str],
    time_range: TimeRange | None,
    now: datetime,
    said: Mapping[str, str],
    voices: frozenset[str],
    known: Known,
    facets: Mapping[str, npt.NDArray[np.float32]] | None = None,
    first_names: Mapping[str, str] | None = None,
    entity_weights: Mapping[str, float] | None = None,
) -> tuple[list[Column], list[Set[str]]]:
    """The :data:`BASE` signals of ``records`` (one array each; ``keyword`` is the store's raw
    score in [0, 1]) and the entities each names (its entities and subject; none are read when the
    query names none). A memory with ``facets`` (vectors of its parts, by id) is as close in
    meaning as the closest of its own vector and those. Computed only for the records ``known``
    does not hold, then kept there. ``entity_weights``: how telling each query entity is
    (engram.retrieve.specific), the same for every ranking of one query."""
    short = dict(first_names or {})
    if known.voices != voices or known.entities != tuple(query_entities) or known.first_names != short:
        known.voices, known.entities, known.first_names = voices, tuple(query_entities), short
        known.values, known.named, known.facet_rows = {}, {}, {}
    new = [r for r in records if r.id not in known.values]
    if new:
        ids = [r.id for r in new]
        cosines = _cosines(query_vec, [vectors.get(i) for i in ids])
        if facets and query_vec is not None:
            for at, memory_id in enumerate(ids):
                parts = facets.get(memory_id)
                if parts is not None and parts.shape[-1] == query_vec.size:
                    sims = parts @ np.asarray(query_vec, dtype=np.float32).ravel()
                    row = int(np.argmax(sims))
                    best = float(sims[row])
                    if np.isfinite(best) and min(1.0, best) > cosines[at]:
                        cosines[at] = min(1.0, best)
                        known.facet_rows[memory_id] = row
        keywords = _units(np.array([keyword_scores.get(i, 0.0) for i in ids], dtype=np.float64))
        overlaps = [0.0] * len(new)
        lowercase = _speakers_in_lowercase(query_entities, voices)
        if query_entities:
            for at, record in enumerate(new):
                named = set(record.entities)
                if record.subject:
                    named.add(record.subject)
                speaker = said.get(record.id)
                if speaker is not None:  # the user's own message names no one, yet the user says it
                    named.add(speaker)
                named.update(e for e, pattern in lowercase
                             if e not in named and pattern.search(record.content[:_NAMES_READ]))
                if short:  # "Alice" names "Alice Moreau", the one Alice among the candidates
                    named.update([short[n] for n in named if n in short])
                known.named[record.id] = named
                overlaps[at] = entity_overlap(query_entities, named, speaker=said.get(record.id), speakers=voices,
                                              weights=entity_weights)
        temporal = [temporal_relevance(r.created_at, time_range, now) for r in new]
        importance = _units(np.array([r.importance for r in new], dtype=np.float64))
        uses = {count: reinforcement(count) for count in {r.access_count for r in new}}
        reinforced = [uses[r.access_count] for r in new]
        rows = zip(cosines.tolist(), keywords.tolist(), overlaps, temporal, importance.tolist(), reinforced,
                   strict=True)
        known.values.update(zip(ids, rows, strict=True))
    matrix = np.array([known.values[r.id] for r in records], dtype=np.float64).reshape(len(records), len(BASE))
    nobody: frozenset[str] = frozenset()
    return list(matrix.T), [known.named.get(r.id, nobody) for r in records]


#: How much of a memory is read for a speaker's name in lowercase (a chat's messages are short).
_NAMES_READ = 2_000
# Where a lowercase word is a word, not a name: after an article, "to" or a subject ("the bill for
# the trip", "a grace period", "threatened to sue", "can you mark friday"); "my dad" is Dad.
_AS_A_WORD = "".join(f"(?<!\\b{w} )" for w in (
    "the", "a", "an", "this", "that", "these", "those", "any", "some", "no", "every", "each", "to", "i", "you",
    "we", "they", "he", "she", "it", "will", "would", "can", "could", "should", "must", "might", "please", "pls"))


def _speakers_in_lowercase(query_entities: Sequence[str], voices: Set[str]) -> list[tuple[str, re.Pattern[str]]]:
    """The query's entities that speak among the candidates, each with the pattern of its name in any
    case where a name stands: a chat names its own people in lowercase ("lena on the podium holding
    a small bronze trophy", "dad asleep in his chair"), which the entity extractor, reading
    capitals, cannot see. Not after an article, "to" or a subject (:data:`_AS_A_WORD`)."""
    out = []
    for entity in query_entities:
        name = entity[len(MENTION):] if entity.startswith(MENTION) else ""
        if entity in voices and len(name) >= 3:
            out.append((entity, re.compile(rf"{_AS_A_WORD}(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)))
    return out


def facet_sentences(
    records: Sequence[MemoryRecord], facets: Mapping[str, npt.NDArray[np.float32]], seen: Known,
) -> dict[str, str]:
    """The sentence behind each memory's meaning that came from one of its facets, for its reasons:
    read again from its text, and only while the text still yields as many as were stored."""
    out: dict[str, str] = {}
    for record in records:
        row = seen.facet_rows.get(record.id)
        if row is not None:
            parts = standing_sentences(record)
            if len(parts) == len(facets.get(record.id, ())) and row < len(parts):
                out[record.id] = parts[row].strip()
    return out


def gains(
    records: Sequence[MemoryRecord],
    bridged: Mapping[str, tuple[float, str]],
    said: Mapping[str, str],
    voices: Set[str],
    asks: bool,
    speaking: Sequence[str],
    requests: bool = False,
    standing: Callable[[MemoryRecord], bool] = is_standing,
    assistant: bool = False,
) -> tuple[Column, Column, Column, Column]:
    """Per record: the bridging relevance, whether it is a question as asked, whether it is in a
    voice asked for and whether it is a standing instruction or preference when the query is a
    request (1.0 or 0.0); zeros where none apply.
    A question as asked is one of the query's speaking entities' (``voices``) when it names any,
    else any question not the assistant's. ``assistant`` (the query asks what the assistant said:
    "What did you suggest for the timeout?") puts the assistant's turns in the voice asked for."""
    n = len(records)
    via, asked, spoke, stands = (np.zeros(n, dtype=np.float64) for _ in range(4))
    if bridged:
        for at, record in enumerate(records):
            if record.id in bridged:
                via[at] = bridged[record.id][0]
    if asks:
        for at, record in enumerate(records):
            if "?" in record.content and (
                said.get(record.id) in voices if voices else not machine_said(record)
            ):
                asked[at] = 1.0
    if speaking or assistant:
        for at, record in enumerate(records):
            if said.get(record.id) in speaking or (assistant and said_by_the_assistant(record)):
                spoke[at] = 1.0
    if requests:
        for at, record in enumerate(records):
            if standing(record):
                stands[at] = 1.0
    return via, asked, spoke, stands


def calibrated(cosines: Column, similarity_range: tuple[float, float], *, ceiling: bool = True) -> Column:
    """:func:`~engram.retrieve.signals.calibrated_similarity` of each cosine; without ``ceiling``
    a cosine above the range's top goes on rising past 1 (ranking orders by it)."""
    low, high = similarity_range
    if high <= low:
        return np.zeros_like(cosines)
    scaled = (cosines - low) / (high - low)
    if ceiling:
        return _units(scaled)
    return np.where(np.isfinite(scaled), np.maximum(scaled, 0.0), 0.0)


def _units(values: Column) -> Column:
    """Each value clipped to [0, 1]; 0 where not finite (as ``signals._unit``)."""
    return np.where(np.isfinite(values), np.clip(values, 0.0, 1.0), 0.0)


def _cosines(query_vec: npt.NDArray[np.float32] | None, vecs: Sequence[npt.NDArray[np.float32] | None]) -> Column:
    """:func:`~engram.retrieve.signals.semantic_similarity` of the query with each vector, as one
    matrix product when the vectors share the query's shape (they do, from one store)."""
    if query_vec is None or not vecs:
        return np.zeros(len(vecs), dtype=np.float64)
    q = np.asarray(query_vec, dtype=np.float32).ravel()
    if not all(v is not None and v.size == q.size for v in vecs):
        return np.array([semantic_similarity(q, v) for v in vecs], dtype=np.float64)
    if not q.any():
        return np.zeros(len(vecs), dtype=np.float64)
    # One copy of every vector into a matrix (a store's vectors are flat float32 already).
    flat = [v if v.dtype == np.float32 and v.ndim == 1 else np.asarray(v, dtype=np.float32).ravel()
            for v in vecs if v is not None]
    matrix = np.concatenate(flat).reshape(len(flat), q.size)
    sims = matrix @ q
    # A zero vector has no direction (0.0, as semantic_similarity says); negative evidence is none.
    sims[~np.isfinite(sims) | ~matrix.any(axis=1)] = 0.0
    return np.asarray(np.clip(sims, 0.0, 1.0), dtype=np.float64)


def lasting(records: Sequence[MemoryRecord], seen: Known) -> npt.NDArray[np.float64]:
    """For a question about the user as a whole: 1 for a fact or a standing statement (what holds:
    "I'm vegetarian"), :data:`PASSING` for the rest of what the user said of themselves ("I'm
    flying to Denver on Thursday")."""
    return np.fromiter((1.0 if seen.holds(r) else PASSING for r in records),
                       dtype=np.float64, count=len(records))
