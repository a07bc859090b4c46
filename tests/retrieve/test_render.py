from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import ValidationError
from engram.model import MemoryRecord
from engram.retrieve.render import format_semantic_triple, format_time_ago, presentation_order, to_prompt
from engram.retrieve.types import MemoryEntry, Retrieval, RetrievalMetadata

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)


def record(content: str, kind: str, created_at: datetime = NOW, **fields: Any) -> MemoryRecord:
    return MemoryRecord(
        id=f"id-{abs(hash((content, kind))) % 10**8}",
        user_id="u1",
        content=content,
        kind=kind,
        created_at=created_at,
        recorded_at=created_at,
        content_hash="h",
        **fields,
    )


def entry(
    rec: MemoryRecord, score: float = 0.8, *, was_redacted: bool = False, content: str | None = None
) -> MemoryEntry:
    return MemoryEntry(
        id=rec.id,
        content=rec.content if content is None else content,
        score=score,
        timestamp=rec.created_at.isoformat(),
        session_id=rec.session_id,
        message_id=None,
        type=rec.kind,
        role=rec.role,
        collection="u1",
        search_type="hybrid",
        original_length=len(rec.content),
        was_redacted=was_redacted,
        record=rec,
    )


def retrieval(
    entries: list[MemoryEntry],
    query: str = "q",
    *,
    query_time_ms: float = 12.4,
    domain_rows: tuple[Mapping[str, Any], ...] = (),
) -> Retrieval:
    meta = RetrievalMetadata(
        query_time_ms=query_time_ms,
        total_results=len(entries) + 3,
        included_results=len(entries),
        total_tokens=100,
        applied_filters=(),
        config={},
    )
    return Retrieval(query=query, memories=tuple(entries), metadata=meta, domain_rows=domain_rows)


# -- policy style (seed 001) ---------------------------------------------------------------------


def test_policy_empty_is_empty_string() -> None:
    assert to_prompt(retrieval([])) == ""
    assert retrieval([]).to_prompt() == ""


def test_policy_exact_seed_sections() -> None:
    msg = record(
        "I need the invoice", "message", datetime(2024, 2, 1, 9, 5, 59, tzinfo=UTC), role="assistant"
    )
    no_role = record("hello", "message", datetime(2024, 2, 2, 23, 59, tzinfo=UTC))
    fact = record("Acme pays NET30", "fact")
    summary = record("Acme is a big customer", "summary")
    r = retrieval([entry(msg), entry(fact, 0.876), entry(no_role), entry(summary)], query_time_ms=12.6)
    assert to_prompt(r) == (
        "## Relevant Context from Previous Conversations\n"
        "\n"
        "### Previous Messages\n"
        "[2024-02-01 09:05 UTC] assistant: I need the invoice\n"
        "[2024-02-02 23:59 UTC] user: hello\n"
        "\n"
        "### Known Facts\n"
        "- Acme pays NET30 (relevance: 0.88)\n"
        "\n"
        "### Conversation Summaries\n"
        "- Acme is a big customer\n"
    )
    assert to_prompt(r, timing=True) == to_prompt(r) + "\n_Retrieved 4 memories in 13ms_\n"


def test_the_same_memories_render_the_same_bytes() -> None:
    # Timing differs on every call; a prompt that changes with it defeats an LLM's prompt cache.
    entries = [entry(record("Acme pays NET30", "fact"), 0.5), entry(record("hello", "message"))]
    fast, slow = retrieval(entries, query_time_ms=3), retrieval(entries, query_time_ms=480)
    assert to_prompt(fast) == to_prompt(slow) and fast.to_prompt() == slow.to_prompt()
    assert to_prompt(fast, timing=True) != to_prompt(slow, timing=True)


def test_policy_time_converted_to_utc_and_unparseable_kept() -> None:
    msg = record("hi", "message")
    e = replace(entry(msg), timestamp="2024-03-01T12:00:00+02:00", record=None)
    bad = replace(entry(msg), timestamp="yesterday-ish", record=None)
    out = to_prompt(retrieval([e, bad]))
    assert "[2024-03-01 10:00 UTC] user: hi" in out
    assert "[yesterday-ish] user: hi" in out


