"""Token counts for the prompt budget come from a real tokenizer, and a cut stays inside its count."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram import tokens
from engram.tokens import count_many, count_tokens, cut_to_tokens


def test_counts_are_a_tokenizers() -> None:
    assert count_tokens("") == 0
    assert count_tokens("Hello world, how are you?") == 7
    assert count_tokens("東京都庁") == 4
    assert count_many(["Hello world, how are you?", "", "東京都庁"]) == [7, 0, 4]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(0, 80))
def test_a_cut_fits_its_count_and_is_a_head(text: str, n: int) -> None:
    head = cut_to_tokens(text, n)
    assert text.startswith(head)
    assert count_tokens(head) <= n
    if count_tokens(text) <= n:
        assert head == text


def test_without_a_tokenizer_four_characters_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_loaded", [None])
    assert count_tokens("abcde") == 2 and count_many(["abcd", ""]) == [1, 0]
    assert cut_to_tokens("abcdefghij", 2) == "abcdefgh"
