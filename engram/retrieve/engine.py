"""One engine for the reads that rank memories by a preset: sources -> union -> fetch -> admit -> score -> order -> cut.

A :class:`Strategy` (a preset) says which of the store's ranked lists to read and how far, what a
memory must be to be admitted, which signals score it with what weights, and how the answer is
ordered and chosen. :func:`run` does the rest the same way for every caller, with the pieces the
retrieval pipeline uses: the filters are checked again after fetch by its
:func:`~engram.retrieve.candidates.matches`, and each result is a :class:`~engram.retrieve.types.Scored`
carrying its signals, their weights and its reasons. The union of the sources lists each memory once,
in the order the sources first listed it (a source's raw score is the one it gave first), and grows
with each read by what is new in it, so a walk of thousands adds each hit once.

The recall modes (:mod:`engram.recall`), keyword search (:mod:`engram.keyword_search`) and document
lookup (:mod:`engram.documents`) are presets of it, each defined beside the signals it reads.

A source that ``grows`` is read four times further while the answer may still change: until it
ends (it lists every memory the strategy can admit, so all were seen), until a strategy ordered by
its source has enough, until the ``limit``-th score beats ``bound``, the best score any memory not
yet read could have, or until it reaches its ``most``. No list stops at a row count the preset does
not state: a ``most`` is a preset's declared bound (keyword search's scan of the newest memories),
and a memory beyond it is seen only through another source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from engram.model import Filters, Hit, MemoryRecord
from engram.retrieve.candidates import matches
from engram.retrieve.types import Scored

__all__ = ["GROWTH", "Evidence", "Raw", "Source", "Strategy", "Weighting", "run"]

#: How much further a growing source is read each time the answer may still change.
GROWTH = 4
#: Memories fetched and judged at a time: a walk over a whole store holds only what it admits.
FETCH_CHUNK = 1000

#: What each source said of the memories it listed: source name -> memory id -> raw score.
Raw = Mapping[str, Mapping[str, float]]


class Reads(Protocol):
    """The one store read the engine itself makes; sources bring the rest."""

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> list[MemoryRecord]: ...


@dataclass(frozen=True, slots=True)
class Source:
    """One ranked list of the store, best first: ``read(n)`` gives at most ``n`` hits.

    A source that ``grows`` must list every memory the strategy can admit (a ``most_*`` list or a
    time range under the strategy's filters): its ending early is what says all were seen. ``most``
    caps how far it grows; reaching it ends the reading without claiming all were seen.
    """

    name: str
    read: Callable[[int], list[Hit]]
    n: int
    grows: bool = False
    most: int | None = None


@dataclass(frozen=True, slots=True)
class Weighting:
    """A score from named signals: ``gate * (base + sum(weight * signal))``, or the sum alone
    without a ``gate``. A gate makes the other signals scale a relevance instead of adding to it,
    so they can reorder matches but never lift a memory that does not match."""

    weights: Mapping[str, float]
    gate: str | None = None
    base: float = 0.0

    def score(self, signals: Mapping[str, float]) -> float:
        total = self.base
        for name, weight in self.weights.items():
            total += weight * signals[name]
        return total if self.gate is None else signals[self.gate] * total

    def reported(self) -> dict[str, float]:
        """The weights as an explanation shows them (the gate counts 1: it scales the rest)."""
        out = {self.gate: 1.0} if self.gate is not None else {}
        out.update(self.weights)
        return out


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a strategy found in one memory: its signals and the reasons to show for it."""

    signals: dict[str, float]
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Strategy:
    """A preset of the engine (see the module doc).

    ``judge`` reads one fetched memory (and what the sources said of it) and returns its evidence,
    or None when the strategy does not admit it (no keyword matched, below a similarity floor).
    ``extra`` reads more per batch of fetched memories (their vectors' cosines, say) into ``Raw``
    under its own names. ``order`` is ``"score"`` (best first, ties by id as ``ties`` says) or
    ``"source"`` (the sources' own order; the score only reports). ``pick`` chooses from the ordered
    answer instead of the ``limit`` cut (document lookup chooses one version by its own rule).
    ``floor``: scores below it are never kept, so a bound below it ends the reading too.
    """

    name: str
    sources: tuple[Source, ...]
    filters: Filters
    judge: Callable[[MemoryRecord, Raw], Evidence | None]
    weighting: Weighting
    limit: int
    order: Literal["score", "source"] = "score"
    ties: Literal["smaller_id", "larger_id"] = "smaller_id"
    floor: float = float("-inf")
    bound: Callable[[Mapping[str, list[Hit]]], float] | None = None
    extra: Callable[[list[MemoryRecord]], Raw] | None = None
    pick: Callable[[list[Scored]], list[Scored]] | None = None


def run(store: Reads, user_id: str, strategy: Strategy) -> list[Scored]:
    """The strategy's answer for ``user_id``: scored, explained, ordered and cut (or picked)."""
    sizes = {source.name: _capped(source, max(1, source.n)) for source in strategy.sources}
    lists: dict[str, list[Hit]] = {}
    raw: dict[str, dict[str, float]] = {source.name: {} for source in strategy.sources}
    union: dict[str, None] = {}  # every memory listed so far, in the order first listed
    judged: dict[str, Scored | None] = {}  # each memory is read and judged once, when a source first lists it
    while True:
        fresh: list[str] = []
        for source in strategy.sources:
            if source.name not in lists or source.grows:
                hits = lists[source.name] = source.read(sizes[source.name])
                scores = raw[source.name]
                for memory_id, score in hits:
                    if memory_id not in scores:
                        scores[memory_id] = score
                        if memory_id not in union:
                            union[memory_id] = None
                            fresh.append(memory_id)
        for start in range(0, len(fresh), FETCH_CHUNK):  # a long walk holds only what it admits
            chunk = fresh[start : start + FETCH_CHUNK]
            judged.update(dict.fromkeys(chunk))
            judged.update(_judge(strategy, store.fetch(user_id, chunk), user_id, raw))
        ordered = _order(strategy, [s for i in union if (s := judged[i]) is not None])
        growing = [s for s in strategy.sources if s.grows]
        # A growing source that ended listed every memory the strategy can admit: all were seen.
        seen_all = any(len(lists[s.name]) < sizes[s.name] for s in growing)
        further = [s for s in growing if s.most is None or sizes[s.name] < s.most]
        if not further or seen_all or _enough(strategy, ordered, lists):
            return strategy.pick(ordered) if strategy.pick is not None else ordered[: strategy.limit]
        for source in further:
            sizes[source.name] = _capped(source, sizes[source.name] * GROWTH)


def _capped(source: Source, n: int) -> int:
    return n if source.most is None else min(n, max(1, source.most))


def _judge(
    strategy: Strategy, records: list[MemoryRecord], user_id: str, found: Raw
) -> dict[str, Scored | None]:
    # The filters are checked again after fetch: a store bug must not leak another user's or an
    # excluded memory. Without ``extra`` they are checked after the judge, which rejects most of a
    # long walk's memories (no keyword matched) at less than the filters' cost; a memory's evidence
    # is only ever kept once it passed them.
    def admits(record: MemoryRecord) -> bool:
        return record.user_id == user_id and matches(record, strategy.filters)

    raw: dict[str, Mapping[str, float]] = dict(found)
    extra = strategy.extra
    checked = extra is not None
    if extra is not None:
        records = [r for r in records if admits(r)]  # ``extra`` reads per memory: only the admitted
        if records:
            raw.update(extra(records))
    weights = strategy.weighting.reported()
    out: dict[str, Scored | None] = {}
    for record in records:
        evidence = strategy.judge(record, raw)
        if evidence is None or not (checked or admits(record)):
            continue
        score = strategy.weighting.score(evidence.signals)
        if score >= strategy.floor:
            out[record.id] = Scored(record=record, score=score, signals=evidence.signals, weights=weights,
                                    reasons=evidence.reasons)
    return out


def _order(strategy: Strategy, items: list[Scored]) -> list[Scored]:
    """``items`` (in the sources' order) as the strategy orders them."""
    if strategy.order == "source":
        return items
    if strategy.ties == "larger_id":
        items.sort(key=lambda s: s.record.id, reverse=True)
        items.sort(key=lambda s: -s.score)  # stable: equal scores keep the larger id first
    else:
        items.sort(key=lambda s: (-s.score, s.record.id))
    return items


def _enough(strategy: Strategy, ordered: list[Scored], lists: Mapping[str, list[Hit]]) -> bool:
    """Whether reading further could not change the answer."""
    if strategy.pick is not None:
        return False  # a pick may choose any memory: every one must be seen
    if strategy.order == "source":
        return len(ordered) >= strategy.limit  # whatever comes later is ordered after these
    if strategy.bound is None:
        return False
    best_unseen = strategy.bound(lists)
    if best_unseen < strategy.floor:
        return True
    # Strictly: an unseen memory scoring the same could still win the tie.
    return len(ordered) >= strategy.limit and ordered[strategy.limit - 1].score > best_unseen
