"""Ingest files as versioned document memories plus retrievable chunks (the document lookup's ``memory_ingest``).

Each ingest of a changed file stores one ``document`` memory holding the full text (tagged
``file_ingest``, the invariant document retrieval relies on) and its ``chunk`` memories linked
``part_of`` it, so the general ``retrieve()`` finds passages while ``get_document`` finds whole files.
Earlier versions are all kept, marked ``superseded`` (documents and chunks, ``valid_to`` set, the new
document ``supersedes`` the old) so general retrieval quotes current text unless asked for history
(``include_superseded`` or ``as_of``); document retrieval still sees every version.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.context import context_of
from engram.errors import ValidationError
from engram.ingest import writer
from engram.ingest.normalize import content_hash, normalize, to_utc
from engram.model import STATUSES, Filters, Link, new_id

if TYPE_CHECKING:
    from engram.context import Context, ContextSource

__all__ = [
    "FILE_INGEST", "SUPPORTED", "FileResult", "IngestReport", "chunk_spans", "discover", "doc_key_for",
    "html_to_text", "ingest", "read_document",
]

FILE_INGEST = "file_ingest"
SUPPORTED = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text",
    ".rst": "rst", ".html": "html", ".htm": "html", ".pdf": "pdf",
}
STATUSES_OF_FILES = ("new", "changed", "unchanged", "forced", "failed")
CHUNK_MIN, CHUNK_MAX = 800, 1200
# Flushing many files' records in one add_many lets the embedder sort and batch across files, which
# is where ingest throughput comes from; the character bound keeps memory use flat for big files.
FLUSH_RECORDS, FLUSH_CHARS = 1024, 4_000_000

_GLOB_MAGIC = re.compile(r"[*?[]")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE = re.compile(r"[.!?][\"')\]]*\s+|\n\s*")
_SPACE = re.compile(r"\s+")


class _FileFailure(Exception):
    """A reason one file cannot be ingested; the others go on."""


@dataclass(frozen=True, slots=True)
class FileResult:
    """What happened to one file: new | changed | unchanged | forced | failed (with the reason)."""

    path: str
    status: str
    reason: str | None = None
    doc_key: str | None = None
    version: int | None = None
    memory_id: str | None = None
    chunks: int = 0


@dataclass(frozen=True, slots=True)
class IngestReport:
    files: tuple[FileResult, ...] = ()
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    @property
    def documents_added(self) -> int:
        return sum(1 for f in self.files if f.status in ("new", "changed", "forced"))

    @property
    def chunks_added(self) -> int:
        return sum(f.chunks for f in self.files if f.status in ("new", "changed", "forced"))


def doc_key_for(path: Path) -> str:
    """The stable identity of a file across re-ingests: sha256 of its absolute resolved path, 16 hex.

    A digest rather than the path itself: fixed length (ids are capped at 256 characters, paths are
    not), and no separators to escape in filters. The path stays readable in ``metadata.path``.
    """
    return hashlib.sha256(_real(path).encode("utf-8", "surrogateescape")).hexdigest()[:16]


# -- reading --------------------------------------------------------------------------------------

_BLOCK_TAGS = frozenset({"p", "div", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "tr", "table",
                         "section", "article", "header", "footer", "pre", "blockquote", "title", "dd", "dt", "dl",
                         "figure", "figcaption", "main", "nav", "aside", "form"})


class _HTMLText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            # Block boundaries become paragraph breaks so chunking still finds them.
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible text of an HTML page, paragraphs kept, scripts and styles dropped."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _read_pdf(path: Path) -> str:
    try:
        from pypdf import PdfReader
    except ImportError as exc:
        raise _FileFailure("reading PDF needs pypdf (pip install 'engram-memory[pdf]')") from exc
    try:
        reader = PdfReader(str(path))
        encrypted = reader.is_encrypted
        pages = [] if encrypted else [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # pypdf raises many types for damaged files; each is this file's failure
        raise _FileFailure(f"unreadable PDF: {exc}") from exc
    if encrypted:
        raise _FileFailure("encrypted PDF")
    return "\n\n".join(p.strip() for p in pages if p.strip())


def read_document(path: Path, max_chars: int) -> str:
    """The text to store for one file, or a ``_FileFailure`` saying why there is none."""
    kind = SUPPORTED.get(path.suffix.lower())
    if kind is None:
        raise _FileFailure(f"unsupported file type {path.suffix or '(none)'!r}; supported: {', '.join(SUPPORTED)}")
    try:
        if kind == "pdf":
            text = _read_pdf(path)
        else:
            # UTF-8 needs at most 4 bytes a character: a bigger file is over the limit unread.
            if path.stat().st_size > 4 * max_chars + 4:
                raise _FileFailure(f"file is {path.stat().st_size} bytes, over the {max_chars}-character limit")
            data = path.read_bytes()
            if b"\x00" in data:
                raise _FileFailure("binary content (NUL bytes)")
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise _FileFailure(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
            if kind == "html":
                text = html_to_text(text)
    except OSError as exc:
        raise _FileFailure(f"cannot read: {exc.strerror or exc}") from exc
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()
    if not text:
        raise _FileFailure("no text (empty file, or a PDF without a text layer)")
    if len(text) > max_chars:
        # Storing a truncated document would answer "the latest version" with a lie; refuse instead.
        raise _FileFailure(f"text is {len(text)} characters; the limit is {max_chars} (Limits.max_content_chars)")
    return text


# -- chunking -------------------------------------------------------------------------------------


def _last_cut(cuts: Sequence[int], low: int, high: int) -> int | None:
    i = bisect_right(cuts, high) - 1
    return cuts[i] if i >= 0 and cuts[i] >= low else None


def chunk_spans(text: str, min_chars: int = CHUNK_MIN, max_chars: int = CHUNK_MAX) -> list[tuple[int, int]]:
    """(start, end) offsets of chunks of at most ``max_chars``, cut at paragraph, else sentence or
    line, else word boundaries, preferring cuts that leave at least ``min_chars``.

    Offsets rather than strings so a chunk is an exact slice of the document (formatting intact).
    """
    paragraphs = [m.end() for m in _PARAGRAPH.finditer(text)]
    sentences = [m.end() for m in _SENTENCE.finditer(text)]
    words = [m.end() for m in _SPACE.finditer(text)]
    spans: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > max_chars:
        high = start + max_chars
        cut = (
            _last_cut(paragraphs, start + min_chars, high)
            or _last_cut(sentences, start + min_chars, high)
            # A shorter chunk ending at a boundary beats one cut mid-sentence.
            or _last_cut(paragraphs, start + min_chars // 4, high)
            or _last_cut(sentences, start + min_chars // 4, high)
            or _last_cut(words, start + min_chars // 4, high)
            or high
        )
        spans.append((start, cut))
        start = cut
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        piece = text[s:e]
        if piece.strip():
            # Trimmed offsets, so text[start:end] is exactly the stored chunk.
            out.append((s + len(piece) - len(piece.lstrip()), e - len(piece) + len(piece.rstrip())))
    return out


# -- discovery ------------------------------------------------------------------------------------


def _real(path: Path) -> str:
    # os.path.realpath, not Path.resolve: on a symlink loop resolve raises RuntimeError, which
    # would abort the whole ingest; realpath returns the path, and reading it then fails alone.
    return os.path.realpath(path)


def _within(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(slots=True)
class _Scope:
    """Where one directory walk or pattern may lead: inside ``root`` (a real path) unless ``follow``.

    Symlinks are what can lead out: a folder is only entered through a path that stays inside, so
    a file that is not itself a symlink is inside too. Each real folder is entered once, which is
    what ends symlink loops (even inside the tree) and keeps aliases from multiplying the walk.
    """

    root: str
    follow: bool
    refused: dict[str, FileResult]
    entered: set[tuple[str, int]] = field(default_factory=set)

    def admits(self, path: Path) -> bool:
        if self.follow or not os.path.islink(path):
            return True
        real = _real(path)
        if _within(real, self.root):
            return True
        # Keyed by where the link itself really is, so a loop reaching it twice reports it once.
        self.refused.setdefault(os.path.join(_real(path.parent), path.name), FileResult(
            str(path), "failed", f"symlink to {real}, outside {self.root}: not followed "
            "(follow_symlinks=True, or --follow-symlinks, ingests it)"))
        return False

    def enter(self, folder: Path, step: int = -1) -> bool:
        """Whether to look inside ``folder`` (once per real folder and pattern step)."""
        if not self.admits(folder):
            return False
        key = (_real(folder), step)
        if key in self.entered:
            return False
        self.entered.add(key)
        return True


def _entries(folder: Path, hidden: bool = False) -> tuple[list[Path], list[Path]]:
    """A folder's subfolders and other entries, sorted by name; hidden names only when asked."""
    try:
        with os.scandir(folder) as scan:
            names = sorted(e.name for e in scan if hidden or not e.name.startswith("."))
    except OSError:
        return [], []  # an unreadable folder holds nothing to ingest, as os.walk treats it
    dirs: list[Path] = []
    others: list[Path] = []
    for name in names:
        path = folder / name
        try:
            is_dir = path.is_dir()
        except OSError:  # a symlink loop: kept as a file, so reading it fails with the reason
            is_dir = False
        (dirs if is_dir else others).append(path)
    return dirs, others


