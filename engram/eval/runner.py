"""Run labelled cases through Engram and two baselines; score raw rankings; summarise.

Each haystack gets a fresh in-memory store, so no question sees another's. Four systems rank the
same index for the same question:

- ``engram``: ``Memory.retrieve``. In ``ranked`` mode as a raw ranking (no sentence clipping, no token
  budget, no score floor, no result cache, score-ordered rather than interleaved) so rank metrics
  measure ranking alone; in ``defaults`` mode exactly as a user calls it, ``RetrievalConfig(top_k=k)``;
- ``bm25``: ``store.keyword_search`` alone;
- ``dense``: ``store.vector_search`` with the question's embedding alone;
- ``rrf``: reciprocal rank fusion (k = 60) of the two, the usual hybrid baseline.

Levels: with turn granularity every turn is a document and a ranking is scored at turn level and,
mapping each turn to its session (first occurrence keeps the rank), at session level. With session
granularity a session's indexed turns are joined into one document and scored at session level only.
A question whose gold is not indexed at some level (an answer only the assistant gave, with user
turns indexed) has no score there: it is left out of that level's means and counted as excluded.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engram.config import RetrievalConfig
from engram.eval import EvalCase, EvalDoc
from engram.eval.metrics import dedupe, ndcg_any_at_k, recall_all_at_k, recall_any_at_k, recall_at_k
from engram.ext import Embedder
from engram.ingest.embed import embed_texts
from engram.model import Filters

__all__ = ["FIXED_CONFIG", "SYSTEMS", "retrieval_config", "run"]

SYSTEMS = ("engram", "bm25", "dense", "rrf")
MODES = ("ranked", "defaults")
#: The fusion baseline: reciprocal rank fusion of the BM25 and dense lists, each this deep.
RRF_K = 60
RRF_POOL = 100
USER = "eval"
#: What the protocol pins: rank metrics need the whole raw ranking, uncached.
#: Interleaving is pinned to score order too: the retrieval policy's alternate interleave reorders the chosen
#: memories for the prompt (alternating the best-scored and the newest), a presentation step that a
#: rank metric would otherwise count as a ranking.
FIXED_CONFIG: Mapping[str, Any] = {
    "clip_sentences": None, "max_tokens": None, "min_score": 0.0, "cache_ttl": 0.0, "interleave": "score_first",
}
METRICS: tuple[tuple[str, Callable[[Sequence[str], frozenset[str], int], float]], ...] = (
    ("recall_all", recall_all_at_k),
    ("recall_any", recall_any_at_k),
    ("ndcg_any", ndcg_any_at_k),
    ("recall", recall_at_k),
)


def retrieval_config(depth: int, overrides: Mapping[str, Any] | None = None) -> RetrievalConfig:
    """The default pipeline as a raw ranking of ``depth`` results, plus the caller's other settings."""
    overrides = dict(overrides or {})
    pinned = set(FIXED_CONFIG) | {"top_k"}
    for name in overrides:
        if name in pinned:
            raise ValueError(f"{name} is fixed by the evaluation protocol")
        if name not in RetrievalConfig.field_names():
            raise ValueError(f"unknown retrieval setting {name!r}; known: {', '.join(RetrievalConfig.field_names())}")
    return RetrievalConfig(**{**overrides, **FIXED_CONFIG, "top_k": depth})


@dataclass(frozen=True, slots=True)
class _Index:
    """What one case indexes, and its gold restricted to what is indexed."""

    units: tuple[EvalDoc, ...]
    gold_units: frozenset[str]
    gold_sessions: frozenset[str]

    def session_of(self) -> dict[str, str]:
        return {u.doc_id: u.session_id for u in self.units}


def _index(case: EvalCase, granularity: str, roles: frozenset[str] | None) -> _Index:
    docs = [d for d in case.documents if roles is None or d.role in roles]
    if granularity == "session":
        groups: list[list[EvalDoc]] = []
        for doc in docs:
            # Consecutive turns of one session form one document; a session repeated later in the
            # haystack (a new occurrence at another date) becomes another document of the same session.
            if groups and groups[-1][-1].session_id == doc.session_id:
                groups[-1].append(doc)
            else:
                groups.append([doc])
        docs = [
            EvalDoc(f"{g[0].session_id}@{n}", g[0].session_id, "session", " ".join(d.content for d in g),
                    g[0].created_at)
            for n, g in enumerate(groups)
        ]
        gold_units: frozenset[str] = frozenset()
    else:
        gold_units = case.gold_turns & {d.doc_id for d in docs}
    sessions = {d.session_id for d in docs}
    return _Index(tuple(docs), gold_units, case.gold_sessions & sessions)


