"""Editing an ingested document or a superseded version through ``update``.

A document's text is searched through its passages: an edit of the document's text left them
saying what it no longer did (the old text came back from every search), and archiving it left
them in retrieval. A superseded fact set active again stood beside the version that replaced it,
two current truths.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.errors import ValidationError
from engram.model import STATUSES, Filters, MemoryRecord

ANY = RetrievalConfig(min_score=0.0, top_k=20)
TEXT = "# Launch\n\nThe launch code is Quxinator-4471.\n\nShipping is free above 50 euros."


@pytest.fixture
def memory(each_backend: Memory) -> Memory:
    return each_backend


def _ingested(memory: Memory, tmp_path: Path) -> tuple[MemoryRecord, list[MemoryRecord]]:
    path = tmp_path / "launch.md"
    path.write_text(TEXT)
    memory.ingest([path], user_id="u")
    [document] = memory.list(user_id="u", filters=Filters(kinds=("document",), statuses=STATUSES))
    passages = memory.list(user_id="u", filters=Filters(kinds=("chunk",), statuses=STATUSES))
    assert passages
    return document, passages


def _found(memory: Memory) -> set[str]:
    return {e.id for e in memory.retrieve("launch code Quxinator-4471", user_id="u", config=ANY).memories
            if "Quxinator" in e.content}


def test_a_documents_text_changes_by_a_new_version_not_an_edit(memory: Memory, tmp_path: Path) -> None:
    document, [passage, *_] = _ingested(memory, tmp_path)
    for memory_id in (document.id, passage.id):
        with pytest.raises(ValidationError) as refused:
            memory.update(memory_id, user_id="u", content="(secret removed)")
        assert refused.value.field == "content" and "new version" in str(refused.value)
        with pytest.raises(ValidationError) as kind:
            memory.update(memory_id, user_id="u", kind="fact")
        assert kind.value.field == "kind"
    # A memory of those kinds that no ingest made (no passages, part of nothing) is edited as any other.
    loose = memory.add("A passage typed in by hand", user_id="u", kind="chunk")
    assert memory.update(loose.id, user_id="u", content="Typed in again").content == "Typed in again"
    assert memory.get(document.id, user_id="u").content == document.content  # nothing changed
    # Tags, importance and the like still change.
    assert memory.update(document.id, user_id="u", tags=["launch"]).tags == ("launch",)


def test_archiving_a_document_takes_its_passages_out_of_retrieval_and_back(memory: Memory, tmp_path: Path) -> None:
    document, passages = _ingested(memory, tmp_path)
    assert _found(memory)
    memory.update(document.id, user_id="u", status="archived")
    statuses = {r.status for r in memory.list(user_id="u", filters=Filters(kinds=("chunk",), statuses=STATUSES))}
    assert statuses == {"archived"}
    assert not _found(memory)
    memory.update(document.id, user_id="u", status="active")
    assert {r.status for r in memory.list(user_id="u", filters=Filters(kinds=("chunk",)))} == {"active"}
    assert len(memory.list(user_id="u", filters=Filters(kinds=("chunk",)))) == len(passages)
    assert _found(memory)


def test_a_superseded_version_is_not_set_current_beside_its_successor(memory: Memory) -> None:
    old = memory.add("Acme pays NET30", user_id="u", kind="fact", subject="Acme", predicate="payment terms",
                     object="NET30")
    new = memory.add("Acme now pays NET60", user_id="u", kind="fact", subject="Acme", predicate="payment terms",
                     object="NET60")
    assert memory.get(old.id, user_id="u").status == "superseded"
    with pytest.raises(ValidationError) as refused:
        memory.update(old.id, user_id="u", status="active")
    assert refused.value.field == "status"
    assert memory.get(old.id, user_id="u").status == "superseded"
    # Once its successor is deleted it is current again, as deleting a version promises.
    assert memory.delete(new.id, user_id="u")
    assert memory.get(old.id, user_id="u").status == "active"