def _walk(root: Path, scope: _Scope) -> Iterator[Path]:
    """Supported, visible files under ``root``, depth first in name order; hidden folders (.git,
    .venv) are tooling, not documents."""
    if not scope.enter(root):
        return
    stack = [root]
    while stack:
        dirs, files = _entries(stack.pop())
        yield from (p for p in files if p.suffix.lower() in SUPPORTED and scope.admits(p))
        stack.extend(reversed([d for d in dirs if scope.enter(d)]))


def _glob(pattern: str, follow: bool, refused: dict[str, FileResult]) -> tuple[list[Path], _Scope]:
    """What a glob pattern matches, as ``glob.glob(recursive=True)`` would, but within the scope of
    the folder before its first wildcard, and visiting each real folder once per ``**``.

    Not glob.glob itself: its ``**`` follows every symlinked folder, so one folder linking to its
    parent twice makes it walk an exponential number of paths, and links out of the tree are followed.
    """
    parts = Path(pattern).parts
    first = next(i for i, part in enumerate(parts) if _GLOB_MAGIC.search(part))
    base = Path(*parts[:first]) if first else Path(os.curdir)
    scope = _Scope(_real(base), follow, refused)
    found: dict[Path, None] = {}
    # (folder, index of the next pattern part) still to match; the pattern is short, so this stack
    # is bounded by the tree, never by how its paths repeat.
    todo: list[tuple[Path, int]] = [(base, first)]
    while todo:
        folder, step = todo.pop()
        if step == len(parts):
            found[folder] = None
            continue
        part, last = parts[step], step == len(parts) - 1
        if part == "**":
            # Zero or more visible folders: this one, then each below it, once per real folder.
            if scope.enter(folder, step):
                todo.append((folder, step + 1))
                todo.extend((d, step) for d in _entries(folder)[0])
            continue
        if not _GLOB_MAGIC.search(part):
            path = folder / part
            if (os.path.lexists(path) if last else path.is_dir()) and scope.admits(path):
                todo.append((path, step + 1))
            continue
        dirs, others = _entries(folder, hidden=part.startswith("."))
        for path in dirs + (others if last else []):
            if fnmatch.fnmatchcase(path.name, part) and scope.admits(path):
                todo.append((path, step + 1))
    return sorted(found, key=str), scope


