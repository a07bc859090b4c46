from __future__ import annotations

import math
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.config import RedactionConfig, RetrievalConfig
from engram.errors import ConfigError
from engram.model import MemoryRecord
from engram.retrieve.select import (
    Selection,
    clip_content,
    dedup,
    estimate_tokens,
    fit_budget,
    interleave,
    mmr,
    normalize_and_hash,
    redact,
    select,
    split_sentences,
)
from engram.retrieve.types import MemoryEntry, Scored

NOW = datetime(2024, 2, 15, 12, 0, tzinfo=UTC)


def rec(mid: str, content: str = "text", **kw: Any) -> MemoryRecord:
    kw.setdefault("kind", "message")
    kw.setdefault("created_at", NOW)
    return MemoryRecord(
        id=mid, user_id="u1", content=content, recorded_at=kw["created_at"], content_hash=mid, **kw
    )


def sc(mid: str, score: float, content: str = "text", vector: np.ndarray | None = None, **kw: Any) -> Scored:
    return Scored(record=rec(mid, content, **kw), score=score, vector=vector)


def entry(mid: str, content: str, kind: str = "message") -> MemoryEntry:
    return MemoryEntry(
        id=mid,
        content=content,
        score=0.5,
        timestamp=NOW.isoformat(),
        session_id=None,
        message_id=None,
        type=kind,
        role=None,
        collection="user:1",
        search_type="hybrid",
        original_length=len(content),
        was_redacted=False,
    )


def ids(items: list[Scored]) -> list[str]:
    return [s.record.id for s in items]


# --------------------------------------------------------------------------- normalize / dedup


class TestDedup:
    def test_seed_unit_test(self) -> None:
        items = [sc("1", 0.9, "Hello world"), sc("2", 0.8, "Hello world"), sc("3", 0.7, "HELLO WORLD")]
        kept, removed = dedup(items)
        assert ids(kept) == ["1"]
        assert removed == 2

    def test_normalisation_steps(self) -> None:
        base = normalize_and_hash("hello world")
        assert normalize_and_hash("  Hello \n\t World!!! ") == base
        assert normalize_and_hash("...hello world?") == base
        assert normalize_and_hash("ｈｅｌｌｏ world") == base  # NFKC folds full-width letters
        assert normalize_and_hash("hello, world") != base
        assert len(base) == 16
        assert all(c in "0123456789abcdef" for c in base)

    def test_sha256_prefix(self) -> None:
        import hashlib

        assert normalize_and_hash("Hello world.") == hashlib.sha256(b"hello world").hexdigest()[:16]

    def test_unicode_text_is_not_stripped_to_nothing(self) -> None:
        # ASCII-only \w would reduce both to "" and merge them.
        assert normalize_and_hash("你好世界") != normalize_and_hash("再见")
        assert normalize_and_hash("Привет") != normalize_and_hash("")

    @given(st.lists(st.sampled_from(["a", "A", " a. ", "b", "B!", "c", "你好", "你好。"]), max_size=12))
    def test_idempotent(self, contents: list[str]) -> None:
        items = [sc(str(i), 0.5, c) for i, c in enumerate(contents)]
        once, removed = dedup(items)
        twice, removed_again = dedup(once)
        assert ids(twice) == ids(once)
        assert removed_again == 0
        assert removed == len(items) - len(once)
        assert len({normalize_and_hash(s.record.content) for s in once}) == len(once)


# --------------------------------------------------------------------------- MMR