def _score(ranked: Mapping[int, Sequence[str]], gold: frozenset[str], ks: Sequence[int]) -> dict[str, float] | None:
    """Each metric at each cutoff k, from the ranking made for that k."""
    if not gold:
        return None
    return {f"{name}@{k}": fn(ranked[k], gold, k) for k in ks for name, fn in METRICS}


def _aggregate(rows: Sequence[Mapping[str, float] | None]) -> dict[str, Any]:
    scored = [r for r in rows if r is not None]
    out: dict[str, Any] = {"n": len(scored), "excluded": len(rows) - len(scored)}
    if scored:
        for key in scored[0]:
            out[key] = sum(r[key] for r in scored) / len(scored)
    return out


def _summary(questions: Sequence[Mapping[str, Any]], systems: Sequence[str], levels: Sequence[str]) -> dict[str, Any]:
    types = sorted({q["question_type"] for q in questions})
    out: dict[str, Any] = {}
    for system in systems:
        out[system] = {}
        for level in levels:
            rows = [q["systems"][system]["metrics"][level] for q in questions]
            by_type = {
                t: _aggregate([q["systems"][system]["metrics"][level] for q in questions if q["question_type"] == t])
                for t in types
            }
            out[system][level] = {"overall": _aggregate(rows), "by_type": by_type}
    return out


