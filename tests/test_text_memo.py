"""Answers about a text kept by its hash: computed once, the same as computed afresh, never the text."""

from __future__ import annotations

from engram.retrieve import standing
from engram.text_memo import TextMemo
from engram.tokens import _count, count_tokens


def test_an_answer_is_computed_once_per_text() -> None:
    calls: list[str] = []

    def measure(text: str) -> int:
        calls.append(text)
        return len(text.split())

    memo = TextMemo(measure)
    assert memo("two words") == 2
    assert memo("two " + "words") == 2  # an equal text built anew
    assert memo("three words here") == 3
    assert calls == ["two words", "three words here"]


def test_a_full_memo_starts_over_and_still_answers() -> None:
    memo = TextMemo(len, entries=3)
    for text in ("a", "bb", "ccc", "dddd"):
        assert memo(text) == len(text)
    assert len(memo) == 1
    assert memo("bb") == 2


def test_no_text_is_kept() -> None:
    memo = TextMemo(len)
    secret = "the door code is 4417"
    memo(secret)
    kept = memo._kept
    assert all(isinstance(part, int) for key in kept for part in key)
    assert all(isinstance(value, int) for value in kept.values())


def test_counts_and_rules_read_the_same_through_the_memo() -> None:
    texts = ["Always use pytest fixtures, never unittest.", "東京都庁", "ok", "Please never book me a middle seat."]
    for _ in range(2):
        assert [count_tokens(t) for t in texts] == [_count(t) for t in texts]
        assert [standing._states(t) for t in texts] == [standing._search_states(t) for t in texts]
    assert standing._states("Always use pytest fixtures, never unittest.")
    assert not standing._states("ok")