def rand_unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    v = rng.standard_normal((n, d)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


class TestMMR:
    def test_first_pick_is_most_relevant_then_diverse(self) -> None:
        x = np.array([1.0, 0.0], dtype=np.float32)
        y = np.array([0.0, 1.0], dtype=np.float32)
        items = [sc("a", 0.9, vector=x), sc("b", 0.85, vector=x), sc("c", 0.6, vector=y)]
        # b: 0.5*0.85 - 0.5*1 = -0.075 ; c: 0.5*0.6 - 0 = 0.3 -> c before b
        assert ids(mmr(items, 3, 0.5)) == ["a", "c", "b"]

    def test_lambda_one_is_relevance_order(self) -> None:
        x = np.array([1.0, 0.0], dtype=np.float32)
        items = [sc("b", 0.5, vector=x), sc("a", 0.5, vector=x), sc("c", 0.9, vector=x)]
        # Equal scores keep the ranking's order (it broke their tie by relevance), never the ids'.
        assert ids(mmr(items, 3, 1.0)) == ["c", "b", "a"]

    def test_missing_vector_is_dissimilar(self) -> None:
        x = np.array([1.0, 0.0], dtype=np.float32)
        items = [sc("a", 0.9, vector=x), sc("b", 0.8, vector=x), sc("c", 0.5)]
        assert ids(mmr(items, 2, 0.5)) == ["a", "c"]

    def test_empty_and_zero_k(self) -> None:
        assert mmr([], 5, 0.7) == []
        assert mmr([sc("a", 1.0)], 0, 0.7) == []

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.floats(0, 1), min_size=0, max_size=30),
        st.integers(0, 40),
        st.integers(0, 2**32 - 1),
    )
    def test_lambda_one_equals_sorted(self, scores: list[float], k: int, seed: int) -> None:
        vecs = rand_unit(np.random.default_rng(seed), max(1, len(scores)), 8)
        items = [sc(f"m{i:03d}", s, vector=vecs[i]) for i, s in enumerate(scores)]
        expected = ids(sorted(items, key=lambda s: (-s.score, s.record.id)))[:k]
        assert ids(mmr(items, k, 1.0)) == expected

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.floats(0, 1), min_size=0, max_size=30),
        st.integers(0, 40),
        st.floats(0, 1),
        st.integers(0, 2**32 - 1),
    )
    def test_distinct_and_at_most_k(self, scores: list[float], k: int, lam: float, seed: int) -> None:
        vecs = rand_unit(np.random.default_rng(seed), max(1, len(scores)), 8)
        items = [sc(f"m{i:03d}", s, vector=vecs[i] if i % 3 else None) for i, s in enumerate(scores)]
        out = mmr(items, k, lam)
        assert len(out) == min(k, len(items))
        assert len(set(ids(out))) == len(out)
        if out:
            assert out[0].score == max(scores)

    def test_fast_enough(self) -> None:
        rng = np.random.default_rng(7)
        vecs = rand_unit(rng, 200, 384)
        items = [sc(f"m{i:03d}", float(rng.random()), vector=vecs[i]) for i in range(200)]
        mmr(items, 10, 0.7)  # warm-up
        best = min(self._time(items) for _ in range(5))
        assert best < 0.005

    @staticmethod
    def _time(items: list[Scored]) -> float:
        t0 = time.perf_counter()
        mmr(items, 10, 0.7)
        return time.perf_counter() - t0


# --------------------------------------------------------------------------- interleave


class TestInterleave:
    def items(self) -> list[Scored]:
        return [
            sc("old-best", 0.95, created_at=NOW - timedelta(days=30)),
            sc("old-good", 0.90, created_at=NOW - timedelta(days=20)),
            sc("new-weak", 0.40, created_at=NOW - timedelta(hours=1)),
            sc("mid", 0.60, created_at=NOW - timedelta(days=2)),
        ]

    def test_alternates_score_and_recency(self) -> None:
        out = interleave(self.items(), "alternate", 8)
        assert ids(out) == ["old-best", "new-weak", "old-good", "mid"]
        # Seed 001's unit test: first by score, second recent.
        assert out[0].score > 0.8
        assert out[1].record.created_at > NOW - timedelta(days=1)

    def test_score_first_and_recency_first(self) -> None:
        assert ids(interleave(self.items(), "score_first", 3)) == ["old-best", "old-good", "mid"]
        assert ids(interleave(self.items(), "recency_first", 2)) == ["new-weak", "mid"]

    def test_k_limits_score_ties_in_ranking_order_and_time_ties_by_id(self) -> None:
        items = [sc("b", 0.5), sc("a", 0.5), sc("c", 0.5)]
        # The best-scored is the ranking's first ("b"); the newest of equal times is the smallest id.
        assert ids(interleave(items, "alternate", 2)) == ["b", "a"]

    def test_unknown_strategy(self) -> None:
        with pytest.raises(ConfigError):
            interleave([], "random", 3)


