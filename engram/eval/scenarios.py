"""Everyday questions over a realistic agent memory: what a user gets with the defaults, per category.

The LongMemEval harness (:mod:`engram.eval.runner`) scores raw rankings of chat turns. This one asks
the questions an assistant's users actually ask ("What did Bob ask last week?", "What are Acme's
payment terms?") of one memory as an agent builds it: messages of several speakers, facts that get
superseded, episodes, procedures, summaries, near duplicates and distractors, all in one store.

``engram`` is ``Memory.retrieve(question, user_id=..., config=RetrievalConfig(top_k=k), now=NOW)``:
exactly the defaults apart from ``top_k`` (clipping, token budget, score floor, interleaving all on),
plus the question's own filters where it has some. Three baselines rank the same store:

- ``bm25``: ``store.keyword_search`` alone;
- ``dense``: ``store.vector_search`` with the question's embedding alone;
- ``rrf``: reciprocal rank fusion (k=60) of the two, each taken to depth ``max(k, 50)``.

The baselines get the question's filters too (default: active memories only, as for ``engram``).
Per question: recall@k is the share of gold memories in the top k, hit@1 whether the first result is
gold (for ``engram``, the first entry as returned, after interleaving and the token budget, which puts
summaries first). Both are averaged per category and over all questions.

The labelled set itself lives in ``tests/quality/scenario_data.py`` (memories carry a stable key in
``metadata["key"]``; questions name their gold by key). ``python -m engram.eval.scenarios`` prints the
table from a checkout.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engram.config import RetrievalConfig
from engram.eval.runner import RRF_K, reciprocal_rank_fusion
from engram.ext import as_filters
from engram.ingest.embed import embed_texts
from engram.retrieve.types import MemoryEntry

if TYPE_CHECKING:
    from engram.memory import Memory

__all__ = [
    "BASELINE_DEPTH",
    "KEY",
    "SYSTEMS",
    "CategoryScore",
    "QuestionResult",
    "Scenario",
    "ScenarioEntity",
    "ScenarioMemory",
    "ScenarioQuestion",
    "ScenarioReport",
    "load_into",
    "load_scenario",
    "run_scenarios",
]

SYSTEMS = ("engram", "bm25", "dense", "rrf")
#: The metadata field holding a memory's stable key.
KEY = "key"

#: How deep each baseline list goes before fusion (and at least k).
BASELINE_DEPTH = 50
DATA_MODULE = "tests.quality.scenario_data"


@dataclass(frozen=True, slots=True)
class ScenarioMemory:
    """One memory of the fixture; ``key`` is stable across runs (ids are generated at load time)."""

    key: str
    user_id: str
    content: str
    created_at: datetime
    kind: str = "message"
    role: str | None = None
    session_id: str | None = None
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    importance: float | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    trigger: str | None = None
    action: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def item(self) -> dict[str, Any]:
        """What ``Memory.add_many`` takes for this memory, the key stored in its metadata."""
        out: dict[str, Any] = {
            "content": self.content,
            "user_id": self.user_id,
            "kind": self.kind,
            "created_at": self.created_at,
            "metadata": {**self.metadata, KEY: self.key},
        }
        optional: dict[str, Any] = {
            "role": self.role, "session_id": self.session_id, "importance": self.importance,
            "subject": self.subject, "predicate": self.predicate, "object": self.object,
            "trigger": self.trigger, "action": self.action,
        }
        out.update({name: value for name, value in optional.items() if value is not None})
        if self.tags:
            out["tags"] = list(self.tags)
        if self.entities:
            out["entities"] = list(self.entities)
        return out


@dataclass(frozen=True, slots=True)
class ScenarioEntity:
    """A canonical entity the agent registered (``Memory.add_entity``)."""

    user_id: str
    entity_id: str
    type: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ScenarioQuestion:
    """A question with 1-3 gold memory keys; ``filters`` are passed to ``retrieve`` as given."""

    qid: str
    user_id: str
    category: str
    text: str
    gold: tuple[str, ...]
    filters: Mapping[str, Any] | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Scenario:
    now: datetime
    memories: tuple[ScenarioMemory, ...]
    questions: tuple[ScenarioQuestion, ...]
    entities: tuple[ScenarioEntity, ...] = ()
    #: Category order for reports; categories not listed follow alphabetically.
    categories: tuple[str, ...] = ()

    def category_order(self) -> list[str]:
        present = {q.category for q in self.questions}
        listed = [c for c in self.categories if c in present]
        return listed + sorted(present - set(listed))


@dataclass(frozen=True, slots=True)
class QuestionResult:
    question: ScenarioQuestion
    #: Keys best first, per system (``engram`` in the order ``retrieve`` returned them).
    ranked: Mapping[str, tuple[str, ...]]
    recall: Mapping[str, float]
    hit1: Mapping[str, float]
    #: What ``retrieve`` returned, to check the text a user gets back.
    entries: tuple[MemoryEntry, ...]
    #: Keys of the memories the question's filters match (empty without filters).
    filter_matches: tuple[str, ...] = ()
    error: Mapping[str, str] | None = None

    def entry(self, key: str) -> MemoryEntry | None:
        """The returned entry of the memory with this key, if ``engram`` returned it."""
        for entry in self.entries:
            if entry.record is not None and entry.record.metadata.get(KEY) == key:
                return entry
        return None

    def rank(self, key: str, system: str = "engram") -> int | None:
        """1-based rank of ``key`` in a system's ranking, None if absent."""
        ranked = self.ranked[system]
        return ranked.index(key) + 1 if key in ranked else None


