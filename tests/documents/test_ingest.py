"""File ingest: reading by type, chunking, discovery, versions, failures, batching, CLI."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from engram import Limits, Link, Memory, RetrievalConfig
from engram.context import Context
from engram.documents import document_versions, get_document
from engram.documents_cli import ingest_command
from engram.errors import ValidationError
from engram.ext import Embedder
from engram.ingest import writer
from engram.ingest.files import (
    CHUNK_MAX,
    CHUNK_MIN,
    FileResult,
    chunk_spans,
    discover,
    doc_key_for,
    html_to_text,
    ingest,
)
from engram.model import Filters, MemoryRecord

USER = "u1"
NOW = datetime(2025, 12, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=embedder) as m:
        yield m


def documents(memory: Memory, user: str = USER) -> list[MemoryRecord]:
    filters = Filters(kinds=("document",), statuses=("active", "superseded"))
    return memory.list(user_id=user, filters=filters, limit=1000)


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica, with a correct xref table."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# -- reading --------------------------------------------------------------------------------------


def test_html_text_drops_script_and_style_and_keeps_paragraphs() -> None:
    html = ("<html><head><title>Guide</title><style>p {color: red}</style><script>var secret = 1;</script>"
            "</head><body><h1>Storage</h1><p>Tom &amp; Jerry <b>live</b> here.</p><p>Second</p></body></html>")
    assert html_to_text(html) == "Guide\n\nStorage\n\nTom & Jerry live here.\n\nSecond"


def test_html_rst_pdf_and_text_are_read(memory: Memory, tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("<p>Hello <i>web</i></p><script>alert('x')</script>")
    (tmp_path / "guide.rst").write_text("Guide\n=====\n\nA *restructured* text.\r\n")
    (tmp_path / "paper.pdf").write_bytes(minimal_pdf("Hello PDF world"))
    (tmp_path / "notes.txt").write_text("\ufeffplain notes")  # a BOM is not content
    report = ingest(memory, [tmp_path], user_id=USER, now=NOW)
    assert report.counts["new"] == 4, report.files
    by_name = {r.metadata["filename"]: r for r in documents(memory)}
    assert by_name["page.html"].content == "Hello web"
    assert by_name["guide.rst"].content == "Guide\n=====\n\nA *restructured* text."
    assert "Hello PDF world" in by_name["paper.pdf"].content
    assert by_name["notes.txt"].content == "plain notes"
    assert by_name["paper.pdf"].metadata["format"] == "pdf"


# -- chunking -------------------------------------------------------------------------------------


def test_chunks_are_exact_slices_cut_at_paragraphs_within_bounds() -> None:
    paragraphs = [f"Paragraph {i}. " + "Some words in a sentence. " * (8 + i % 7) for i in range(30)]
    text = "\n\n".join(p.strip() for p in paragraphs)
    spans = chunk_spans(text)
    assert len(spans) > 5
    assert all(e - s <= CHUNK_MAX for s, e in spans)
    assert all(e - s >= CHUNK_MIN for s, e in spans[:-1])
    assert all(text[e:e + 2] == "\n\n" for _, e in spans[:-1])  # each cut falls on a paragraph break
    assert "".join(text[s:e] for s, e in spans).replace("\n", "") == text.replace("\n", "")


def test_chunking_falls_back_to_sentences_then_hard_cuts() -> None:
    text = "A sentence that goes on. " * 200  # one paragraph
    spans = chunk_spans(text.strip())
    assert all(CHUNK_MIN <= e - s <= CHUNK_MAX for s, e in spans[:-1])
    assert all(text[e - 1] == "." for _, e in spans)
    blob = "x" * 3000  # no boundary at all
    assert chunk_spans(blob) == [(0, 1200), (1200, 2400), (2400, 3000)]
    assert chunk_spans("short") == [(0, 5)]


# -- discovery ------------------------------------------------------------------------------------


def test_directories_recurse_globs_match_and_missing_paths_fail(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    for name in ("a/one.md", "a/b/two.rst", "a/b/three.md", "a/skip.png", ".git/HEAD.md", "a/.hidden.md"):
        (tmp_path / name).write_text("x")
    files, failed = discover([tmp_path])
    assert sorted(p.name for p in files) == ["one.md", "three.md", "two.rst"]
    assert failed == []
    files, failed = discover([str(tmp_path / "**" / "*.md"), tmp_path / "a" / "one.md", str(tmp_path / "none" / "*.md"),
                              tmp_path / "missing.md"])
    assert sorted(p.name for p in files) == ["one.md", "three.md"]  # deduplicated
    assert [(f.status, f.reason) for f in failed] == [
        ("failed", "pattern matched no files"), ("failed", "no such file or directory")]
    files, _ = discover([str(tmp_path / "a" / "*")])
    assert sorted(p.name for p in files) == ["one.md", "three.md", "two.rst"]  # the directory b is walked too


def test_explicit_unsupported_binary_empty_and_non_utf8_files_fail_with_reasons(memory: Memory, tmp_path: Path) -> None:
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / "empty.md").write_text("   \n")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "binary.txt").write_bytes(b"ab\x00cd")
    (tmp_path / "good.md").write_text("fine")
    names = ["image.png", "empty.md", "latin.txt", "binary.txt", "good.md", "gone.md"]
    report = ingest(memory, [tmp_path / n for n in names], user_id=USER)
    reasons = {Path(r.path).name: r.reason for r in report.failed}
    assert set(reasons) == {"image.png", "empty.md", "latin.txt", "binary.txt", "gone.md"}
    assert "unsupported file type '.png'" in (reasons["image.png"] or "")
    assert "no text" in (reasons["empty.md"] or "")
    assert "not UTF-8" in (reasons["latin.txt"] or "")
    assert "NUL" in (reasons["binary.txt"] or "")
    assert report.counts == {"new": 1, "changed": 0, "unchanged": 0, "forced": 0, "failed": 5}
    assert [r.metadata["filename"] for r in documents(memory)] == ["good.md"]


def test_a_file_over_the_content_limit_fails_alone(tmp_path: Path, embedder: Embedder) -> None:
    (tmp_path / "big.md").write_text("word " * 400)
    (tmp_path / "small.md").write_text("small")
    with Memory(tmp_path / "m.db", embedder=embedder, limits=Limits(max_content_chars=1000)) as memory:
        report = ingest(memory, [tmp_path], user_id=USER)
        assert [(Path(r.path).name, r.status) for r in report.files] == [("big.md", "failed"), ("small.md", "new")]
        assert "the limit is 1000" in (report.failed[0].reason or "")
        assert len(documents(memory)) == 1


# -- what is stored -------------------------------------------------------------------------------


def test_document_and_chunks_carry_the_ingest_invariants(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "memory_storage.md"
    path.write_text("\n\n".join(f"Section {i}. " + "Memories are stored in sectors. " * 12 for i in range(6)))
    report = ingest(memory, [path], user_id=USER, tags=["docs", "file_ingest", "docs"], topic="design",
                    note="from the session", provider="evert", now=NOW)
    result = report.files[0]
    assert (result.status, result.version) == ("new", 1) and result.chunks > 1
    doc = memory.get(result.memory_id or "", user_id=USER)
    assert doc.kind == "document" and doc.tags == ("file_ingest", "docs")
    assert doc.created_at == NOW and doc.doc_key == doc_key_for(path) and doc.version == 1
    meta: Mapping[str, Any] = doc.metadata
    assert {k: meta[k] for k in ("kind", "filename", "path", "ingested_at", "topic", "note", "provider")} == {
        "kind": "file_ingest", "filename": "memory_storage.md", "path": str(path.resolve()),
        "ingested_at": "2025-12-01T09:30:00+00:00", "topic": "design", "note": "from the session",
        "provider": "evert"}
    assert (meta["doc_key"], meta["version"]) == (doc.doc_key, 1)
    chunks = memory.list(user_id=USER, filters=Filters(kinds=("chunk",)), limit=100)
    assert len(chunks) == result.chunks
    for chunk in chunks:
        assert chunk.tags == ("docs",)
        assert chunk.metadata["filename"] == "memory_storage.md" and chunk.metadata["version"] == 1
        assert chunk.metadata["doc_key"] == doc.doc_key
        start, end = chunk.metadata["start"], chunk.metadata["end"]
        assert doc.content[start:end] == chunk.content
        assert [(lk.to_id, lk.type) for lk in memory.links(chunk.id, user_id=USER)] == [(doc.id, "part_of")]
    assert sorted(c.metadata["chunk"] for c in chunks) == list(range(len(chunks)))


def test_retrieve_finds_passages_of_documents(memory: Memory, tmp_path: Path) -> None:
    filler = "\n\n".join("The office kitchen schedule rotates every week among the teams. " * 10 for _ in range(3))
    passage = "The backup server replicates the Postgres database to Frankfurt every night at 02:00."
    (tmp_path / "ops.md").write_text(filler + "\n\n" + passage + "\n\n" + filler)
    ingest(memory, [tmp_path / "ops.md"], user_id=USER, tags=["ops"])
    result = memory.retrieve("where is the database replicated to?", user_id=USER)
    chunks = [m for m in result.memories if m.type == "chunk"]
    assert chunks, [m.type for m in result.memories]
    best = chunks[0]
    assert best.record is not None and best.record.metadata["filename"] == "ops.md"
    assert "Frankfurt" in best.record.content and best.reasons  # content itself is clipped to 2 sentences


# -- versions -------------------------------------------------------------------------------------


def test_unchanged_adds_nothing_force_and_changes_add_versions_keeping_earlier(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("first")
    assert ingest(memory, [path], user_id=USER, now=NOW).files[0].status == "new"
    again = ingest(memory, [path], user_id=USER, now=NOW + timedelta(days=1)).files[0]
    assert (again.status, again.version) == ("unchanged", 1)
    path.write_text("first\r\n")  # line endings and trailing space are not a change
    assert ingest(memory, [path], user_id=USER).files[0].status == "unchanged"
    forced = ingest(memory, [path], user_id=USER, force=True, now=NOW + timedelta(days=2)).files[0]
    assert (forced.status, forced.version) == ("forced", 2)
    path.write_text("second")
    changed = ingest(memory, [path], user_id=USER, force=True, now=NOW + timedelta(days=3)).files[0]
    assert (changed.status, changed.version) == ("changed", 3)
    versions = document_versions(memory, "notes.md", user_id=USER)
    assert [(d.version, d.content) for d in versions] == [(1, "first"), (2, "first"), (3, "second")]
    assert get_document(memory, {"filename": "notes.md"}, user_id=USER).content == "second"
    assert len(documents(memory)) == 3
    other = ingest(memory, [path], user_id="someone-else").files[0]  # versions are per user
    assert (other.status, other.version) == ("new", 1)


def test_a_new_version_supersedes_earlier_passages_and_keeps_them(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "refunds.md"
    path.write_text("Refunds are accepted within 14 days of purchase.")
    first = ingest(memory, [path], user_id=USER, now=NOW).files[0]
    path.write_text("Refunds are accepted within 30 days of purchase.")
    second = ingest(memory, [path], user_id=USER, now=NOW + timedelta(days=1)).files[0]
    old = memory.get(first.memory_id or "", user_id=USER)
    assert (old.status, old.valid_to) == ("superseded", NOW + timedelta(days=1))
    assert Link(second.memory_id or "", old.id, "supersedes") in memory.links(old.id, user_id=USER)
    current = memory.retrieve("within how many days are refunds accepted?", user_id=USER)
    assert current.memories and all("30 days" in m.content for m in current.memories)
    history = memory.retrieve("within how many days are refunds accepted?", user_id=USER,
                              config=RetrievalConfig(include_superseded=True))
    assert any("14 days" in m.content for m in history.memories)
    assert get_document(memory, {"filename": "refunds.md"}, user_id=USER, strategy="earliest").content == \
        "Refunds are accepted within 14 days of purchase."


def test_many_files_go_through_few_add_many_calls(memory: Memory, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(40):
        (tmp_path / f"f{i:02}.md").write_text(f"Note number {i} about topic {i % 5}.")
    calls: list[int] = []
    real = writer.add_many

    def counting(context: Context, items: Any) -> list[MemoryRecord]:
        batch = list(items)
        calls.append(len(batch))
        return real(context, batch)

    # The write path ingest goes through (Memory.add_many is wiring over the same function).
    monkeypatch.setattr(writer, "add_many", counting)
    seen: list[tuple[str, int, int]] = []

    def progress(result: FileResult, done: int, total: int) -> None:
        seen.append((result.status, done, total))

    report = ingest(memory, str(tmp_path / "*.md"), user_id=USER, progress=progress)
    assert report.counts["new"] == 40 and report.documents_added == 40 and report.chunks_added == 40
    assert calls == [80]
    assert seen == [("new", i, 40) for i in range(1, 41)]
    assert [Path(r.path).name for r in report.files] == [f"f{i:02}.md" for i in range(40)]


def test_bad_arguments_are_validation_errors(memory: Memory, tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        ingest(memory, [tmp_path], user_id="")
    with pytest.raises(ValidationError):
        ingest(memory, [tmp_path], user_id=USER, tags="docs")
    with pytest.raises(ValidationError):
        ingest(memory, [tmp_path], user_id=USER, topic="  ")
    with pytest.raises(ValidationError):
        ingest(memory, [tmp_path], user_id=USER, now=datetime(2025, 1, 1))  # naive


# -- CLI ------------------------------------------------------------------------------------------


def test_cli_ingest_reports_each_status(tmp_path: Path) -> None:
    root = click.Group("engram")
    root.add_command(ingest_command)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("alpha")
    (docs / "b.md").write_text("beta")
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    first = runner.invoke(root, ["ingest", str(docs), "--user", USER, "--tag", "docs", "--topic", "t", "--db", db])
    assert first.exit_code == 0, first.output
    assert "2 new" in first.output and "2 versions, 2 chunks added" in first.output
    (docs / "b.md").write_text("beta, revised")
    second = runner.invoke(root, ["ingest", str(docs / "*.md"), str(tmp_path / "missing.md"), "--user", USER,
                                  "--db", db], env={"COLUMNS": "200"})
    assert second.exit_code == 1
    assert "1 changed, 1 unchanged, 1 failed" in second.output
    assert "no such file or directory" in second.output
    forced = runner.invoke(root, ["ingest", str(docs / "a.md"), "--force", "--db", db], env={"ENGRAM_USER": USER})
    assert forced.exit_code == 0 and "1 forced" in forced.output
    assert os.path.exists(db)


# -- symlinks -------------------------------------------------------------------------------------


def symlinked_tree(tmp_path: Path) -> Path:
    """docs/ holding one real file, links out of it (a file and a folder), two folder loops and a
    file loop; outside/ holding what must not be read by default."""
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    (docs / "sub").mkdir(parents=True)
    outside.mkdir()
    (docs / "inside.md").write_text("inside text")
    (docs / "sub" / "deep.md").write_text("deep text")
    (outside / "secret.md").write_text("secret outside text")
    (docs / "secret.md").symlink_to(outside / "secret.md")
    (docs / "ext").symlink_to(outside, target_is_directory=True)
    (docs / "sub" / "up").symlink_to(docs, target_is_directory=True)  # a loop through the parent
    (docs / "sub" / "self").symlink_to(docs / "sub", target_is_directory=True)  # and through itself
    (docs / "sub" / "self2").symlink_to(docs / "sub", target_is_directory=True)
    (docs / "ping.md").symlink_to(docs / "pong.md")  # a file loop
    (docs / "pong.md").symlink_to(docs / "ping.md")
    return docs


def test_directory_ingest_does_not_follow_symlinks_out_of_the_tree(memory: Memory, tmp_path: Path) -> None:
    docs = symlinked_tree(tmp_path)
    report = ingest(memory, [docs], user_id=USER)
    assert sorted(r.metadata["filename"] for r in documents(memory)) == ["deep.md", "inside.md"]
    reasons = {Path(r.path).name: r.reason or "" for r in report.failed}
    assert set(reasons) == {"secret.md", "ext", "ping.md", "pong.md"}, reasons
    assert "outside" in reasons["secret.md"] and "follow_symlinks=True" in reasons["secret.md"]
    assert "outside" in reasons["ext"]
    assert "cannot read" in reasons["ping.md"]  # the loop fails alone
    hits = memory.search_keywords(["secret"], user_id=USER)
    assert not hits

    followed = ingest(memory, [docs], user_id=USER, follow_symlinks=True)
    assert {Path(r.path).name for r in followed.failed} == {"ping.md", "pong.md"}
    names = sorted(r.metadata["filename"] for r in documents(memory))
    assert names == ["deep.md", "inside.md", "secret.md"]  # outside/secret.md once, through either link


def test_a_glob_does_not_follow_symlinks_out_of_its_folder_nor_around_loops(tmp_path: Path) -> None:
    docs = symlinked_tree(tmp_path)
    # glob.glob would walk docs/sub/self/self2/self/... exponentially; each real folder is seen once.
    files, failed = discover([str(docs / "**" / "*.md")])
    assert sorted(p.name for p in files) == ["deep.md", "inside.md", "ping.md", "pong.md"]
    assert sorted(Path(f.path).name for f in failed) == ["ext", "secret.md"]
    files, failed = discover([str(docs / "**" / "*.md")], follow_symlinks=True)
    assert sorted(p.name for p in files) == ["deep.md", "inside.md", "ping.md", "pong.md", "secret.md"]
    assert failed == []
    files, failed = discover([str(docs / "*")])
    assert sorted(p.name for p in files) == ["deep.md", "inside.md", "ping.md", "pong.md"]
    assert sorted(Path(f.path).name for f in failed) == ["ext", "secret.md"]
    # A file named explicitly is read wherever it leads: that is what was asked for.
    files, failed = discover([docs / "secret.md"])
    assert files == [(tmp_path / "outside" / "secret.md").resolve()] and failed == []


def test_cli_ingest_follows_symlinks_out_of_the_tree_only_with_the_flag(tmp_path: Path) -> None:
    root = click.Group("engram")
    root.add_command(ingest_command)
    docs = symlinked_tree(tmp_path)
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    first = runner.invoke(root, ["ingest", str(docs), "--user", USER, "--db", db], env={"COLUMNS": "300"})
    assert first.exit_code == 1 and "2 new" in first.output and "outside" in first.output, first.output
    second = runner.invoke(root, ["ingest", str(docs), "--user", USER, "--db", db, "--follow-symlinks"],
                           env={"COLUMNS": "300"})
    assert "1 new, 2 unchanged" in second.output, second.output


def test_memory_ingest_passes_follow_symlinks_through(memory: Memory, tmp_path: Path) -> None:
    docs = symlinked_tree(tmp_path)
    memory.ingest([docs], user_id=USER)
    assert "secret.md" not in {r.metadata["filename"] for r in documents(memory)}
    memory.ingest([docs], user_id=USER, follow_symlinks=True)
    assert "secret.md" in {r.metadata["filename"] for r in documents(memory)}