def discover(
    paths: Iterable[str | os.PathLike[str]], *, follow_symlinks: bool = False,
) -> tuple[list[Path], list[FileResult]]:
    """Absolute files to ingest (deduplicated, in order) and failures for paths that name nothing.

    A file named explicitly is always attempted (an unsupported type then fails with a reason);
    files found by walking a directory or matching a pattern are kept only when supported. A
    symlink met while walking a directory, or matched by a pattern, that resolves outside that
    directory (for a pattern: the folder before its first wildcard) is not followed but reported
    as failed, unless ``follow_symlinks``: ingesting a folder must not read whatever it links to.
    A path named explicitly is followed wherever it leads; that is what was asked for.
    """
    found: dict[Path, None] = {}
    missing: list[FileResult] = []
    refused: dict[str, FileResult] = {}
    for raw in paths:
        text = os.path.expanduser(os.fspath(raw))
        if os.path.exists(text):
            target = Path(text)
            if not target.is_dir():
                found[Path(_real(target))] = None
                continue
            matches, scope, explicit = [target], _Scope(_real(target), follow_symlinks, refused), True
        elif _GLOB_MAGIC.search(text):
            before = len(refused)
            matches, scope = _glob(text, follow_symlinks, refused)
            explicit = False
            if not matches and len(refused) == before:  # else the refusals say why nothing matched
                missing.append(FileResult(text, "failed", "pattern matched no files"))
        else:
            missing.append(FileResult(text, "failed", "no such file or directory"))
            continue
        for match in matches:
            if match.is_dir():
                found.update((Path(_real(p)), None) for p in _walk(match, scope))
            elif explicit or match.suffix.lower() in SUPPORTED:
                found[Path(_real(match))] = None
    return list(found), missing + list(refused.values())