@dataclass(frozen=True, slots=True)
class CategoryScore:
    n: int
    recall: float
    hit1: float


@dataclass(frozen=True, slots=True)
class ScenarioReport:
    k: int
    systems: tuple[str, ...]
    categories: tuple[str, ...]
    results: tuple[QuestionResult, ...]
    embedder: str = ""

    def result(self, qid: str) -> QuestionResult:
        for item in self.results:
            if item.question.qid == qid:
                return item
        raise KeyError(qid)

    def _score(self, items: Sequence[QuestionResult], system: str) -> CategoryScore:
        if not items:
            return CategoryScore(0, 0.0, 0.0)
        return CategoryScore(
            len(items),
            sum(r.recall[system] for r in items) / len(items),
            sum(r.hit1[system] for r in items) / len(items),
        )

    def overall(self, system: str = "engram") -> CategoryScore:
        return self._score(self.results, system)

    def by_category(self, system: str = "engram") -> dict[str, CategoryScore]:
        return {
            c: self._score([r for r in self.results if r.question.category == c], system) for c in self.categories
        }

    def summary(self) -> dict[str, Any]:
        """JSON-ready: per system, overall and per category n, recall@k and hit@1."""
        def row(score: CategoryScore) -> dict[str, Any]:
            return {"n": score.n, f"recall@{self.k}": round(score.recall, 4), "hit@1": round(score.hit1, 4)}

        return {
            "k": self.k,
            "embedder": self.embedder,
            "systems": {
                s: {"overall": row(self.overall(s)), "by_category": {c: row(v) for c, v in self.by_category(s).items()}}
                for s in self.systems
            },
        }

    def table(self) -> str:
        """Plain-text table: a row per category (and overall), recall@k and hit@1 per system."""
        head = ["category", "n"] + [f"{s} {m}" for s in self.systems for m in (f"R@{self.k}", "H@1")]
        rows: list[list[str]] = []
        scores = {s: self.by_category(s) for s in self.systems}
        for category in self.categories:
            cells = [category, str(scores[self.systems[0]][category].n)]
            for s in self.systems:
                cells += [f"{scores[s][category].recall:.2f}", f"{scores[s][category].hit1:.2f}"]
            rows.append(cells)
        cells = ["overall", str(len(self.results))]
        for s in self.systems:
            total = self.overall(s)
            cells += [f"{total.recall:.2f}", f"{total.hit1:.2f}"]
        rows.append(cells)
        widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]

        def line(cells: Sequence[str]) -> str:
            pairs = enumerate(zip(cells, widths, strict=True))
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs)

        rule = "-" * len(line(head))
        return "\n".join([line(head), rule, *(line(r) for r in rows[:-1]), rule, line(rows[-1])])

    def misses(self, system: str = "engram") -> str:
        """One line per question whose gold is not all in the top k: the ranks gold got."""
        out = []
        for r in self.results:
            if r.recall[system] < 1.0:
                ranks = ", ".join(f"{g}={r.rank(g, system) or '-'}" for g in r.question.gold)
                top = r.ranked[system][0] if r.ranked[system] else "-"
                out.append(f"[{r.question.category}] {r.question.qid}: {r.question.text!r} gold {ranks}; top {top}")
        return "\n".join(out)


def load_scenario() -> Scenario:
    """The labelled set in ``tests/quality/scenario_data.py`` (needs a checkout: tests are not packaged)."""
    try:
        module = importlib.import_module(DATA_MODULE)
    except ImportError as exc:
        raise RuntimeError(
            f"cannot import {DATA_MODULE}: run from the root of an Engram checkout ({exc})"
        ) from exc
    scenario = getattr(module, "SCENARIO", None)
    if not isinstance(scenario, Scenario):
        raise RuntimeError(f"{DATA_MODULE}.SCENARIO is not a Scenario")
    return scenario