def test_policy_spec_style_keeps_the_specified_sections_then_engram_kinds() -> None:
    # A procedure's content is what the prompt shows (normalize phrases a bare trigger/action so).
    proc = record("When customer asks refund: check invoice first", "procedure", trigger="customer asks refund",
                  action="check invoice first")
    bare_proc = record("always cc finance", "procedure")
    episode = record("Call with Acme went well", "episode")
    doc = record("Terms are NET30", "document", metadata={"filename": "terms.pdf"}, doc_key="k1")
    chunk = record("Section 2 text", "chunk", doc_key="handbook")
    plain_chunk = record("orphan chunk", "chunk")
    fact = record("Acme is in tech", "fact")
    r = retrieval(
        [entry(e) for e in (proc, episode, doc, bare_proc, chunk, fact, plain_chunk)], query_time_ms=3
    )
    assert to_prompt(r, "policy_spec") == (
        "## Relevant Context from Previous Conversations\n"
        "\n"
        "### Known Facts\n"
        "- Acme is in tech (confidence: 0.80)\n"
        "\n"
        "### Procedures\n"
        "- When customer asks refund: check invoice first\n"
        "- always cc finance\n"
        "\n"
        "### Past Events\n"
        "- Call with Acme went well\n"
        "\n"
        "### Documents\n"
        "- Terms are NET30\n"
        "- Section 2 text\n"
        "- orphan chunk\n"
        "\n"
        "_Retrieved 7 memories in 3ms_\n"
    )
    # The policy style puts each section where its first memory ranks: the procedure ranked first.
    assert to_prompt(r, "policy") == (
        "## Relevant Context from Previous Conversations\n"
        "\n"
        "### Procedures\n"
        "- When customer asks refund: check invoice first\n"
        "- always cc finance\n"
        "\n"
        "### Past Events\n"
        "- Call with Acme went well\n"
        "\n"
        "### Documents\n"
        "- Terms are NET30\n"
        "- Section 2 text\n"
        "- orphan chunk\n"
        "\n"
        "### Known Facts\n"
        "- Acme is in tech (relevance: 0.80)\n"
    )


def test_policy_spec_style_is_the_specified_format_with_confidence_and_footer() -> None:
    msg = record("I need the invoice", "message", datetime(2024, 2, 1, 9, 5, tzinfo=UTC), role="assistant")
    fact = record("Acme pays NET30", "fact")
    summary = record("Acme is a big customer", "summary")
    # Ranked summary, fact, message: the specified format still lists messages, facts, summaries.
    r = retrieval([entry(summary, 0.9), entry(fact, 0.876), entry(msg, 0.5)], query_time_ms=12.6)
    assert to_prompt(r, "policy_spec") == (
        "## Relevant Context from Previous Conversations\n"
        "\n"
        "### Previous Messages\n"
        "[2024-02-01 09:05 UTC] assistant: I need the invoice\n"
        "\n"
        "### Known Facts\n"
        "- Acme pays NET30 (confidence: 0.88)\n"
        "\n"
        "### Conversation Summaries\n"
        "- Acme is a big customer\n"
        "\n"
        "_Retrieved 3 memories in 13ms_\n"
    )


def test_unknown_style_rejected() -> None:
    with pytest.raises(ValidationError) as info:
        to_prompt(retrieval([]), "markdown")
    assert info.value.field == "style"
    assert "policy, policy_spec, augmentation" in str(info.value)


# -- augmentation style (seed 003) ---------------------------------------------------------------

CLOSING = (
    "Use this context to inform your response, but be clear about what you know vs. what you're inferring.\n"
)
ACME_QUERY = "What did Acme Corporation order last month?"


