from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import ConfigError
from engram.retrieve.sentences import clip_content, split_sentences

# --------------------------------------------------------------------------- the old contract


def test_clip_keeps_first_sentences_and_marks_the_cut() -> None:
    assert clip_content("One. Two! Three? Four.", 2) == "One. Two!..."
    assert clip_content("One. Two.", 2) == "One. Two."


def test_clip_counts_trailing_text_as_a_sentence() -> None:
    assert clip_content("Call me. I am home", 1) == "Call me...."
    assert clip_content("Call me. I am home", 2) == "Call me. I am home"


def test_clip_returns_text_without_terminator_whole() -> None:
    assert clip_content("  no punctuation here at all  ", 1) == "no punctuation here at all"
    assert clip_content("", 1) == ""
    assert clip_content("   ", 1) == ""


def test_clip_ignores_trailing_whitespace() -> None:
    assert clip_content("One. Two.   ", 2) == "One. Two."


def test_clip_returns_unclipped_text_trimmed_but_unchanged() -> None:
    text = "  First line.\nSecond   line, spaced oddly.  "
    assert clip_content(text, 5) == text.strip()


def test_clip_rejects_fewer_than_one_sentence() -> None:
    with pytest.raises(ConfigError):
        clip_content("x", 0)
    with pytest.raises(ConfigError):
        clip_content("x", -1)


def test_split_returns_trimmed_slices() -> None:
    assert split_sentences("  One.   Two!  Three  ") == ["One.", "Two!", "Three"]
    assert split_sentences("") == []
    assert split_sentences(" \n\t ") == []


# --------------------------------------------------------------------------- tokens that contain dots


def test_clip_keeps_email_intact() -> None:
    assert clip_content("Mail alice@acme.io about it. She decides.", 1) == "Mail alice@acme.io about it...."
    assert clip_content("Write to bob.smith@mail.acme.co.uk. He replies.", 1) == (
        "Write to bob.smith@mail.acme.co.uk...."
    )


def test_clip_keeps_url_intact() -> None:
    assert clip_content("Post to https://hooks.acme.io/x. It retries.", 1) == "Post to https://hooks.acme.io/x...."
    assert split_sentences("See http://acme.io/a?b=1&c=2 now. Then log in.") == [
        "See http://acme.io/a?b=1&c=2 now.",
        "Then log in.",
    ]
    assert split_sentences("Open www.Acme.com/Docs today.") == ["Open www.Acme.com/Docs today."]


def test_clip_keeps_bare_domain_intact() -> None:
    assert split_sentences("Check acme.io and docs.acme.io first. Thanks.") == [
        "Check acme.io and docs.acme.io first.",
        "Thanks.",
    ]


def test_clip_keeps_decimals_and_prices_intact() -> None:
    text = "Dr. Smith from Acme Inc. approved the $18.50 refund. The customer was happy."
    assert clip_content(text, 1) == "Dr. Smith from Acme Inc. approved the $18.50 refund...."
    assert split_sentences("Rates rose 3.5% and pi is 3.14159. Fine.") == [
        "Rates rose 3.5% and pi is 3.14159.",
        "Fine.",
    ]
    assert split_sentences("It costs .5 dollars.") == ["It costs .5 dollars."]


def test_clip_keeps_version_numbers_intact() -> None:
    assert clip_content("We run version 2.3.1 now. It is stable.", 1) == "We run version 2.3.1 now...."
    assert split_sentences("Use v1.2 or later. Older builds crash.") == ["Use v1.2 or later.", "Older builds crash."]


def test_clip_keeps_ip_addresses_intact() -> None:
    assert split_sentences("The host is 10.0.0.1. Ping it.") == ["The host is 10.0.0.1.", "Ping it."]


def test_clip_keeps_ellipsis_inside_a_sentence() -> None:
    assert split_sentences("Well... I guess so. Fine.") == ["Well... I guess so.", "Fine."]
    assert split_sentences("It was… Odd. We left.") == ["It was… Odd.", "We left."]
    assert split_sentences("Wait...what? Yes.") == ["Wait...what?", "Yes."]


# --------------------------------------------------------------------------- abbreviations and initials


@pytest.mark.parametrize(
    "text",
    [
        "Dr. Smith agreed.",
        "Mr. Lee and Mrs. Lee and Ms. Park came.",
        "Prof. Chen spoke.",
        "Acme Inc. Ltd. Co. Corp. Board met.",
        "Go to St. Louis.",
        "Tom Reed Jr. And Sr. Reed came.",
        "Python vs. Go was the debate.",
        "Apples, pears, etc. Were all on sale.",
        "Use a flag, e.g. Verbose mode.",
        "Use tea, i.e. Green tea.",
        "Meet at 9 a.m. Or 5 p.m. Either works.",
        "The U.S. Army came.",
        "See Fig. A for the plot.",
        "It costs approx. Forty dollars.",
        "It moved to Jan. The next week, to Feb. And then Sept. Again.",
    ],
)
def test_clip_keeps_common_abbreviations_intact(text: str) -> None:
    assert split_sentences(text) == [text]


def test_clip_keeps_number_abbreviation_intact() -> None:
    assert split_sentences("Item No. 42 sold out. Order more.") == ["Item No. 42 sold out.", "Order more."]
    assert split_sentences("See Fig. 3 first.") == ["See Fig. 3 first."]
    # As a word, "No." ends a sentence.
    assert split_sentences("No. I disagree.") == ["No.", "I disagree."]


def test_clip_keeps_initials_intact() -> None:
    assert clip_content("J. R. R. Tolkien wrote it. He was British.", 1) == "J. R. R. Tolkien wrote it...."


