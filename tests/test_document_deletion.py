"""Deleting a version of an ingested document (issue 12, item 9, for documents).

Deleting the newest version of a superseded fact made the previous one current again; a document
version left the previous version superseded (so general retrieval quoted nothing of the file) and
its own passages active (so retrieval kept quoting the deleted text).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.ingest import truth
from engram.model import STATUSES, Filters, MemoryRecord

ANY = RetrievalConfig(min_score=0.0, top_k=20)
TEXTS = (
    "Refunds are accepted within 30 days.\n\nShipping is free above 50 euros.",
    "Refunds are accepted within 14 days.\n\nShipping is free above 80 euros.",
    "Refunds are accepted within 7 days.\n\nShipping is free above 99 euros.",
)


@pytest.fixture
def memory(each_backend: Memory) -> Memory:
    return each_backend


def _versions(memory: Memory, tmp_path: Path, count: int) -> list[MemoryRecord]:
    """Ingest ``count`` versions of policy.md; their document records, oldest first."""
    path = tmp_path / "policy.md"
    for text in TEXTS[:count]:
        path.write_text(text)
        memory.ingest([path], user_id="u")
    return _documents(memory)


def _documents(memory: Memory) -> list[MemoryRecord]:
    found = memory.list(user_id="u", filters=Filters(kinds=("document",), statuses=STATUSES), limit=100)
    return sorted(found, key=lambda r: r.version or 0)


def _passages(memory: Memory) -> dict[str, tuple[str, object]]:
    """Each passage's text -> (status, valid_to)."""
    found = memory.list(user_id="u", filters=Filters(kinds=("chunk",), statuses=STATUSES), limit=100)
    return {r.content: (r.status, r.valid_to) for r in found}


def _quoted(memory: Memory) -> set[str]:
    return {e.content for e in memory.retrieve("refunds accepted days shipping", user_id="u", config=ANY).memories}


def test_deleting_the_newest_document_version_makes_the_previous_current_again(memory: Memory, tmp_path: Path) -> None:
    v1, v2 = _versions(memory, tmp_path, 2)
    assert (v1.status, v2.status) == ("superseded", "active")
    assert memory.delete(v2.id, user_id="u")

    [back] = _documents(memory)
    assert (back.id, back.status, back.valid_to) == (v1.id, "active", None)
    assert _passages(memory) == {TEXTS[0]: ("active", None)}  # its passage is current, the deleted one gone
    assert not any("14 days" in text for text in _quoted(memory))
    assert any("30 days" in text for text in _quoted(memory))
    assert memory.get_document({"filename": "policy.md"}, user_id="u").memory_id == v1.id
    assert memory.links(v1.id, user_id="u") == [link for link in memory.links(v1.id, user_id="u")
                                                 if link.type == "part_of"]

    # The file's history goes on from there: the next version supersedes the reinstated one.
    (tmp_path / "policy.md").write_text(TEXTS[2])
    [result] = memory.ingest([tmp_path / "policy.md"], user_id="u").files
    assert (result.status, result.version) == ("changed", 2)
    old, new = _documents(memory)
    assert (old.id, old.status, new.status) == (v1.id, "superseded", "active")


def test_deleting_a_middle_document_version_links_its_neighbours(memory: Memory, tmp_path: Path) -> None:
    v1, v2, v3 = _versions(memory, tmp_path, 3)
    assert memory.delete(v2.id, user_id="u")
    first, last = _documents(memory)
    assert (first.id, first.status, first.valid_to) == (v1.id, "superseded", v3.created_at)
    assert (last.id, last.status) == (v3.id, "active")
    assert any(link.type == "supersedes" and link.from_id == v3.id for link in memory.links(v1.id, user_id="u"))
    assert _passages(memory) == {TEXTS[0]: ("superseded", v3.created_at), TEXTS[2]: ("active", None)}


def test_deleting_an_earlier_document_version_leaves_the_current_one(memory: Memory, tmp_path: Path) -> None:
    v1, v2 = _versions(memory, tmp_path, 2)
    assert memory.delete(v1.id, user_id="u")
    [current] = _documents(memory)
    assert (current.id, current.status, current.valid_to) == (v2.id, "active", None)
    assert _passages(memory) == {TEXTS[1]: ("active", None)}


def test_a_document_delete_interrupted_half_way_finishes_when_repeated(memory: Memory, tmp_path: Path) -> None:
    v1, v2 = _versions(memory, tmp_path, 2)
    truth.withdraw_document(memory.store, "u", v2)  # as if the process died before the row went
    assert memory.delete(v2.id, user_id="u")
    [back] = _documents(memory)
    assert (back.id, back.status, back.valid_to) == (v1.id, "active", None)
    assert _passages(memory) == {TEXTS[0]: ("active", None)}


def test_sqlite_delete_many_is_delete_of_each_in_one_transaction(tmp_path: Path) -> None:
    with Memory(tmp_path / "many.db", embedder=FakeEmbedder()) as memory:
        old = memory.add("Acme pays NET30", user_id="u", kind="fact", subject="Acme", predicate="terms", object="NET30")
        new = memory.add("Acme pays NET60", user_id="u", kind="fact", subject="Acme", predicate="terms", object="NET60")
        note = memory.add("Acme pays on time", user_id="u")
        memory.retrieve("Acme pays", user_id="u", config=ANY)  # the user's vector index is loaded
        store = memory.store
        vector = store.vectors("u", [old.id])[old.id]
        assert getattr(store, "delete_many")("u", [new.id, note.id, new.id, "missing"]) == 2  # noqa: B009
        assert memory.get(old.id, user_id="u").status == "active"  # reinstated as one delete would
        found = [memory_id for memory_id, _ in store.vector_search("u", vector, 10, Filters())]
        assert found == [old.id]  # the cached index saw the removals and the status change