def acme_entries() -> list[MemoryEntry]:
    summary = record(
        "Acme Corporation (customer:a1b2c3d4) is a long-standing customer with frequent large orders, "
        "typically in the technology sector.",
        "summary",
    )
    facts = [
        # Contents as an extractor phrases the triples: the prompt prints the content.
        record(
            "Acme Corporation has industry: technology", "fact", subject="Acme Corporation",
            predicate="has_property", object="industry: technology",
        ),
        record("Acme Corporation prefers payment terms: NET30", "fact", subject="Acme Corporation",
               predicate="prefers", object="payment terms: NET30"),
        record(
            "Acme Corporation has recent order: order:12345 (2024-01-15)",
            "fact",
            subject="Acme Corporation",
            predicate="has_property",
            object="recent order: order:12345 (2024-01-15)",
        ),
    ]
    past = [
        record(
            "User asked about Acme's payment status for invoice #789", "message", NOW - timedelta(days=14)
        ),
        record(
            "User reviewed Acme's Q4 2023 order history and noted increase in order frequency",
            "episode",
            NOW - timedelta(days=40),
        ),
    ]
    # Interleaved on purpose: sections group by type, come in the order of their first (best) memory,
    # and keep the retrieval's order within each; ranked so, the seed example's order is the rank order.
    return [entry(summary), entry(facts[0]), entry(past[0]), entry(facts[1]), entry(past[1]), entry(facts[2])]


ACME_CONTEXT = (
    "# Retrieved Context\n"
    "\n"
    f'The following information from your memory may be relevant to the query: "{ACME_QUERY}"\n'
    "\n"
    "## Relevant Summaries\n"
    "- Acme Corporation (customer:a1b2c3d4) is a long-standing customer with frequent large orders, "
    "typically in the technology sector.\n"
    "\n"
    "## Relevant Facts\n"
    "- Acme Corporation has industry: technology\n"
    "- Acme Corporation prefers payment terms: NET30\n"
    "- Acme Corporation has recent order: order:12345 (2024-01-15)\n"
    "\n"
    "## Relevant Past Interactions\n"
    "- User asked about Acme's payment status for invoice #789 (2 weeks ago)\n"
    "- User reviewed Acme's Q4 2023 order history and noted increase in order frequency (1 month ago)\n"
    "\n"
)


def test_augmentation_reproduces_seed_example_without_domain_rows() -> None:
    out = to_prompt(retrieval(acme_entries(), ACME_QUERY), "augmentation", now=NOW)
    assert out == ACME_CONTEXT + CLOSING


def test_augmentation_with_domain_rows_ends_like_seed_example() -> None:
    rows = (
        {"order_id": "order:12345", "date": "2024-01-15", "total": 1200},
        {"order_id": "order:12346", "date": "2024-01-20", "total": 80.5},
    )
    out = to_prompt(retrieval(acme_entries(), ACME_QUERY, domain_rows=rows), "augmentation", now=NOW)
    assert out == ACME_CONTEXT + (
        "# Domain Database Query Results\n"
        "\n"
        "- order_id: order:12345, date: 2024-01-15, total: 1200\n"
        "- order_id: order:12346, date: 2024-01-20, total: 80.5\n"
        "\n"
        "---\n"
        "\n"
        "Based on the above context and current data, please respond to the user's query.\n"
    )


def test_augmentation_procedures_and_fallbacks() -> None:
    proc = record(
        "When a customer disputes an invoice: pull the delivery proof", "procedure",
        trigger="a customer disputes an invoice", action="pull the delivery proof",
    )
    bare_proc = record("escalate after 3 days", "procedure")
    fact_no_triple = record("Acme's CFO is Dana", "fact")
    redacted = record("raw", "fact", subject="Dana", predicate="email", object="dana@acme.com")
    doc = record("Handbook says NET30", "document")
    out = to_prompt(
        retrieval(
            [
                entry(proc),
                entry(fact_no_triple),
                entry(bare_proc),
                entry(redacted, was_redacted=True, content="Dana email [REDACTED]"),
                entry(doc),
            ]
        ),
        "augmentation",
        now=NOW + timedelta(seconds=30),
    )
    assert (
        out
        == (
            "# Retrieved Context\n"
            "\n"
            'The following information from your memory may be relevant to the query: "q"\n'
            "\n"
            "## Relevant Procedures\n"
            "- When: a customer disputes an invoice\n"
            "  Then: pull the delivery proof\n"
            "- escalate after 3 days\n"
            "\n"
            "## Relevant Facts\n"
            "- Acme's CFO is Dana\n"
            "- Dana email [REDACTED]\n"
            "\n"
            "## Relevant Past Interactions\n"
            "- Handbook says NET30 (just now)\n"
            "\n"
        )
        + CLOSING
    )
    assert "dana@acme.com" not in out


