"""Ranking reads the candidates the sources rank best together, not every one they found."""

from __future__ import annotations

from engram.config import RetrievalConfig
from engram.retrieve.candidates import RANKED_PER_LIMIT, CandidateSet, ranked_limit


def test_best_keeps_what_the_sources_rank_best_together_in_found_order() -> None:
    found = CandidateSet()
    found.add("semantic", [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)])
    found.add("keyword", [("d", 3.0), ("e", 2.0), ("b", 1.0)])
    # b and d are found by both sources: they outrank everything found once.
    assert found.best(2) == ["b", "d"]
    assert found.best(3) == ["a", "b", "d"]
    assert found.best(10) == ["a", "b", "c", "d", "e"]


def test_the_limit_follows_the_per_source_limit() -> None:
    assert ranked_limit(RetrievalConfig()) == RANKED_PER_LIMIT * 50
    assert ranked_limit(RetrievalConfig(top_k=100, overfetch=2)) == RANKED_PER_LIMIT * 200