# --------------------------------------------------------------------------- clip / tokens / redaction


class TestClip:
    def test_seed_behaviour(self) -> None:
        assert clip_content("One. Two! Three? Four.", 2) == "One. Two!..."
        assert clip_content("One. Two.", 2) == "One. Two."

    def test_trailing_text_counts_as_a_sentence(self) -> None:
        assert clip_content("Call me. I am home", 1) == "Call me...."
        assert clip_content("Call me. I am home", 2) == "Call me. I am home"

    def test_no_terminator_is_whole(self) -> None:
        assert clip_content("  no punctuation here at all  ", 1) == "no punctuation here at all"
        assert clip_content("", 1) == ""

    def test_trailing_whitespace_is_not_a_sentence(self) -> None:
        assert clip_content("One. Two.   ", 2) == "One. Two."

    def test_invalid(self) -> None:
        with pytest.raises(ConfigError):
            clip_content("x", 0)

    @given(st.text(alphabet=st.sampled_from("ab .!?\n"), max_size=60), st.integers(1, 5))
    def test_never_more_sentences_than_asked(self, text: str, n: int) -> None:
        assert len(split_sentences(clip_content(text, n))) <= n


def words(n: int) -> str:
    """A text of exactly ``n`` tokens."""
    return " ".join(["word"] * n)


def test_estimate_tokens() -> None:
    # A real tokenizer's count: four characters a token is right for plain English only.
    assert estimate_tokens("") == 0
    assert estimate_tokens(words(7)) == 7
    assert estimate_tokens("Hello world, how are you?") == 7
    assert estimate_tokens("東京都庁") == 4  # one token a character, not one for all four
    assert estimate_tokens("def f(x): return x**2 + 3") == 13  # not 7


class TestRedact:
    def test_default_patterns(self) -> None:
        cfg = RedactionConfig(enabled=True)
        text, hit = redact("ssn 123-45-6789, card 1234567812345678, mail Bob@Example.com", cfg)
        assert hit
        assert text == "ssn [REDACTED], card [REDACTED], mail [REDACTED]"

    def test_disabled_and_no_match(self) -> None:
        assert redact("bob@example.com", RedactionConfig()) == ("bob@example.com", False)
        assert redact("nothing here", RedactionConfig(enabled=True)) == ("nothing here", False)

    def test_backslash_replacement_is_literal(self) -> None:
        cfg = RedactionConfig(enabled=True, patterns=(r"secret",), replacement=r"\1 gone")
        assert redact("a secret", cfg) == (r"a \1 gone", True)


# --------------------------------------------------------------------------- token budget