def test_augmentation_empty_is_empty_string_but_rows_alone_render() -> None:
    assert to_prompt(retrieval([]), "augmentation", now=NOW) == ""
    out = to_prompt(retrieval([], domain_rows=({"a": 1},)), "augmentation", now=NOW)
    assert "# Domain Database Query Results\n\n- a: 1\n" in out
    assert "## Relevant" not in out


# -- helpers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        ("has_property", "Acme has color: red"),
        ("related_to", "Acme is related to color: red"),
        ("prefers", "Acme prefers color: red"),
        ("is_a", "Acme is a color: red"),
        ("Works At", "Acme works at color: red"),
        ("located-in", "Acme is located in color: red"),
        ("ships_via", "Acme ships via color: red"),
    ],
)
def test_format_semantic_triple(predicate: str, expected: str) -> None:
    assert format_semantic_triple("Acme", predicate, "color: red") == expected


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (timedelta(seconds=0), "just now"),
        (timedelta(seconds=59), "just now"),
        (timedelta(seconds=-30), "just now"),
        (timedelta(minutes=-5), "in the future"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(minutes=59, seconds=59), "59 minutes ago"),
        (timedelta(hours=1), "1 hour ago"),
        (timedelta(hours=23), "23 hours ago"),
        (timedelta(hours=24), "yesterday"),
        (timedelta(hours=47), "yesterday"),
        (timedelta(days=2), "2 days ago"),
        (timedelta(days=6), "6 days ago"),
        (timedelta(days=7), "1 week ago"),
        (timedelta(days=14), "2 weeks ago"),
        (timedelta(days=29), "4 weeks ago"),
        (timedelta(days=30), "1 month ago"),
        (timedelta(days=364), "12 months ago"),
        (timedelta(days=365), "1 year ago"),
        (timedelta(days=800), "2 years ago"),
    ],
)
def test_format_time_ago(delta: timedelta, expected: str) -> None:
    assert format_time_ago(NOW - delta, NOW) == expected


def test_format_time_ago_naive_means_utc() -> None:
    assert format_time_ago(datetime(2024, 2, 15, 8, 30), NOW) == "2 hours ago"


@given(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=20_000)))
def test_format_time_ago_monotone(delta: timedelta) -> None:
    order = ["just now", "minute", "hour", "yesterday", "day", "week", "month", "year"]

    def rank(text: str) -> int:
        return max(i for i, word in enumerate(order) if word in text)

    assert rank(format_time_ago(NOW - delta, NOW)) <= rank(format_time_ago(NOW - delta * 2, NOW))


@given(st.lists(st.sampled_from(["message", "fact", "summary", "procedure", "episode", "document", "chunk"])))
def test_every_memory_appears_once_in_policy(kinds: list[str]) -> None:
    entries = [entry(record(f"memory number {i}", kind)) for i, kind in enumerate(kinds)]
    out = to_prompt(retrieval(entries))
    for i in range(len(kinds)):
        assert out.count(f"memory number {i} ") + out.count(f"memory number {i}\n") == 1
    assert "_Retrieved" not in out


# -- the prompt is built only from the selected, redacted, clipped, budgeted text -----------------

LONG = " ".join(f"clause{i} of the long field" for i in range(300))  # ~7,800 characters