# -- ingest ---------------------------------------------------------------------------------------


# One file waiting for its batch: its result, its records, the chunk ids to link part_of it, and the
# id of the version it replaces.
_Pending = tuple[FileResult, list[dict[str, Any]], list[str], str | None]


def _write_pending(source: ContextSource, user: str, pending: Sequence[_Pending], when: datetime) -> None:
    """Store a batch of files: their records, each chunk linked part_of its document, and each new
    version superseding the one before (directory ingest and HTTP uploads both end here).

    The links go straight to the store: both ends were inserted just above, so the existence checks
    of ``Memory.link`` (two reads per link) would only cost time; the caches are invalidated once."""
    context = context_of(source)
    writer.add_many(context, [item for _, items, _, _ in pending for item in items])
    store = context.store
    for result, _, chunk_ids, previous_id in pending:
        document_id = result.memory_id or ""
        for chunk_id in chunk_ids:
            store.add_link(user, Link(chunk_id, document_id, "part_of", 1.0))
        if previous_id is not None:
            _supersede(context, user, result, previous_id, when)
    context.wrote(user)


def _supersede(context: Context, user: str, result: FileResult, previous_id: str, when: datetime) -> None:
    filters = Filters(kinds=("document", "chunk"), metadata={"doc_key": result.doc_key or ""})
    for old in context.store.list(user, filters, limit=10_000):
        if (old.version or 0) < (result.version or 0):
            context.store.replace(replace(old, status="superseded", valid_to=when), None)
    # The previous version was read before this call wrote anything, but another writer may have
    # deleted it since: linked through the checked path, which refuses a missing end.
    writer.link(context, result.memory_id or "", previous_id, "supersedes", 1.0, user_id=user)


def _latest(source: ContextSource, user_id: str, doc_key: str) -> tuple[int, str, str] | None:
    """(version, content hash, id) of a file's newest version, whatever its status."""
    context = context_of(source)
    filters = Filters(kinds=("document",), statuses=STATUSES, metadata={"doc_key": doc_key})
    versions = context.store.list(user_id, filters, limit=10_000)
    best = max(versions, key=lambda r: r.version or 0, default=None)
    return (best.version or 0, best.content_hash, best.id) if best is not None else None


