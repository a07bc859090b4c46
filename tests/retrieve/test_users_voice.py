"""A user named by their user id ("What does Alice like?" of user ``alice``, as Mem0's examples name
users) is the one who says the user's own messages."""

from __future__ import annotations

from pathlib import Path

from engram import Memory
from engram.ext import Embedder
from engram.retrieve.understand import about_the_user

CHAT = [
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it, Alice! I'll suggest sci-fi movies."},
    {"role": "user", "content": "My sister Alice-Mae says hi."},
    {"role": "assistant", "content": "Alice, here are some thrillers you might like: Se7en, Zodiac."},
]


def test_the_meaning_source_reads_the_user_named_by_id_as_the_user() -> None:
    assert about_the_user("Which genre does Alice love?", "alice") == "Which genre does the user love?"
    assert about_the_user("What is Alice's favorite color?", "alice") == "What is the user's favorite color?"
    # Not a name written as one, not a user id that is a name, not another name that begins with it.
    assert about_the_user("mark the invoice as paid", "mark") == "mark the invoice as paid"
    assert about_the_user("What does Alice like?", "u-123") == "What does Alice like?"
    assert about_the_user("What does Alicia like?", "alice") == "What does Alicia like?"


def test_the_users_own_words_answer_a_question_about_them(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add(CHAT, user_id="alice")
        result = memory.retrieve("Which genre does Alice love?", user_id="alice")
        first = result.memories[0]
        assert first.content == CHAT[0]["content"] and first.signals["entity_overlap"] == 1.0
        # The assistant's turns that only address her count as mentions, half.
        addressed = next(m for m in result.memories if m.content == CHAT[1]["content"])
        assert addressed.signals["entity_overlap"] == 0.5
        # Another user's memories are not hers: the same words under user "bob" name no speaker.
        memory.add(CHAT[:1], user_id="bob")
        theirs = memory.retrieve("Which genre does Alice love?", user_id="bob").memories
        assert all(m.signals.get("entity_overlap", 0.0) == 0.0 for m in theirs)


def test_a_name_the_user_gave_themselves_is_theirs(tmp_path: Path, embedder: Embedder) -> None:
    # An opaque user id; the user said who they are. Their own messages are then Maya's.
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add([
            {"role": "user", "content": "Hi! I'm Maya, I run Kestrel Office Tech."},
            {"role": "user", "content": "Don't ring me after 7pm unless something is on fire."},
            {"role": "assistant", "content": "Noted, Maya: no calls after 7pm."},
        ], user_id="u-7f3a")
        result = memory.retrieve("Can I phone Maya in the evening?", user_id="u-7f3a")
        hers = next(m for m in result.memories if m.content.startswith("Don't ring me"))
        assert hers.signals["entity_overlap"] == 1.0 and "mentions mention:maya" in hers.reasons
        assert next(m for m in result.memories if m.role == "assistant").signals["entity_overlap"] == 0.5


def test_what_is_no_self_introduction() -> None:
    from datetime import UTC, datetime

    from engram.ingest.entities import self_declared
    from engram.ingest.entity_index import EntityIndex
    from engram.model import MemoryRecord

    def said(content: str, role: str = "user") -> MemoryRecord:
        now = datetime(2026, 11, 29, tzinfo=UTC)
        return MemoryRecord(id="m", user_id="u", content=content, role=role, created_at=now, recorded_at=now,
                            content_hash="h", kind="message")

    index = EntityIndex()
    assert self_declared(said("Hi! I'm Maya, I run Kestrel."), index) == "mention:maya"
    assert self_declared(said("My name is Dana."), index) == "mention:dana"
    assert self_declared(said("I'm sorry, I'm late."), index) is None  # not a name
    assert self_declared(said("I'm Maya.", role="assistant"), index) is None  # not the user's own words


def test_a_shared_scopes_self_introduction_names_only_its_own_user(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add([{"role": "user", "content": "Hi! I'm Maya, I keep the shared knowledge base."}], user_id="kb")
        memory.add([{"role": "user", "content": "Don't ring me after 7pm unless something is on fire."}],
                   user_id="u-7f3a")
        result = memory.retrieve("Can I phone Maya in the evening?", user_id="u-7f3a", also=["kb"])
        mine = next(m for m in result.memories if m.content.startswith("Don't ring me"))
        assert mine.signals.get("entity_overlap", 0.0) == 0.0