def _memory() -> Any:
    from engram.embedders.fake import FakeEmbedder
    from engram.memory import Memory

    return Memory(":memory:", embedder=FakeEmbedder(64))


def _config(**changes: Any) -> Any:
    from engram.config import RedactionConfig, RetrievalConfig

    return RetrievalConfig(min_score=0.0, top_k=10, redaction=RedactionConfig(enabled=True), **changes)


@pytest.mark.parametrize("style", ["policy", "augmentation"])
def test_prompt_does_not_leak_redacted_email_through_procedure(style: str) -> None:
    with _memory() as memory:
        memory.add("Answer billing questions from the finance inbox", user_id="u1", kind="procedure",
                   trigger="a customer writes to dana@acme.com", action="forward it to eve@acme.com")
        result = memory.retrieve("billing questions finance inbox", user_id="u1", config=_config(), now=NOW)
        assert result.memories, "the procedure must be retrieved for the test to mean anything"
        prompt = to_prompt(result, style, now=NOW)
    assert "Answer billing questions" in prompt
    assert "@acme.com" not in prompt


@pytest.mark.parametrize("style", ["policy", "augmentation"])
def test_prompt_does_not_leak_redacted_ssn_through_fact_triple(style: str) -> None:
    with _memory() as memory:
        memory.add("Dana's identity number is on file", user_id="u1", kind="fact",
                   subject="Dana", predicate="has_ssn", object="123-45-6789")
        result = memory.retrieve("Dana identity number", user_id="u1", config=_config(), now=NOW)
        assert result.memories
        prompt = to_prompt(result, style, now=NOW)
    assert "on file" in prompt and "123-45-6789" not in prompt


# Each memory line adds a bounded frame to its text (bullet, time, role, confidence, age).
FRAME_TOKENS = 16
HEADER_TOKENS = 80


@pytest.mark.parametrize("style", ["policy", "augmentation"])
def test_prompt_holds_the_token_budget(style: str) -> None:
    from engram.retrieve.select import estimate_tokens

    with _memory() as memory:
        for i in range(4):
            memory.add(f"Acme fact {i} about payment", user_id="u1", kind="fact",
                       subject="Acme", predicate="has_property", object=f"{i} {LONG}")
            memory.add(f"Acme procedure {i} about payment", user_id="u1", kind="procedure",
                       trigger=f"{i} {LONG}", action=LONG)
            memory.add(f"Acme message {i} about payment. {LONG}", user_id="u1", kind="message", role="assistant")
        result = memory.retrieve("Acme payment", user_id="u1", config=_config(max_tokens=100), now=NOW)
        prompt = to_prompt(result, style, now=NOW)
    assert result.memories
    assert sum(estimate_tokens(m.content) for m in result.memories) <= 100
    memory_lines = [line for line in prompt.splitlines() if line.startswith(("- ", "["))]
    assert len(memory_lines) == len(result.memories)
    assert sum(estimate_tokens(line) for line in memory_lines) <= 100 + FRAME_TOKENS * len(memory_lines)
    assert estimate_tokens(prompt) <= 100 + FRAME_TOKENS * len(memory_lines) + HEADER_TOKENS


@pytest.mark.parametrize("style", ["policy", "augmentation"])
def test_prompt_shows_updated_content_not_the_old_triple(style: str) -> None:
    with _memory() as memory:
        fact = memory.add("Acme pays NET30", user_id="u1", kind="fact",
                          subject="Acme", predicate="prefers", object="NET30")
        memory.update(fact.id, user_id="u1", content="Acme pays NET60")
        result = memory.retrieve("How does Acme pay", user_id="u1", config=_config(), now=NOW)
        assert result.memories
        prompt = to_prompt(result, style, now=NOW)
    assert "Acme pays NET60" in prompt and "NET30" not in prompt


def test_prompt_role_is_a_short_label_not_free_text() -> None:
    msg = record("hello", "message", role="x" * 200 + " dana@acme.com")
    out = to_prompt(retrieval([entry(msg)]))
    assert "dana@acme.com" not in out and "] user: hello" in out


