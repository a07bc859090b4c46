"""Several scopes in one retrieval: a user's memories and a shared knowledge base, ranked together."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram import Memory, RetrievalConfig
from engram.errors import ValidationError

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def fill(memory: Memory) -> None:
    day = NOW - timedelta(days=3)
    memory.add_many([
        {"content": "Alice is on the Pro plan and pays yearly.", "user_id": "alice", "created_at": day},
        {"content": "Alice prefers e-mail over phone calls.", "user_id": "alice", "created_at": day},
        {"content": "Refunds on the Pro plan are prorated by the remaining months.", "user_id": "kb",
         "created_at": day, "kind": "fact"},
        {"content": "Password resets are done from the login page.", "user_id": "kb", "created_at": day},
        {"content": "Bob asked for a refund of his Pro plan last week.", "user_id": "bob", "created_at": day},
    ])


def test_a_user_and_a_shared_scope_rank_together(each_backend: Memory) -> None:
    fill(each_backend)
    result = each_backend.retrieve("How are refunds on the Pro plan computed?", user_id="alice", also=["kb"],
                                   now=NOW, config=RetrievalConfig(top_k=5))
    by_text = {m.content: m for m in result.memories}
    best = result.memories[0]
    assert best.content.startswith("Refunds on the Pro plan") and best.collection == "user:kb"
    assert by_text["Alice is on the Pro plan and pays yearly."].collection == "user:alice"
    # Another user's memories stay out, however well they match.
    assert not any("Bob" in m.content for m in result.memories)


def test_without_also_only_the_users_own_memories(each_backend: Memory) -> None:
    fill(each_backend)
    result = each_backend.retrieve("How are refunds on the Pro plan computed?", user_id="alice", now=NOW)
    assert result.memories and {m.collection for m in result.memories} == {"user:alice"}


def test_a_write_to_the_shared_scope_shows_at_once(each_backend: Memory) -> None:
    fill(each_backend)
    query = "When is the office closed for holidays?"
    first = each_backend.retrieve(query, user_id="alice", also=["kb"], now=NOW)
    assert not any("holidays" in m.content for m in first.memories)
    each_backend.add("The office is closed for holidays from Dec 24 to Jan 2.", user_id="kb",
                     created_at=NOW - timedelta(days=1))
    again = each_backend.retrieve(query, user_id="alice", also=["kb"], now=NOW)
    assert again.memories[0].content.startswith("The office is closed for holidays")


def test_a_user_with_no_memories_still_gets_the_shared_ones(each_backend: Memory) -> None:
    fill(each_backend)
    result = each_backend.retrieve("How do I reset my password?", user_id="newcomer", also=["kb"], now=NOW)
    assert result.metadata.error is None
    assert result.memories and result.memories[0].content.startswith("Password resets")


@pytest.mark.parametrize("bad", ["kb", [""], [None]])
def test_also_is_a_list_of_ids(each_backend: Memory, bad: object) -> None:
    with pytest.raises(ValidationError) as err:
        each_backend.retrieve("refunds", user_id="alice", also=bad)  # type: ignore[arg-type]
    assert "also" in str(err.value)


def test_names_are_counted_over_every_scope(each_backend: Memory) -> None:
    from types import SimpleNamespace

    from engram.retrieve.scopes import Scopes

    fill(each_backend)
    scopes = Scopes(each_backend.store, ["alice", "kb", "bob"])
    counts, size = scopes.entity_shares("alice", ["mention:alice", "mention:bob", "mention:nobody"], 10)
    assert (counts, size) == ({"mention:alice": 2, "mention:bob": 1, "mention:nobody": 0}, 5)
    # a store older than the method counts nothing, so every name counts fully
    assert Scopes(SimpleNamespace(), ["alice"]).entity_shares("alice", ["mention:alice"], 10) == (  # type: ignore[arg-type]
        {"mention:alice": 0}, 0)


def test_a_shared_scopes_memory_is_not_logged_under_the_asker(each_backend: Memory) -> None:
    """Deleting a shared memory clears its own user's logs: kept in the asker's log its id would
    outlive it, and feedback on it would count uses of another user's memory."""
    fill(each_backend)
    result = each_backend.retrieve("How are refunds on the Pro plan computed?", user_id="alice", also=["kb"],
                                   now=NOW, config=RetrievalConfig(top_k=5))
    shared = next(m for m in result.memories if m.collection == "user:kb")
    own = next(m for m in result.memories if m.collection == "user:alice")
    logged = each_backend.store.get_retrieval("alice", result.metadata.retrieval_id or "")
    assert logged is not None and own.id in logged.returned_ids() and shared.id not in logged.returned_ids()
    with pytest.raises(ValidationError):
        each_backend.feedback(result.metadata.retrieval_id or "", [shared.id], user_id="alice")
    each_backend.feedback(result.metadata.retrieval_id or "", [own.id], user_id="alice")
