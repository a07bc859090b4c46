"""How many results were asked for changes how many come back, not which come first: a smaller
``top_k`` returns the first results of a larger one, with their scores, with or without
diversification."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram import Memory, RetrievalConfig
from engram.ext import Embedder

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
PEOPLE = ("Maya", "Leo", "Priya", "Tom", "Jess", "Omar", "Ines", "Sam", "Nadia", "Felix", "Greta", "Ravi", "Joel",
          "Marta", "Hamish", "Ama", "Bea", "Carl", "Dev", "Eli")
THINGS = ("the dentist", "the car", "the rent", "the trip to Porto", "the kitchen budget", "the dog", "the new job",
          "piano lessons", "the book club", "the bike", "the wedding", "the garden", "the boiler", "the flat in Leeds",
          "Kofi's party", "the Lisbon conference", "the half marathon", "the vet", "the mortgage", "the allotment")
SAYINGS = ("{p} said {t} moved to {d}.", "Did {p} ever sort out {t}? It was meant to be {d}.",
           "{p} keeps talking about {t}, apparently {d} now.", "Reminder: {t} with {p} on {d}.",
           "Honestly {t} is stressing {p} out, {d} is too soon.", "{p} paid for {t} on {d}, I owe half.",
           "{p} and {q} argued about {t} again.", "Told {p} that {q} can't do {t} {d}.")
DAYS = ("Monday", "Friday", "the 9th", "next weekend", "the 21st", "Tuesday evening", "March")
# With the pool of each top_k, the first three put another memory in the first five than top_k=15 did.
QUESTIONS = ("What did Ines say about the dog?", "What did Sam say about the dentist?",
             "What did Marta say about the rent?", "What did Leo say about the car?",
             "What did Greta say about the trip to Porto?")
QUESTION_MMR = "Who paid for the trip to Porto?"


def chatter(memory: Memory, n: int, people: Sequence[str], things: Sequence[str], sayings: Sequence[str]) -> None:
    """``n`` turns of templated chatter, seeded: user and assistant in sessions of 12 turns, 7 hours apart."""
    rng = random.Random(5)
    start = NOW - timedelta(days=200)
    memory.add_many([
        {"content": rng.choice(sayings).format(p=rng.choice(people), q=rng.choice(people), t=rng.choice(things),
                                               d=rng.choice(DAYS)),
         "user_id": "u", "role": rng.choice(("user", "assistant")), "session_id": f"s{i // 12}",
         "created_at": start + timedelta(hours=7 * i)}
        for i in range(n)
    ])


def ask(memory: Memory, question: str, k: int, mmr: float = 0.7) -> list[tuple[str, float]]:
    config = RetrievalConfig(top_k=k, min_score=0.0, max_tokens=None, mmr_lambda=mmr)
    return [(m.id, m.score) for m in memory.retrieve(question, user_id="u", now=NOW, config=config).memories]


def test_a_smaller_top_k_is_the_start_of_a_larger_one(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "prefix.db", embedder=embedder) as memory:
        chatter(memory, 600, PEOPLE, THINGS, SAYINGS)
        for question in QUESTIONS:
            for mmr in (1.0, 0.7):  # relevance alone, then the default diversification
                wide = ask(memory, question, 15, mmr)
                assert len(wide) == 15
                for k in (1, 5, 10):
                    assert ask(memory, question, k, mmr) == wide[:k], (question, k)


def test_diversification_picks_from_the_same_pool_whatever_top_k(tmp_path: Path, embedder: Embedder) -> None:
    # Templated chatter says the same things in the same words: diversification has near-duplicates to
    # drop. Picking among the best top_k * overfetch, a smaller top_k put another memory in than top_k=15.
    with Memory(tmp_path / "mmr.db", embedder=embedder) as memory:
        chatter(memory, 400, PEOPLE[:8], THINGS[:12], SAYINGS[:6])
        wide = ask(memory, QUESTION_MMR, 15)
        for k in (1, 3, 5, 8, 10):
            assert ask(memory, QUESTION_MMR, k) == wide[:k], k
