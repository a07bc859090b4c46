"""Ranking reads the candidates the sources rank best together, not every one they found."""

from __future__ import annotations

import random

from engram.config import RetrievalConfig
from engram.retrieve.candidates import CandidateSet, ranked_limit
from engram.retrieve.select import POOL_TOP_K
from engram.retrieve.signals import reciprocal_rank


def test_best_keeps_what_the_sources_rank_best_together_in_found_order() -> None:
    found = CandidateSet()
    found.add("semantic", [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)])
    found.add("keyword", [("d", 3.0), ("e", 2.0), ("b", 1.0)])
    # b and d are found by both sources: they outrank everything found once.
    assert found.best(2) == ["b", "d"]
    assert found.best(3) == ["a", "b", "d"]
    assert found.best(10) == ["a", "b", "c", "d", "e"]


def test_the_limit_is_one_source_depth_plus_the_selection_pool() -> None:
    assert ranked_limit(RetrievalConfig()) == 50 + POOL_TOP_K * 2
    assert ranked_limit(RetrievalConfig(top_k=25, overfetch=2)) == 50 + 50
    # A pool deeper than the sources deepens them too (gather asks each for top_k * overfetch).
    assert ranked_limit(RetrievalConfig(top_k=100, overfetch=2)) == 200 + 200
    assert ranked_limit(RetrievalConfig(candidate_limit=500)) == 500 + POOL_TOP_K * 2


def test_as_many_are_scored_for_every_top_k_up_to_the_pools() -> None:
    # So a memory's score, and the order, do not depend on how many results were asked for.
    limits = {ranked_limit(RetrievalConfig(top_k=k)) for k in range(1, POOL_TOP_K + 1)}
    assert limits == {ranked_limit(RetrievalConfig())}
    assert ranked_limit(RetrievalConfig(top_k=POOL_TOP_K + 1)) > ranked_limit(RetrievalConfig())


def test_best_is_the_reciprocal_rank_fusion_order_ties_in_found_order() -> None:
    rng = random.Random(7)
    for _ in range(200):
        found = CandidateSet()
        pool = [f"m{i}" for i in range(rng.randrange(1, 40))]
        for source in ("semantic", "keyword", "entity", "temporal")[: rng.randrange(1, 5)]:
            found.add(source, [(m, 1.0) for m in rng.sample(pool, rng.randrange(0, len(pool) + 1))])
        n = rng.randrange(1, 30)
        fused = {i: reciprocal_rank(i, found.ranks, 60) for i in found.ids}
        kept = set(sorted(found.ids, key=lambda i: -fused[i])[:n])
        assert found.best(n) == [i for i in found.ids if i in kept]