def test_policy_messages_follow_the_presentation_order_with_their_times() -> None:
    question = record("Can you ship Friday?", "message", NOW - timedelta(minutes=5), role="user")
    answer = record("Yes, Friday works.", "message", NOW, role="assistant")
    # The question ranks first: it is read first (messages are not re-sorted by time, which made
    # interleave mean nothing for them); each line's time tells the model the order they happened in.
    text = to_prompt(retrieval([entry(question, 0.9), entry(answer, 0.5)]), "policy")
    assert text.index("Can you ship Friday?") < text.index("Yes, Friday works.")
    text = to_prompt(retrieval([entry(answer, 0.9), entry(question, 0.5)]), "policy")
    assert text.index("[2024-02-15 10:30 UTC] assistant: Yes, Friday works.") < text.index("Can you ship Friday?")


def test_augmentation_sections_start_with_the_best_memory() -> None:
    procedure = entry(record("When asked for a refund: check the invoice", "procedure"), 0.25)
    fact = entry(record("Acme pays NET30", "fact"), 0.13)
    answer = entry(record("Acme ordered 40 kg of espresso", "episode", NOW - timedelta(days=2)), 1.0)
    out = to_prompt(retrieval([answer, procedure, fact]), "augmentation", now=NOW)
    assert out.index("## Relevant Past Interactions") < out.index("## Relevant Procedures") < out.index(
        "## Relevant Facts")
    first = next(line for line in out.splitlines() if line.startswith("- "))
    assert first == "- Acme ordered 40 kg of espresso (2 days ago)"


def test_interleave_orders_the_prompt_and_names_the_same_order_in_the_payload() -> None:
    best = entry(record("best", "fact", NOW - timedelta(days=9)), 0.9)
    middle = entry(record("middle", "message", NOW - timedelta(days=1)), 0.5)
    newest = entry(record("newest", "message", NOW), 0.2)
    r = replace(retrieval([best, middle, newest]), metadata=replace(
        retrieval([]).metadata, config={"interleave": "alternate"}, included_results=3))
    assert [m.content for m in r.presented()] == ["best", "newest", "middle"]
    assert r.to_dict()["presentationOrder"] == [best.id, newest.id, middle.id]
    assert [m["id"] for m in r.to_dict()["memories"]] == [best.id, middle.id, newest.id]  # rank order
    text = to_prompt(r, "policy")
    assert text.index("best") < text.index("newest") < text.index("middle")


def test_interleave_ratio_weights_score_against_recency() -> None:
    # m1 ranks best and is the oldest; m8 ranks last and is the newest.
    ranked = [entry(record(f"m{i}", "fact", NOW - timedelta(days=10 - i)), 1 - i / 10) for i in range(1, 9)]
    order = [e.content for e in presentation_order(ranked, "alternate", 0.75)]
    assert order == ["m1", "m2", "m3", "m8", "m4", "m5", "m6", "m7"]
    assert [e.content for e in presentation_order(ranked, "alternate")] == [
        "m1", "m8", "m2", "m7", "m3", "m6", "m4", "m5"]
    assert [e.content for e in presentation_order(ranked, "alternate", 0.0)][:3] == ["m8", "m7", "m6"]


def test_presentation_order_interleaves_best_and_newest() -> None:
    best = entry(record("best", "fact", NOW - timedelta(days=9)), 0.9)
    newest = entry(record("newest", "fact", NOW), 0.2)
    middle = entry(record("middle", "fact", NOW - timedelta(days=1)), 0.5)
    ranked = [best, middle, newest]
    assert [e.content for e in presentation_order(ranked, "alternate")] == ["best", "newest", "middle"]
    assert [e.content for e in presentation_order(ranked, "score_first")] == ["best", "middle", "newest"]
    assert [e.content for e in presentation_order(ranked, "recency_first")] == ["newest", "middle", "best"]
