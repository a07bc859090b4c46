"""Metric values computed by hand from the definitions in engram.eval.metrics."""

from __future__ import annotations

import math

import pytest

from engram.eval.metrics import dedupe, ndcg_any_at_k, recall_all_at_k, recall_any_at_k

RANKED = ["a", "b", "c", "d", "e"]


def test_recall_all_needs_every_gold_item_in_the_top_k() -> None:
    assert recall_all_at_k(RANKED, {"b", "d"}, 4) == 1.0
    assert recall_all_at_k(RANKED, {"b", "d"}, 3) == 0.0
    assert recall_all_at_k(RANKED, {"b", "z"}, 5) == 0.0


def test_recall_any_needs_one_gold_item_in_the_top_k() -> None:
    assert recall_any_at_k(RANKED, {"d", "z"}, 4) == 1.0
    assert recall_any_at_k(RANKED, {"d", "z"}, 3) == 0.0


def test_ndcg_of_a_single_hit_is_its_rank_discount() -> None:
    assert ndcg_any_at_k(RANKED, {"a"}, 5) == 1.0
    # rank 3: 1/log2(4) = 0.5, ideal rank 1: 1
    assert ndcg_any_at_k(RANKED, {"c"}, 5) == pytest.approx(0.5)
    assert ndcg_any_at_k(RANKED, {"c"}, 2) == 0.0


def test_ndcg_with_two_gold_items() -> None:
    # hits at ranks 2 and 4: 1/log2(3) + 1/log2(5); ideal ranks 1 and 2: 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_any_at_k(RANKED, {"b", "d"}, 5) == pytest.approx(expected)
    assert ndcg_any_at_k(RANKED, {"b", "d"}, 5) == pytest.approx(0.6509, abs=1e-4)


def test_ideal_dcg_is_capped_at_k() -> None:
    # three gold items but k = 2: a perfect top 2 scores 1.0 though one gold item is out of reach
    assert ndcg_any_at_k(["a", "b", "c"], {"a", "b", "c"}, 2) == 1.0
    # one hit at rank 2 of an ideal 1 + 1/log2(3)
    assert ndcg_any_at_k(["x", "b"], {"a", "b", "c"}, 2) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_rankings_shorter_than_k_count_what_they_hold() -> None:
    assert recall_all_at_k(["a"], {"a"}, 50) == 1.0
    assert ndcg_any_at_k([], {"a"}, 10) == 0.0


def test_empty_gold_and_bad_k_are_refused() -> None:
    with pytest.raises(ValueError):
        recall_any_at_k(RANKED, set(), 5)
    with pytest.raises(ValueError):
        ndcg_any_at_k(RANKED, {"a"}, 0)


def test_dedupe_keeps_first_occurrence_order() -> None:
    # turns s1:3, s2:0, s1:0, s3:1 map to sessions s1, s2, s1, s3
    assert dedupe(["s1", "s2", "s1", "s3"]) == ["s1", "s2", "s3"]
