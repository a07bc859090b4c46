"""Max-score pruning of keyword searches (engram.stores.accumulate) gives exactly the answer of
scoring every posting: the same rows, scores and order, whatever the filters reject."""

from __future__ import annotations

import random
from functools import partial

import numpy as np
import pytest

from engram.stores import accumulate, postings
from engram.stores.matches import Matches, best, exact_best
from engram.stores.postings import Postings

VOCABULARY = [f"w{i}" for i in range(400)]
WEIGHTS = [1.0 / (i + 1) ** 0.8 for i in range(400)]  # a few common words, a long tail


class Spy:
    """Counts pruned attempts and how many of them certified their rows."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tried = self.certified = 0
        pruned = accumulate.Accumulator.pruned

        def counted(acc: accumulate.Accumulator, *args: object, **kwargs: object) -> object:
            found = pruned(acc, *args, **kwargs)  # type: ignore[arg-type]
            self.tried += 1
            self.certified += found is not None
            return found

        monkeypatch.setattr(accumulate.Accumulator, "pruned", counted)
        monkeypatch.setattr(postings, "PRUNE_ABOVE", 0)  # prune at every size, to test it on small ones


def _index(rng: random.Random, n: int) -> tuple[Postings, list[str]]:
    ids = [f"id{i:07d}" for i in range(n)]
    documents = [" " + " ".join(rng.choices(VOCABULARY, weights=WEIGHTS, k=rng.randint(1, 25))) if rng.random() > 0.02
                 else "" for _ in range(n)]
    return Postings.build(list(range(1, n + 1)), ids, [rng.randint(0, 1000) for _ in range(n)], documents), ids


def _search(index: Postings, terms: list[str], after: int | None, before: int | None, depth: int) -> Matches | None:
    return index.scores(terms, after, before, depth=depth)


@pytest.mark.parametrize("seed", range(3))
def test_pruned_answers_equal_scoring_every_posting(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    spy = Spy(monkeypatch)
    rng = random.Random(seed)
    for n in (300, 5000, 20000):
        index, ids = _index(rng, n)
        for _ in range(50):
            if rng.random() < 0.2:  # rows added and removed since the arrays were built
                ids.append(f"id{len(ids):07d}")
                words = rng.choices(VOCABULARY, weights=WEIGHTS, k=8)
                index.add(10**6 + len(ids), ids[-1], words, rng.randint(0, 1000))
            elif rng.random() < 0.1:
                index.remove(rng.choice(ids))
            terms = list(dict.fromkeys(rng.choices(VOCABULARY, weights=[w**0.5 for w in WEIGHTS], k=rng.randint(1, 6))))
            after, before = rng.choice([(None, None), (None, None), (100, None), (300, 800)])
            k, keep = rng.choice([5, 20, 50]), rng.choice([1, 2, 7, 50])  # keep: the share a filter passes
            passing = (lambda r: None) if keep == 1 else (lambda r, keep=keep: r[r % keep == 0])
            index._scored = None  # searched anew, not taken from the last search of these words
            pruned = exact_best(partial(_search, index, terms, after, before), k, passing)
            every = index.scores(terms, after, before)
            assert pruned == ([] if every is None else best(every, k, passing))
    assert spy.certified >= 20  # pruning answered often enough to be tested
    assert spy.tried - spy.certified >= 20  # and so did the searches it handed back


def test_no_left_out_row_scores_above_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    Spy(monkeypatch)
    rng = random.Random(7)
    index, _ = _index(rng, 20000)
    checked = 0
    for _ in range(40):
        terms = list(dict.fromkeys(rng.choices(VOCABULARY[:60], k=rng.randint(2, 5))))
        index._scored = None
        some = index.scores(terms, depth=30)
        every = index.scores(terms)
        assert some is not None and every is not None
        if not some.bound:
            continue
        checked += 1
        kept = dict(zip(some.positions.tolist(), some.scores.tolist(), strict=True))
        for position, score in zip(every.positions.tolist(), every.scores.tolist(), strict=True):
            assert kept.get(position, score) == score  # a kept row's score is its full score
            if position not in kept:
                assert score <= some.bound
        assert int(np.count_nonzero(some.scores > some.bound)) >= 30
    assert checked >= 10


def test_the_scratch_arrays_are_zero_after_every_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search reuses one user's sums and marks; rows a search (pruned, handed back, or whole) left
    non-zero would add to the next search's scores."""
    Spy(monkeypatch)
    rng = random.Random(3)
    index, _ = _index(rng, 5000)
    for _ in range(30):
        terms = list(dict.fromkeys(rng.choices(VOCABULARY[:80], k=rng.randint(1, 5))))
        index._scored = None
        index.scores(terms, depth=rng.choice([0, 5, 50, 10**6]))
        scratch = index._accumulator
        assert not scratch._sums.any() and not scratch._marks.any()