def test_clip_does_not_split_before_lowercase_or_digit() -> None:
    assert split_sentences("He works at Acme. and likes it.") == ["He works at Acme. and likes it."]
    assert split_sentences("We counted. 3 were left.") == ["We counted. 3 were left."]
    assert split_sentences("Ready? yes.") == ["Ready? yes."]


def test_split_before_uppercase_and_quotes() -> None:
    assert split_sentences('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]
    assert split_sentences('"Ready?" she asked. It was.') == ['"Ready?" she asked.', "It was."]
    assert split_sentences('Done. "Next," he said.') == ["Done.", '"Next," he said.']
    assert split_sentences("(See below.) Results follow.") == ["(See below.)", "Results follow."]
    assert split_sentences("Back in the '90s. 'Tis true.") == ["Back in the '90s.", "'Tis true."]


def test_split_on_sentence_final_abbreviation_like_words() -> None:
    # A long word or a lowercase letter before the dot is no abbreviation.
    assert split_sentences("It shipped. Then it broke.") == ["It shipped.", "Then it broke."]
    assert split_sentences("Choose option a. Then go.") == ["Choose option a.", "Then go."]
    assert split_sentences("We launched in 2024. Sales grew.") == ["We launched in 2024.", "Sales grew."]


# --------------------------------------------------------------------------- paragraphs, lists, scripts


def test_split_on_blank_lines() -> None:
    assert split_sentences("First paragraph\n\nSecond paragraph") == ["First paragraph", "Second paragraph"]
    assert split_sentences("First\r\n  \r\nSecond") == ["First", "Second"]


def test_split_on_list_markers() -> None:
    assert split_sentences("Buy:\n- eggs\n* milk\n• bread") == ["Buy:", "- eggs", "* milk", "• bread"]
    assert split_sentences("Steps:\n1. Install it.\n2) Run it.") == ["Steps:", "1. Install it.", "2) Run it."]
    assert clip_content("Todo:\n- eggs\n- milk", 2) == "Todo:\n- eggs..."


def test_single_newline_is_no_boundary() -> None:
    assert split_sentences("a line wrapped\nin the middle") == ["a line wrapped\nin the middle"]


def test_enumerator_opening_a_sentence_is_no_boundary() -> None:
    assert split_sentences("1. Buy milk.") == ["1. Buy milk."]
    assert split_sentences("12. Call Bob. Then rest.") == ["12. Call Bob.", "Then rest."]


def test_split_on_cjk_full_stops() -> None:
    assert split_sentences("你好。我很好！你呢？") == ["你好。", "我很好！", "你呢？"]
    assert clip_content("会议在下午三点。请准时到达。", 1) == "会议在下午三点。..."
    assert split_sentences("他说：「好。」然后走了。") == ["他说：「好。」", "然后走了。"]
    # The added "..." must not become a sentence of its own.
    assert split_sentences(clip_content("好。」a", 1)) == ["好。」..."]


def test_split_caseless_and_cyrillic_scripts() -> None:
    assert split_sentences("Привет. Как дела?") == ["Привет.", "Как дела?"]
    assert split_sentences("Done. 好的。") == ["Done.", "好的。"]


# --------------------------------------------------------------------------- properties and speed

_PIECES = [*"aZ .!?…。」\n\t-1\"')@:/$%", "Dr", "e.g", "acme.io", "2.3", " A. ", "\n- ", "\n\n", "1. "]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)


@given(st.one_of(_TEXT, st.text(max_size=80)), st.integers(1, 5))
@settings(max_examples=400)
def test_clip_is_a_prefix_of_the_stripped_input(text: str, n: int) -> None:
    clipped = clip_content(text, n)
    stripped = text.strip()
    if clipped != stripped:
        assert clipped.endswith("...")
        assert stripped.startswith(clipped[:-3])
        assert len(clipped) - 3 < len(stripped)


@given(st.one_of(_TEXT, st.text(max_size=80)))
def test_clip_with_large_n_returns_stripped_input(text: str) -> None:
    assert clip_content(text, 1000) == text.strip()


@given(st.one_of(_TEXT, st.text(max_size=80)), st.integers(1, 5))
def test_clip_never_keeps_more_sentences_than_asked(text: str, n: int) -> None:
    assert len(split_sentences(clip_content(text, n))) <= n


@given(st.one_of(_TEXT, st.text(max_size=80)), st.integers(1, 5))
def test_clip_keeps_exactly_the_first_sentences(text: str, n: int) -> None:
    sentences = split_sentences(text)
    assert split_sentences(text.strip()) == sentences
    if len(sentences) > n:
        assert split_sentences(clip_content(text, n).removesuffix("...")) == sentences[:n]


@given(st.one_of(_TEXT, st.text(max_size=80)))
def test_sentences_are_ordered_slices_of_the_input(text: str) -> None:
    pos = 0
    for sentence in split_sentences(text):
        assert sentence == sentence.strip() and sentence
        found = text.find(sentence, pos)
        assert found >= 0
        pos = found + len(sentence)


@pytest.mark.parametrize(
    "unit",
    [".", "a.!?. ", "." * 997 + " a ", "?! ", "A. ", ". \n", "\n\n", " " * 50 + "\n", "'\"" * 10 + ". ", "(((. A", "a"],
)
def test_split_is_linear_on_long_punctuation_runs(unit: str) -> None:
    text = unit * (200_000 // len(unit))
    for run in (split_sentences, lambda t: clip_content(t, 2)):
        # CPU time, so that other processes on a busy machine do not count against the budget;
        # a quadratic pass over 200 KB would take minutes, not a second.
        start = time.process_time()
        run(text)
        assert time.process_time() - start < 1.0
