"""The entity-cost attack of the outside review (issue 12, item 2), under a retrieval deadline.

A key holder registers entities of 100 aliases each, every alias the same letters shuffled (so every
alias is as close to every query word as an alias can be), then asks long queries made of such
words, capitalized like names. Before entity matching was indexed, each retrieval spent about 18 s
of CPU in one stage, far past its deadline; later the first query after each write spent ~835 ms
re-reading 10,000 entities' alias lists.

The tests assert what bounds the cost (how much is read and indexed, that a deadline is enforced
inside entity matching, that the answer is a result or the TIMEOUT fallback) rather than wall-clock
times; the times go to ``bench/reliability.py``, which checks the worst against 2 x ``timeout_ms``.
"""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import DeadlineExceeded
from engram.ext import Embedder
from engram.ingest.entity_index import MAX_INDEX_NAMES, EntityIndex, EntityIndexes
from engram.retrieve import Retrieval
from engram.retrieve.understand import understand
from tests.reliability._workers import report, scale

ALIASES = 100
QUERY_CHARS = 2000
TIMEOUT_MS = 200
LETTERS = "abcdefghijkl"
NOW = datetime(2026, 1, 15, tzinfo=UTC)


def _shuffled(rng: random.Random) -> str:
    letters = list(LETTERS)
    rng.shuffle(letters)
    return "".join(letters)


def _query(rng: random.Random) -> str:
    """Exactly QUERY_CHARS characters (the default query_max_chars) of capitalized shuffled words."""
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < QUERY_CHARS:
        words.append(_shuffled(rng).capitalize())
    return " ".join(words)[:QUERY_CHARS]


def _attacker(memory: Memory, rng: random.Random, entities: int) -> float:
    """Store the attacker's notes and entities through the public API; returns seconds spent registering."""
    memory.add_many([{"user_id": "mallory", "content": f"Note {i}: " + " ".join(_shuffled(rng) for _ in range(12))}
                     for i in range(50)])
    started = time.perf_counter()
    for n in range(entities):
        memory.add_entity(f"thing:e{n}", user_id="mallory", name=_shuffled(rng).capitalize(),
                          aliases=[_shuffled(rng) for _ in range(ALIASES)])
    return time.perf_counter() - started


def _timed(memory: Memory, query: str, config: RetrievalConfig, user: str = "mallory") -> tuple[float, Retrieval]:
    started = time.perf_counter()
    result = memory.retrieve(query, user_id=user, config=config)
    return (time.perf_counter() - started) * 1000, result


def _code(result: Retrieval) -> str | None:
    error = result.metadata.error
    return error["code"] if error else None


def test_entity_alias_attack_stays_within_deadline(tmp_path: Path, embedder: Embedder) -> None:
    """100 entities x 100 aliases, a new 2,000-character query each time, no cache.

    Each query is also asked by a bystander with the same notes and no entities, right after: what
    the same retrieval costs without the attack (the real embedder's work on a 2,000-character
    query is most of it, and grows with the machine's load)."""
    rng = random.Random(12)
    retrievals = scale(20, 100)
    with Memory(tmp_path / "attack.db", embedder=embedder) as memory:
        register_s = _attacker(memory, rng, 100)
        memory.add_many([{"user_id": "bystander", "content": r.content} for r in memory.list(user_id="mallory")])
        # Loading the model (and its first run at the attack's input size) is set-up, outside the
        # deadline by design; the attack is what follows.
        embedder.embed_batch([_query(random.Random(0))])
        config = RetrievalConfig(timeout_ms=TIMEOUT_MS, cache_ttl=0)  # no cache: every retrieval pays
        indexes = memory.pipeline.entity_indexes
        builds = indexes.builds
        wall_ms: list[float] = []
        baseline_ms: list[float] = []
        understand_ms: list[float] = []
        codes: list[str | None] = []
        for _ in range(retrievals):
            query = _query(rng)  # a new query each time: no fuzzy answer is remembered from the last
            assert len(query) == QUERY_CHARS
            ms, result = _timed(memory, query, config)
            wall_ms.append(ms)
            codes.append(_code(result))
            baseline_ms.append(_timed(memory, query, config, "bystander")[0])
            # The entity matching alone (a timed-out result carries no stage times): the query again,
            # new to the index's fuzzy cache, against the index the retrieval used.
            index = EntityIndex(indexes.cached("mallory") or ())
            started = time.perf_counter()
            understand(query, now=NOW, known_entities=index)
            understand_ms.append((time.perf_counter() - started) * 1000)
    figures = {
        "entities": 100, "aliases_each": ALIASES, "query_chars": QUERY_CHARS, "timeout_ms": TIMEOUT_MS,
        "retrievals": retrievals, "worst_ms": round(max(wall_ms), 1), "p50_ms": round(statistics.median(wall_ms), 1),
        "timeouts": codes.count("TIMEOUT"), "other_errors": sum(c not in (None, "TIMEOUT") for c in codes),
        "register_s": round(register_s, 2), "no_entities_worst_ms": round(max(baseline_ms), 1),
        "no_entities_p50_ms": round(statistics.median(baseline_ms), 1),
        "worst_understand_ms": round(max(understand_ms), 1), "index_builds": indexes.builds - builds,
    }
    report("entity_alias_attack", figures)
    assert set(codes) <= {None, "TIMEOUT"}, codes
    # The table did not change while the queries ran: it was indexed once, however many queries.
    assert indexes.builds - builds == 1, figures


