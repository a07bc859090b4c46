"""Seed 000 document retrieval: one version of one ingested file, with the seed's exact semantics."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from engram import Memory
from engram.default_memory import close_default_memory, retrieve_document_from_metadata
from engram.documents import (
    DEFAULT_QUERY,
    build_query,
    document_versions,
    get_default_user_id,
    get_document,
    required_tags,
)
from engram.documents_cli import doc_group, ingest_command
from engram.errors import DocumentNotFound, ValidationError
from engram.ext import Embedder
from engram.ingest.files import ingest
from engram.model import MemoryRecord

USER = "evert"
T1 = datetime(2025, 12, 1, 10, 0, tzinfo=UTC)
T2 = datetime(2025, 12, 3, 10, 0, tzinfo=UTC)
T3 = datetime(2025, 12, 5, 10, 0, tzinfo=UTC)
T4 = datetime(2025, 12, 6, 10, 0, tzinfo=UTC)
TAGS = ["llm-thalamus", "docs", "design"]
META = {"filename": "memory_storage.md", "topic": "llm-thalamus memory design", "tags": TAGS}

V1 = "# llm-thalamus – Memory Storage Guide\n\nVersion one: memories live in OpenMemory sectors."
V2 = (
    "# llm-thalamus – Memory Storage Guide\n\nVersion two: memories live in OpenMemory sectors.\n\n"
    "Each ingest stores the full file and tags it file_ingest, so retrieval can find it by filename."
)
V3 = "# llm-thalamus – Memory Storage Guide\n\nVersion three: short."


def put(memory: Memory, folder: Path, name: str, text: str, when: datetime, tags: Sequence[str] = TAGS,
        **fields: Any) -> None:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    report = ingest(memory, [path], user_id=fields.pop("user_id", USER), tags=tags, now=when, **fields)
    assert report.failed == [], report.failed


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=embedder) as m:
        yield m


@pytest.fixture
def seeded(memory: Memory, tmp_path: Path) -> Memory:
    """Three versions of memory_storage.md, a later unrelated document, and chatter about the file."""
    docs = tmp_path / "docs"
    docs.mkdir()
    put(memory, docs, "memory_storage.md", V1, T1, topic="llm-thalamus memory design", provider="evert")
    put(memory, docs, "memory_storage.md", V2, T2, topic="llm-thalamus memory design", provider="evert")
    put(memory, docs, "memory_storage.md", V3, T3, topic="llm-thalamus memory design", provider="evert")
    put(memory, docs, "retrieval_notes.md", "# Retrieval notes\n\nHow thalamus ranks memories.", T4)
    memory.add("Please reread memory_storage.md, the llm-thalamus memory design doc, and " + "x" * 3000,
               user_id=USER, kind="message", tags=["file_ingest", *TAGS])
    return memory


def fetch(memory: Memory, meta: dict[str, Any] | None = None, **kwargs: Any) -> str:
    return retrieve_document_from_metadata(META if meta is None else meta, user_id=USER, memory=memory, **kwargs)


# -- the seed's four examples ---------------------------------------------------------------------


def test_6_1_latest_is_the_newest_version_of_the_named_file(seeded: Memory) -> None:
    assert fetch(seeded) == V3


def test_6_2_as_of_selects_the_newest_version_at_or_before(seeded: Memory) -> None:
    assert fetch(seeded, strategy="latest", as_of="2025-12-04T09:00:00+00:00") == V2
    assert fetch(seeded, as_of="2025-12-04T11:00:00+02:00") == V2  # same instant, another offset
    assert fetch(seeded, as_of="2025-12-03T10:00:00Z") == V2  # the bound is inclusive
    assert fetch(seeded, as_of=datetime(2025, 12, 2, tzinfo=UTC)) == V1


def test_6_3_earliest(seeded: Memory) -> None:
    assert fetch(seeded, strategy="earliest") == V1


def test_6_4_longest(seeded: Memory) -> None:
    assert fetch(seeded, strategy="longest") == V2


def test_score_strategy_uses_the_cosine_of_the_one_search(seeded: Memory) -> None:
    doc = get_document(seeded, META, user_id=USER, strategy="score")
    assert doc.filename == "memory_storage.md"
    assert doc.score is not None and -1.0 <= doc.score <= 1.0
    others = [get_document(seeded, META, user_id=USER, strategy=s).score for s in ("latest", "earliest")]
    assert all(s is not None and s <= doc.score for s in others)


def test_document_carries_its_provenance(seeded: Memory, tmp_path: Path) -> None:
    doc = get_document(seeded, META, user_id=USER)
    assert (doc.content, doc.filename, doc.version, doc.ingested_at) == (V3, "memory_storage.md", 3, T3)
    assert doc.path == str((tmp_path / "docs" / "memory_storage.md").resolve())
    assert doc.doc_key and len(doc.doc_key) == 16
    assert seeded.get(doc.memory_id, user_id=USER).kind == "document"


# -- fallbacks ------------------------------------------------------------------------------------


def test_tags_no_candidate_has_fall_back_to_all(seeded: Memory) -> None:
    assert fetch(seeded, {**META, "tags": ["no-such-tag"]}) == V3


def test_as_of_before_every_version_falls_back_to_latest_overall(seeded: Memory) -> None:
    assert fetch(seeded, as_of="2020-01-01T00:00:00+00:00") == V3


def test_no_meta_fields_uses_the_default_query(seeded: Memory) -> None:
    assert build_query({}) == DEFAULT_QUERY
    # Without a filename the seed's latest is the most recently ingested document of all.
    assert fetch(seeded, {}) == "# Retrieval notes\n\nHow thalamus ranks memories."


def test_query_construction() -> None:
    assert build_query({"file_name": "a.md", "topic": "t", "note": "n", "provider": "evert"}) == \
        "a.md t n provided by evert"
    assert build_query({"query": "explicit", "filename": "a.md"}) == "explicit"
    assert build_query({"topic": "t"}) == "t"


def test_filename_and_file_name_are_both_accepted(seeded: Memory) -> None:
    assert fetch(seeded, {"file_name": "memory_storage.md"}, strategy="earliest") == V1
    assert fetch(seeded, {"filename": "retrieval_notes.md"}, strategy="earliest").startswith("# Retrieval notes")


# -- tie-breakers ---------------------------------------------------------------------------------

CATS = "Cats purr, chase mice and nap in the sun on the windowsill all afternoon."
BONDS = "Bond yields rose as the central bank raised interest rates again today."


def test_same_ingested_at_the_longer_wins(memory: Memory, tmp_path: Path) -> None:
    (tmp_path / "short.md").write_text("Tie breaker document.")
    (tmp_path / "long.md").write_text("Tie breaker document, the longer of the two versions.")
    ingest(memory, [tmp_path / "short.md", tmp_path / "long.md"], user_id=USER, tags=["tie"], now=T1)
    assert fetch(memory, {"tags": ["tie"]}) == "Tie breaker document, the longer of the two versions."


def test_same_time_and_length_the_higher_score_wins(memory: Memory, tmp_path: Path) -> None:
    width = max(len(CATS), len(BONDS))
    (tmp_path / "cats.md").write_text(CATS.ljust(width, "."))
    (tmp_path / "bonds.md").write_text(BONDS.ljust(width, "."))
    ingest(memory, [tmp_path], user_id=USER, tags=["tie"], now=T1)
    for strategy in ("latest", "longest", "score"):
        assert fetch(memory, {"topic": "cats purring kittens", "tags": ["tie"]}, strategy=strategy).startswith("Cats")
        assert fetch(memory, {"topic": "interest rates bond market"}, strategy=strategy).startswith("Bond")


def test_candidate_without_ingested_at_is_kept_by_as_of_and_sorts_last_for_earliest(
    memory: Memory, tmp_path: Path
) -> None:
    put(memory, tmp_path, "timed.md", "A timed document about gardening.", T2, tags=["garden"])
    memory.add("An untimed document about gardening.", user_id=USER, kind="document", tags=["file_ingest", "garden"],
               metadata={"kind": "file_ingest", "filename": "untimed.md"}, created_at=T1)
    meta = {"topic": "gardening", "tags": ["garden"]}
    assert fetch(memory, meta, strategy="earliest") == "A timed document about gardening."
    assert fetch(memory, meta) == "A timed document about gardening."  # None sorts as datetime.min
    assert fetch(memory, meta, as_of="2025-12-02T00:00:00+00:00") == "An untimed document about gardening."


# -- tags -----------------------------------------------------------------------------------------


def test_required_tags_dedup_in_order() -> None:
    meta = {"tags": ["docs", "file_ingest", "design", "docs"]}
    assert required_tags(meta, ["llm-thalamus", "docs"]) == ["file_ingest", "llm-thalamus", "docs", "design"]
    assert required_tags({}) == ["file_ingest"]
    assert required_tags({"tags": "single"}) == ["file_ingest", "single"]


def test_tags_are_and_ed_and_default_tags_apply(memory: Memory, tmp_path: Path) -> None:
    ingest_one = put
    ingest_one(memory, tmp_path, "a.md", "Alpha team handbook.", T1, tags=["team", "alpha"])
    ingest_one(memory, tmp_path, "b.md", "Beta team handbook.", T2, tags=["team", "beta"])
    assert fetch(memory, {"topic": "team handbook", "tags": ["team"]}) == "Beta team handbook."
    assert fetch(memory, {"topic": "team handbook", "tags": ["team", "alpha"]}) == "Alpha team handbook."
    assert fetch(memory, {"topic": "team handbook"}, default_tags=["alpha"]) == "Alpha team handbook."


# -- the tag invariant ----------------------------------------------------------------------------


def test_a_message_mentioning_the_file_is_never_a_document(memory: Memory, tmp_path: Path) -> None:
    chatter = "memory_storage.md memory_storage.md llm-thalamus memory design " * 40
    memory.add(chatter, user_id=USER, kind="message", tags=["file_ingest", *TAGS],
               metadata={"kind": "file_ingest", "filename": "memory_storage.md", "ingested_at": T4.isoformat()})
    memory.add(chatter, user_id=USER, kind="fact", tags=["file_ingest"], metadata={"filename": "memory_storage.md"})
    with pytest.raises(DocumentNotFound):
        fetch(memory)
    put(memory, tmp_path, "memory_storage.md", V1, T1)
    for strategy in ("latest", "earliest", "longest", "score"):
        assert fetch(memory, strategy=strategy) == V1
    assert fetch(memory, {"query": chatter}) == V1


# -- errors ---------------------------------------------------------------------------------------


def test_no_documents_is_a_typed_not_found(memory: Memory) -> None:
    with pytest.raises(DocumentNotFound) as info:
        fetch(memory)
    assert isinstance(info.value, LookupError)
    assert info.value.code == "DOCUMENT_NOT_FOUND"


def test_unknown_strategy_and_bad_as_of_are_validation_errors(seeded: Memory) -> None:
    with pytest.raises(ValidationError, match="latest, earliest, longest, score"):
        fetch(seeded, strategy="newest")
    for bad in ("yesterday", "2025-13-01T00:00:00+00:00", "2025-12-04T09:00:00", ""):
        with pytest.raises(ValidationError) as info:
            fetch(seeded, as_of=bad)
        assert info.value.field == "as_of"
    with pytest.raises(ValidationError):
        fetch(seeded, k=0)


def test_a_document_without_content_is_a_value_error(seeded: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    real = seeded.store.fetch

    def hollow(user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        return [dataclasses.replace(r, content="") for r in real(user_id, ids)]

    monkeypatch.setattr(seeded.store, "fetch", hollow)
    with pytest.raises(ValueError, match="no content"):
        fetch(seeded)


# -- defaults, versions, CLI ----------------------------------------------------------------------


def test_default_user_and_default_memory(tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_USER", raising=False)
    assert get_default_user_id() == "default"
    monkeypatch.setenv("ENGRAM_USER", "alice")
    monkeypatch.setenv("ENGRAM_DB", str(tmp_path / "default.db"))
    assert get_default_user_id() == "alice"
    with Memory(tmp_path / "default.db", embedder=embedder) as memory:
        put(memory, tmp_path, "memory_storage.md", V1, T1, user_id="alice")
    try:
        assert retrieve_document_from_metadata(META) == V1
        with pytest.raises(DocumentNotFound):
            retrieve_document_from_metadata(META, user_id="bob")
    finally:
        close_default_memory()


def test_document_versions_by_filename_or_key(seeded: Memory) -> None:
    versions = document_versions(seeded, "memory_storage.md", user_id=USER)
    assert [(d.version, d.content, d.ingested_at) for d in versions] == [(1, V1, T1), (2, V2, T2), (3, V3, T3)]
    key = versions[0].doc_key
    assert key is not None
    assert [d.version for d in document_versions(seeded, key, user_id=USER)] == [1, 2, 3]
    assert document_versions(seeded, "nothing.md", user_id=USER) == []
    assert document_versions(seeded, "memory_storage.md", user_id="someone-else") == []


@pytest.fixture
def root() -> click.Group:
    group = click.Group("engram")
    group.add_command(ingest_command)
    group.add_command(doc_group)
    return group


def test_cli_doc_get_and_versions(root: click.Group, tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    (tmp_path / "memory_storage.md").write_text(V1)
    runner = CliRunner()
    result = runner.invoke(root, ["ingest", str(tmp_path / "memory_storage.md"), "--user", USER, "--tag", "docs",
                                  "--db", db])
    assert result.exit_code == 0, result.output
    (tmp_path / "memory_storage.md").write_text(V2)
    again = runner.invoke(root, ["ingest", str(tmp_path / "memory_storage.md"), "--user", USER, "--db", db])
    assert again.exit_code == 0
    got = runner.invoke(root, ["doc", "get", "--user", USER, "--filename", "memory_storage.md", "--db", db])
    assert got.exit_code == 0 and got.output == V2 + "\n"
    first = runner.invoke(root, ["doc", "get", "--user", USER, "--filename", "memory_storage.md",
                                 "--strategy", "earliest", "--tag", "docs", "--db", db])
    assert first.output == V1 + "\n"
    listed = runner.invoke(root, ["doc", "versions", "memory_storage.md", "--user", USER, "--db", db])
    assert listed.exit_code == 0 and "2 versions" in listed.output
    missing = runner.invoke(root, ["doc", "versions", "nope.md", "--user", USER, "--db", db])
    assert missing.exit_code == 1 and "no ingested document" in missing.output
    bad = runner.invoke(root, ["doc", "get", "--user", USER, "--as-of", "soon", "--db", db])
    assert isinstance(bad.exception, ValidationError)


# -- filename and path are store filters, applied before ranking ------------------------------------


def test_get_document_returns_the_named_file_among_120_documents(tmp_path: Path) -> None:
    # With more documents than k (50) candidates, the named file used to be missing from the one
    # vector search, and "some other document" came back; an unknown name returned one too.
    from engram.embedders.fake import FakeEmbedder

    with Memory(tmp_path / "many.db", embedder=FakeEmbedder(64)) as memory:
        folder = tmp_path / "many"
        folder.mkdir()
        for i in range(120):
            (folder / f"doc_{i:03d}.md").write_text(f"# Planning notes {i}\n\nGeneral notes about project planning.")
        report = ingest(memory, [folder], user_id=USER, now=T1)
        assert report.documents_added == 120
        wrong = [i for i in range(120)
                 if get_document(memory, {"filename": f"doc_{i:03d}.md"}, user_id=USER).filename != f"doc_{i:03d}.md"]
        assert wrong == []
        with pytest.raises(DocumentNotFound):
            get_document(memory, {"filename": "does_not_exist.md"}, user_id=USER)
        path = str((folder / "doc_007.md").resolve())
        assert get_document(memory, {"path": path}, user_id=USER).path == path
        with pytest.raises(DocumentNotFound):
            get_document(memory, {"path": "/nowhere/doc_007.md"}, user_id=USER)


def test_get_document_with_a_filename_sees_every_version_beyond_k(memory: Memory, tmp_path: Path) -> None:
    for version in range(1, 8):
        put(memory, tmp_path, "log.md", f"Log entry version {version}.", datetime(2025, 1, version, tzinfo=UTC))
    put(memory, tmp_path, "other.md", "Something else.", datetime(2025, 2, 1, tzinfo=UTC))
    got = get_document(memory, {"filename": "log.md"}, user_id=USER, k=3)
    assert got.content == "Log entry version 7." and got.version == 7
    first = get_document(memory, {"filename": "log.md"}, user_id=USER, k=3, strategy="earliest")
    assert first.content == "Log entry version 1."