def _file_items(text: str, user: str, tags: list[str], when: datetime, base: dict[str, Any],
                doc_meta: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The document record and its chunk records (with ids, so links can follow the insert)."""
    doc_id, spans = new_id(), chunk_spans(text)
    common = {"user_id": user, "created_at": when, "doc_key": base["doc_key"], "version": base["version"]}
    items: list[dict[str, Any]] = [{
        **common, "id": doc_id, "content": text, "kind": "document", "tags": [FILE_INGEST, *tags],
        "metadata": {"kind": FILE_INGEST, **base, **doc_meta, "chunks": len(spans)},
    }]
    for index, (start, end) in enumerate(spans):
        items.append({
            **common, "id": new_id(), "content": text[start:end], "kind": "chunk", "tags": tags,
            "metadata": {"kind": "file_chunk", **base, "chunk": index, "chunks": len(spans), "start": start,
                         "end": end, "document_id": doc_id},
        })
    return items, [i["id"] for i in items[1:]]


def ingest(
    source: ContextSource, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, user_id: str,
    tags: Sequence[str] = (), topic: str | None = None, note: str | None = None, provider: str | None = None,
    force: bool = False, now: datetime | None = None, progress: Callable[[FileResult, int, int], None] | None = None,
    follow_symlinks: bool = False,
) -> IngestReport:
    """Ingest files, directories (recursively) and glob patterns as versioned documents.

    ``now`` fixes ``ingested_at`` (tests and imports of history); ``progress(result, done, total)``
    is called as each file's outcome is final. Symlinks found inside a directory or by a pattern
    are followed only where they stay inside it, unless ``follow_symlinks`` (see ``discover``).
    """
    started = time.perf_counter()
    context = context_of(source)
    user = context.user(user_id)
    if isinstance(tags, str) or any(not isinstance(t, str) or not t.strip() for t in tags):
        raise ValidationError("tags", "must be a list of non-empty strings")
    for value, name in ((topic, "topic"), (note, "note"), (provider, "provider")):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValidationError(name, "must be a non-empty string when given")
    when = to_utc(now, "now") if now is not None else datetime.now(UTC)
    stamp = when.isoformat()
    user_tags = list(dict.fromkeys(t for t in tags if t != FILE_INGEST))
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files, results = discover(paths, follow_symlinks=follow_symlinks)
    total = len(files) + len(results)
    done: list[FileResult] = []

    def finish(result: FileResult) -> None:
        done.append(result)
        if progress is not None:
            progress(result, len(done), total)

    for result in results:
        finish(result)
    # Look every file's previous version up before writing anything, so lookups never scan this
    # call's own inserts.
    keys = {path: doc_key_for(path) for path in files}
    latest = {path: _latest(context, user, keys[path]) for path in files}
    pending: list[_Pending] = []
    size = [0, 0]

    def flush() -> None:
        if not pending:
            return
        _write_pending(context, user, pending, when)
        for result, _, _, _ in pending:
            finish(result)
        pending.clear()
        size[0] = size[1] = 0

    for path in files:
        key = keys[path]
        try:
            text = read_document(path, context.limits.max_content_chars)
        except _FileFailure as exc:
            finish(FileResult(str(path), "failed", str(exc), key))
            continue
        previous = latest[path]
        if previous is not None and previous[1] == content_hash(text) and not force:
            finish(FileResult(str(path), "unchanged", None, key, previous[0], previous[2]))
            continue
        status = "new" if previous is None else ("forced" if previous[1] == content_hash(text) else "changed")
        version = 1 if previous is None else previous[0] + 1
        base = {"filename": path.name, "path": str(path), "doc_key": key, "version": version, "ingested_at": stamp}
        doc_meta = {"topic": topic, "note": note, "provider": provider, "format": SUPPORTED.get(path.suffix.lower())}
        items, chunk_ids = _file_items(text, user, user_tags, when, base, doc_meta)
        try:
            # Validate here, per file, so one bad file fails alone instead of its whole batch.
            for item in items:
                normalize(item, limits=context.limits, now=when)
        except ValidationError as exc:
            finish(FileResult(str(path), "failed", str(exc), key))
            continue
        pending.append((FileResult(str(path), status, None, key, version, items[0]["id"], len(chunk_ids)), items,
                        chunk_ids, previous[2] if previous else None))
        size[0] += len(items)
        size[1] += sum(len(i["content"]) for i in items)
        if size[0] >= FLUSH_RECORDS or size[1] >= FLUSH_CHARS:
            flush()
    flush()
    order = {str(p): i for i, p in enumerate(files)}
    ordered = sorted(done, key=lambda r: order.get(r.path, -1))
    counts = {s: sum(1 for r in ordered if r.status == s) for s in STATUSES_OF_FILES}
    return IngestReport(tuple(ordered), time.perf_counter() - started, counts)