def test_entity_cost_dos_first_query_after_a_write_reads_only_the_indexed_aliases(tmp_path: Path) -> None:
    """10,000 entities x 100 aliases (2,000 under make test): the first query after a write used to
    decode all ~1,000,000 aliases and re-index them (~835 ms). Now it reads at most the names an
    index holds, and a write that leaves the entity table as it was re-indexes nothing."""
    rng = random.Random(2)
    entities = scale(2000, 10_000)
    with Memory(tmp_path / "attack.db", embedder=FakeEmbedder()) as memory:
        register_s = _attacker(memory, rng, entities)
        config = RetrievalConfig(timeout_ms=TIMEOUT_MS, cache_ttl=0)
        indexes = memory.pipeline.entity_indexes
        timings: dict[str, list[float]] = {"after_entity_write": [], "after_memory_write": [], "steady": []}
        codes: list[str | None] = []
        builds = indexes.builds
        rounds = scale(3, 10)
        for i in range(rounds):
            memory.add_entity(f"thing:e{i}", user_id="mallory", name=_shuffled(rng).capitalize(),
                              aliases=[_shuffled(rng) for _ in range(ALIASES)])
            for label in ("after_entity_write", "steady"):
                ms, result = _timed(memory, _query(rng), config)
                timings[label].append(ms)
                codes.append(_code(result))
            memory.add(f"Note {i} after the attack", user_id="mallory")
            ms, result = _timed(memory, _query(rng), config)
            timings["after_memory_write"].append(ms)
            codes.append(_code(result))
        loaded = indexes.cached("mallory")
        assert loaded is not None
        read = len(loaded) + sum(len(e.aliases) for e in loaded)
        figures = {
            "entities": entities, "aliases_each": ALIASES, "aliases_stored": entities * ALIASES,
            "names_and_aliases_read": read, "timeout_ms": TIMEOUT_MS, "retrievals": len(codes),
            "register_s": round(register_s, 1), "timeouts": codes.count("TIMEOUT"),
            "other_errors": sum(c not in (None, "TIMEOUT") for c in codes),
            "index_builds": indexes.builds - builds,
            **{f"worst_{k}_ms": round(max(v), 1) for k, v in timings.items()},
            "worst_ms": round(max(max(v) for v in timings.values()), 1),
        }
        report("entity_cost_first_query_after_write", figures)
        assert read <= MAX_INDEX_NAMES < entities * ALIASES, figures
        assert set(codes) <= {None, "TIMEOUT"}, codes
        # Each entity write is indexed once (by the add that follows or the next query); memory writes add none.
        assert indexes.builds - builds == rounds, figures


def _passed() -> float:
    return time.perf_counter() - 1.0


def test_entity_cost_dos_deadline_is_enforced_inside_entity_matching(tmp_path: Path) -> None:
    """Enforced within the understand stage, not only after it: a retrieval waits for the entity
    table to be read and indexed only until its deadline, and the fuzzy matching checks it too. The
    reading goes on after a timeout, so the next retrieval finds it done rather than starting over."""
    rng = random.Random(3)
    with Memory(tmp_path / "attack.db", embedder=FakeEmbedder()) as memory:
        _attacker(memory, rng, 2000)  # reading and indexing take tens of ms: far more than no time at all
        store = memory.store
        indexes = EntityIndexes()
        with pytest.raises(DeadlineExceeded, match="reading and indexing entities"):
            indexes.get(store, "mallory", "v1", _passed())
        index = indexes.get(store, "mallory", "v1")  # the same read, finished: not started again
        assert (indexes.loads, indexes.builds) == (1, 1)
        assert indexes.get(store, "mallory", "v1", _passed()) is index  # ready: no deadline to miss

        query = _query(rng)
        with pytest.raises(DeadlineExceeded, match="matching entity names"):
            understand(query, now=NOW, known_entities=index, deadline=_passed())
        assert understand(query, now=NOW, known_entities=index, deadline=None).entities

        # Through the pipeline: the fallback of seed 001, then the next retrieval goes on from there.
        memory.add_entity("thing:late", user_id="mallory", name="Latecomer")
        loads = memory.pipeline.entity_indexes.loads
        _, result = _timed(memory, query, RetrievalConfig(timeout_ms=1.0, cache_ttl=0))
        assert _code(result) == "TIMEOUT" and result.memories == ()
        _, result = _timed(memory, query, RetrievalConfig(timeout_ms=60_000, cache_ttl=0))
        assert _code(result) is None
        assert memory.pipeline.entity_indexes.loads == loads + 1  # read once, by the retrieval that timed out