class TestBudget:
    def test_seed_large_memories(self) -> None:
        entries = [entry(str(i), f"memory {i} " + "lorem ipsum dolor sit amet " * 20) for i in range(10000)]
        out = fit_budget(entries, 1500)
        assert sum(estimate_tokens(e.content) for e in out) <= 1500
        assert out[-1].content.endswith("…")

    def test_partial_last_item_exactly_at_budget(self) -> None:
        out = fit_budget([entry("a", words(10)), entry("b", words(10))], 12)
        assert [e.content for e in out] == [words(10), "word…"]
        assert sum(estimate_tokens(e.content) for e in out) == 12

    def test_the_cut_never_overshoots(self) -> None:
        # The policy cut to remaining * 4 characters and added "..." (three tokens more); the cut
        # is between tokens and its mark is one token.
        out = fit_budget([entry("a", words(9)), entry("b", words(40))], 14)
        assert out[-1].content == words(4) + "…"
        assert sum(estimate_tokens(e.content) for e in out) == 14

    def test_stops_when_cut_leaves_nothing(self) -> None:
        out = fit_budget([entry("a", words(9)), entry("b", words(40))], 10)
        assert [e.id for e in out] == ["a"]

    def test_summaries_first(self) -> None:
        entries = [
            entry("m1", words(10)),
            entry("s1", words(10), "summary"),
            entry("m2", words(10)),
            entry("s2", words(10), "summary"),
        ]
        # Summaries are fitted first; the result keeps rank order (entries[0] stays the best match).
        assert [e.id for e in fit_budget(entries, 1000)] == ["m1", "s1", "m2", "s2"]
        assert [e.id for e in fit_budget(entries, 25)] == ["m1", "s1", "s2"]

    @settings(max_examples=200)
    @given(
        st.lists(st.tuples(st.text(max_size=200), st.booleans()), max_size=15),
        st.integers(0, 300),
    )
    def test_never_exceeded(self, texts: list[tuple[str, bool]], max_tokens: int) -> None:
        entries = [entry(str(i), t, "summary" if s else "message") for i, (t, s) in enumerate(texts)]
        out = fit_budget(entries, max_tokens)
        assert sum(estimate_tokens(e.content) for e in out) <= max_tokens
        assert len({e.id for e in out}) == len(out)


# --------------------------------------------------------------------------- select


class TestSelect:
    def test_full_pipeline(self) -> None:
        x = np.array([1.0, 0.0], dtype=np.float32)
        scored = [
            sc(
                "a",
                0.9,
                "Mail me at bob@example.com. Please. Thanks.",
                vector=x,
                session_id="s1",
                role="user",
                metadata={"message_id": "msg-1"},
            ),
            sc("b", 0.8, "mail me at BOB@example.com. please. thanks!", vector=x),
            sc(
                "c",
                0.5,
                "A summary of things.",
                vector=None,
                kind="summary",
                created_at=NOW - timedelta(days=1),
            ),
        ]
        cfg = RetrievalConfig(top_k=5, clip_sentences=1, redaction=RedactionConfig(enabled=True))
        sel = select(scored, cfg, collection="user:u1")
        assert isinstance(sel, Selection)
        assert sel.dedup_removed == 1
        assert sel.applied_filters == [
            "deduplication",
            "mmr",
            "redaction",
            "sentence_clip",
            "token_budget",
        ]
        assert [e.id for e in sel.entries] == ["a", "c"]  # rank order; the prompt interleaves
        a = sel.entries[0]
        # Clipping first would have cut the address at its first dot and leaked "bob@example.".
        assert a.content == "Mail me at [REDACTED]...."
        assert a.was_redacted and not sel.entries[1].was_redacted
        assert a.original_length == len(scored[0].record.content)
        assert a.message_id == "msg-1" and a.session_id == "s1" and a.role == "user"
        assert a.collection == "user:u1" and a.search_type == "hybrid"
        assert a.timestamp == NOW.isoformat()
        assert a.record is scored[0].record
        assert sel.total_tokens == sum(estimate_tokens(e.content) for e in sel.entries)

    def test_redaction_happens_before_truncation(self) -> None:
        # Truncating first would cut the address to 'bob@exa' which no pattern catches.
        content = "x" * 32 + " bob@example.com"
        cfg = RetrievalConfig(clip_sentences=None, max_tokens=10, redaction=RedactionConfig(enabled=True))
        sel = select([sc("a", 0.9, content)], cfg, collection="c")
        assert "bob" not in sel.entries[0].content
        assert sel.total_tokens <= 10

    def test_stages_off(self) -> None:
        cfg = RetrievalConfig(dedup=False, clip_sentences=None, max_tokens=None)
        long = "One. Two. Three. " * 50
        sel = select([sc("a", 0.9, long), sc("b", 0.8, long)], cfg, collection="c")
        assert sel.applied_filters == ["mmr"]
        assert sel.dedup_removed == 0
        assert [e.content for e in sel.entries] == [long, long]  # untouched when clipping is off

    def test_top_k_and_overfetch_pool(self) -> None:
        scored = [sc(f"m{i:02d}", 1 - i / 100, f"memory number {i}.") for i in range(30)]
        cfg = RetrievalConfig(top_k=4, overfetch=2, interleave="score_first", max_tokens=None)
        sel = select(scored, cfg, collection="c")
        assert [e.id for e in sel.entries] == ["m00", "m01", "m02", "m03"]

    def test_deterministic(self) -> None:
        rng = np.random.default_rng(3)
        vecs = rand_unit(rng, 40, 16)
        scored = [
            sc(
                f"m{i:02d}",
                float(rng.random()),
                f"memory {i}. more.",
                vector=vecs[i],
                created_at=NOW - timedelta(hours=i * 7 % 13),
            )
            for i in range(40)
        ]
        cfg = RetrievalConfig(top_k=10)
        first = select(scored, cfg, collection="c")
        second = select(list(reversed(scored)), cfg, collection="c")
        assert [e.id for e in first.entries] == [e.id for e in second.entries]