def load_into(memory: Memory, scenario: Scenario) -> dict[str, str]:
    """Register the entities and add every memory in one batch; returns memory id -> key."""
    for entity in scenario.entities:
        memory.add_entity(
            entity.entity_id, user_id=entity.user_id, type=entity.type, name=entity.name, aliases=entity.aliases
        )
    records = memory.add_many([m.item() for m in scenario.memories])
    return {r.id: m.key for r, m in zip(records, scenario.memories, strict=True)}


def _keys(ids: Sequence[str], key_of: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(key_of[i] for i in ids if i in key_of))


def _ask(memory: Memory, question: ScenarioQuestion, key_of: Mapping[str, str], now: datetime, k: int,
         systems: Sequence[str]) -> QuestionResult:
    filters = as_filters(question.filters)
    ranked: dict[str, tuple[str, ...]] = {}
    entries: tuple[MemoryEntry, ...] = ()
    error: Mapping[str, str] | None = None
    if "engram" in systems:
        result = memory.retrieve(
            question.text, user_id=question.user_id, config=RetrievalConfig(top_k=k), now=now,
            filters=question.filters,
        )
        entries = result.memories
        error = result.metadata.error
        ranked["engram"] = _keys(result.ids(), key_of)
    depth = max(k, BASELINE_DEPTH)
    store = memory.store
    bm25 = [i for i, _ in store.keyword_search(question.user_id, question.text, depth, filters)]
    query_vec = embed_texts(memory.embedder, [question.text], as_query=True)[0]
    dense = [i for i, _ in store.vector_search(question.user_id, query_vec, depth, filters)]
    if "bm25" in systems:
        ranked["bm25"] = _keys(bm25, key_of)
    if "dense" in systems:
        ranked["dense"] = _keys(dense, key_of)
    if "rrf" in systems:
        ranked["rrf"] = _keys(reciprocal_rank_fusion([bm25, dense], RRF_K), key_of)
    gold = set(question.gold)
    recall = {s: len(gold & set(r[:k])) / len(gold) for s, r in ranked.items()}
    hit1 = {s: 1.0 if r and r[0] in gold else 0.0 for s, r in ranked.items()}
    matched: tuple[str, ...] = ()
    if question.filters is not None:
        rows = memory.list(user_id=question.user_id, filters=filters, limit=1000)
        matched = tuple(key_of[r.id] for r in rows if r.id in key_of)
    return QuestionResult(question, ranked, recall, hit1, entries, matched, error)


def run_scenarios(
    memory_factory: Callable[[], Memory],
    k: int = 10,
    *,
    scenario: Scenario | None = None,
    systems: Sequence[str] = SYSTEMS,
) -> ScenarioReport:
    """Load the scenario into a fresh memory from ``memory_factory`` and score every question.

    The memory is closed afterwards. ``scenario`` defaults to :func:`load_scenario`.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise ValueError(f"systems must be among {', '.join(SYSTEMS)}, got {list(systems)}")
    scenario = scenario or load_scenario()
    memory = memory_factory()
    try:
        key_of = load_into(memory, scenario)
        results = tuple(_ask(memory, q, key_of, scenario.now, k, systems) for q in scenario.questions)
        embedder = memory.embedder.model_id
    finally:
        memory.close()
        memory.pipeline.executor.shutdown(wait=False)
    return ScenarioReport(
        k=k, systems=tuple(systems), categories=tuple(scenario.category_order()), results=results,
        embedder=embedder,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engram.eval.scenarios",
        description="Everyday questions over a realistic agent memory: engram vs bm25, dense and rrf.",
    )
    parser.add_argument("--k", type=int, default=10, help="cutoff for recall (top_k of retrieve); default 10")
    parser.add_argument("--db", default=":memory:", help="a new file to build the store in (default: in memory)")
    parser.add_argument("--misses", action="store_true", help="also list the questions engram misses")
    parser.add_argument("--json", dest="json_path", help="write the summary as JSON to this file")
    args = parser.parse_args(argv)

    from engram.memory import Memory

    report = run_scenarios(lambda: Memory(args.db), k=args.k)
    print(f"{len(report.results)} questions, embedder {report.embedder}, recall@{report.k} and hit@1")
    print(report.table())
    if args.misses:
        print()
        print(report.misses())
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            json.dump(report.summary(), handle, indent=2)
    return 0


if __name__ == "__main__":
    # ``python -m`` runs this file as ``__main__``, whose classes are not the ones the fixture imports.
    from engram.eval import scenarios

    sys.exit(scenarios.main())