class _Haystack:
    """One case's index in a fresh in-memory store; cases that share a haystack share it."""

    def __init__(self, index: _Index, embedder: Embedder, config: RetrievalConfig) -> None:
        from engram.memory import Memory
        from engram.stores.sqlite.store import SQLiteStore

        self.index = index
        self.embedder = embedder
        self.store = SQLiteStore(":memory:")
        self.memory = Memory(store=self.store, embedder=embedder, config=config)
        started = time.perf_counter()
        records = self.memory.add_many(
            {
                "content": unit.content,
                "user_id": USER,
                "kind": "episode" if unit.role == "session" else "message",
                "role": None if unit.role == "session" else unit.role,
                "session_id": unit.session_id,
                "created_at": unit.created_at,
                "metadata": {"session_doc_id" if unit.role == "session" else "turn_id": unit.doc_id},
            }
            for unit in index.units
        )
        self.ingest_s = time.perf_counter() - started
        self.unit_of = {r.id: u.doc_id for r, u in zip(records, index.units, strict=True)}

    def _units(self, ids: Iterable[str]) -> list[str]:
        return [self.unit_of[i] for i in ids if i in self.unit_of]

    def rank(self, case: EvalCase, system: str, depth: int, mode: str, ks: Sequence[int],
             errors: dict[str, Any]) -> dict[int, list[str]]:
        """Unit ids best first, per cutoff: one list for every k, except in defaults mode where each
        k is its own ``retrieve(top_k=k)`` call, scored as the set a user receives."""
        if system == "engram":
            if mode == "defaults":
                out = {}
                for k in ks:
                    result = self.memory.retrieve(
                        case.question, user_id=USER, config=RetrievalConfig(top_k=k), now=case.now
                    )
                    if result.metadata.error is not None:
                        errors[system] = dict(result.metadata.error)
                    out[k] = self._units(result.ids())
                return out
            result = self.memory.retrieve(case.question, user_id=USER, config=self.memory.config, now=case.now)
            if result.metadata.error is not None:
                errors[system] = dict(result.metadata.error)
            return {k: self._units(result.ids())[:depth] for k in ks}
        pool = max(depth, RRF_POOL)
        keyword = dense = None
        if system in ("bm25", "rrf"):
            keyword = [i for i, _ in self.store.keyword_search(USER, case.question, pool, Filters())]
        if system in ("dense", "rrf"):
            query = embed_texts(self.embedder, [case.question], as_query=True)[0]
            dense = [i for i, _ in self.store.vector_search(USER, query, pool, Filters())]
        if system == "bm25" and keyword is not None:
            ranked = keyword
        elif system == "dense" and dense is not None:
            ranked = dense
        elif system == "rrf" and keyword is not None and dense is not None:
            ranked = reciprocal_rank_fusion([keyword, dense], RRF_K)
        else:
            raise ValueError(f"unknown system {system!r}; known: {', '.join(SYSTEMS)}")
        units = self._units(ranked)[:depth]
        return {k: units for k in ks}

    def close(self) -> None:
        self.memory.close()
        # Each Memory owns a small thread pool; without this, ~100 cases would leave ~200 idle threads.
        self.memory.pipeline.executor.shutdown(wait=False)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int) -> list[str]:
    """Ids by the sum of 1 / (k + rank) over the rankings that hold them (Cormack et al., 2009); ties by id."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for position, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + position)
    return sorted(scores, key=lambda item: (-scores[item], item))


def run(
    cases: Iterable[EvalCase],
    embedder: Embedder,
    *,
    systems: Sequence[str] = SYSTEMS,
    k: Sequence[int] | None = None,
    session_k: Sequence[int] = (5, 10),
    granularity: str = "turn",
    index_roles: Iterable[str] | None = ("user",),
    overrides: Mapping[str, Any] | None = None,
    mode: str = "ranked",
    on_case: Callable[[int, EvalCase], None] | None = None,
) -> dict[str, Any]:
    """Score every case for every system; the report is JSON-ready (summary plus per-question rows).

    ``k`` are the cutoffs at the indexed unit's level (default 5, 10, 50 for turns; 5, 10 for
    sessions); ``session_k`` are the session-level cutoffs derived from a turn ranking.
    ``index_roles=None`` indexes every role. ``mode="ranked"`` scores Engram's raw ranking (no clip,
    budget, floor or cache); ``mode="defaults"`` calls ``retrieve(q, config=RetrievalConfig(top_k=k))``
    for every k, exactly as a user does, and scores the k memories it returns as a set.
    Consecutive cases that share their documents (one LoCoMo conversation) share one index.
    """
    if granularity not in ("turn", "session"):
        raise ValueError(f"granularity must be turn or session, got {granularity!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise ValueError(f"systems must be among {', '.join(SYSTEMS)}, got {list(systems)}")
    ks = tuple(sorted(set(k or ((5, 10, 50) if granularity == "turn" else (5, 10)))))
    sks = tuple(sorted(set(session_k))) if granularity == "turn" else ()
    if any(x < 1 for x in (*ks, *sks)):
        raise ValueError("every k must be >= 1")
    depth = max((*ks, *sks))
    config = retrieval_config(depth, overrides)
    roles = frozenset(index_roles) if index_roles is not None else None
    levels = ("turn", "session") if granularity == "turn" else ("session",)
    latency: dict[str, list[float]] = {s: [] for s in systems}
    questions: list[dict[str, Any]] = []
    ingest_total = 0.0
    started = time.perf_counter()
    haystack: _Haystack | None = None
    shared: tuple[EvalDoc, ...] | None = None
    try:
        for number, case in enumerate(cases):
            if on_case is not None:
                on_case(number, case)
            index = _index(case, granularity, roles)
            if haystack is None or case.documents is not shared:
                if haystack is not None:
                    haystack.close()
                haystack = _Haystack(index, embedder, config)
                shared = case.documents
                ingest_total += haystack.ingest_s
            session_of = index.session_of()
            per_system: dict[str, Any] = {}
            errors: dict[str, Any] = {}
            for system in systems:
                t0 = time.perf_counter()
                cut = ks if granularity == "session" else tuple(sorted({*ks, depth}))
                ranked = haystack.rank(case, system, depth, mode, cut, errors)
                latency[system].append((time.perf_counter() - t0) * 1000 / (len(cut) if mode == "defaults"
                                                                             and system == "engram" else 1))
                # Sessions come from the deepest turn list, in its order.
                sessions = dedupe(session_of[u] for u in ranked[depth])
                if granularity == "turn":
                    metrics = {
                        "turn": _score(ranked, index.gold_units, ks),
                        "session": _score({x: sessions for x in sks}, index.gold_sessions, sks),
                    }
                else:
                    metrics = {"session": _score({x: dedupe(session_of[u] for u in ranked[x]) for x in ks},
                                                 index.gold_sessions, ks)}
                per_system[system] = {"metrics": metrics, "ranked": ranked[depth]}
                if system in errors:
                    per_system[system]["error"] = errors[system]
            questions.append(
                {
                    "question_id": case.question_id,
                    "question_type": case.question_type,
                    "question": case.question,
                    "indexed": len(index.units),
                    "gold_turns": sorted(index.gold_units),
                    "gold_sessions": sorted(index.gold_sessions),
                    "systems": per_system,
                }
            )
    finally:
        if haystack is not None:
            haystack.close()
    wall = time.perf_counter() - started
    return {
        "protocol": {
            "granularity": granularity,
            "index_roles": sorted(roles) if roles is not None else "all",
            "k": list(ks),
            "session_k": list(sks),
            "levels": list(levels),
            "systems": list(systems),
            "mode": mode,
            "depth": depth,
            "embedder": embedder.model_id,
            "config": ({name: _jsonable(getattr(config, name)) for name in RetrievalConfig.field_names()}
                       if mode == "ranked" else "RetrievalConfig(top_k=k)"),
        },
        "summary": _summary(questions, systems, levels),
        "timing": {
            "wall_s": round(wall, 2),
            "questions": len(questions),
            "ingest_s": round(ingest_total, 2),
            "retrieve_ms": {
                s: {"mean": round(statistics.fmean(v), 2), "p50": round(statistics.median(v), 2)}
                for s, v in latency.items()
                if v
            },
        },
        "questions": questions,
    }


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {name: _jsonable(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)