def test_lower_tier_is_selected_first_whatever_its_score() -> None:
    items = [sc("late", 0.9, "outside the range"), replace(sc("in", 0.2, "inside the range"), tier=0)]
    items[0] = replace(items[0], tier=1)
    sel = select(items, RetrievalConfig(top_k=1, min_score=0.0), collection="c")
    assert [e.id for e in sel.entries] == ["in"]


def test_mmr_keeps_topically_close_memories_and_demotes_paraphrases() -> None:
    def vec(angle: float) -> np.ndarray:
        return np.array([math.cos(angle), math.sin(angle)], dtype=np.float32)

    base = [replace(sc("a", 0.80, "Acme pays on NET30 terms"), vector=vec(0.0)),
            replace(sc("para", 0.79, "Acme pays on NET30 terms, as agreed"), vector=vec(0.05)),
            replace(sc("topic", 0.70, "Globex pays late"), vector=vec(1.0)),
            replace(sc("other", 0.65, "Initech ordered docks"), vector=vec(2.0))]
    picked = [s.record.id for s in mmr(base, 3, 0.7)]
    # "topic" (cosine 0.54 to "a") costs nothing; the paraphrase (cosine 0.999) drops out of the top 3.
    assert picked == ["a", "topic", "other"]


def test_mmr_keeps_a_close_memory_that_tells_something_new() -> None:
    # Two turns on one topic, close in meaning (cosine 0.96), the second telling what the first
    # does not: it is no duplicate, and stays ahead of a less relevant memory.
    def vec(angle: float) -> np.ndarray:
        return np.array([math.cos(angle), math.sin(angle)], dtype=np.float32)

    items = [replace(sc("a", 0.80, "Compare two digital marketing certification programs"), vector=vec(0.0)),
             replace(sc("b", 0.79, "Compare marketing programs; I attended my cousin's graduation"), vector=vec(0.3)),
             replace(sc("c", 0.60, "Initech ordered docks"), vector=vec(2.0))]
    assert [s.record.id for s in mmr(items, 3, 0.7)] == ["a", "b", "c"]
    # The same close memory repeating the first one's words is demoted behind "c".
    repeat = [items[0], replace(sc("b", 0.79, "Compare two digital marketing certification programs!"),
                                vector=vec(0.3)), items[2]]
    assert [s.record.id for s in mmr(repeat, 3, 0.7)] == ["a", "c", "b"]
