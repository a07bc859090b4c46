"""Finding and reading the files to ingest: discovery (directories, globs, symlink scope), text
extraction (Markdown, text, reStructuredText, HTML, PDF) and chunking into passages. No writes.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from engram.extras import install_line

__all__ = [
    "CHUNK_MAX", "CHUNK_MIN", "FILE_INGEST", "STATUSES_OF_FILES", "SUPPORTED", "FileFailure", "FileResult",
    "chunk_spans", "discover", "doc_key_for", "html_to_text", "read_document",
]

FILE_INGEST = "file_ingest"
SUPPORTED = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text",
    ".rst": "rst", ".html": "html", ".htm": "html", ".pdf": "pdf",
}
STATUSES_OF_FILES = ("new", "changed", "unchanged", "forced", "failed")
CHUNK_MIN, CHUNK_MAX = 800, 1200

_GLOB_MAGIC = re.compile(r"[*?[]")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE = re.compile(r"[.!?][\"')\]]*\s+|\n\s*")
_SPACE = re.compile(r"\s+")


class FileFailure(Exception):
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
        raise FileFailure(f"reading PDF needs the pdf extra: {install_line('pdf')}") from exc
    try:
        reader = PdfReader(str(path))
        encrypted = reader.is_encrypted
        pages = [] if encrypted else [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # pypdf raises many types for damaged files; each is this file's failure
        raise FileFailure(f"unreadable PDF: {exc}") from exc
    if encrypted:
        raise FileFailure("encrypted PDF")
    return "\n\n".join(p.strip() for p in pages if p.strip())


def read_document(path: Path, max_chars: int) -> str:
    """The text to store for one file, or a ``FileFailure`` saying why there is none."""
    kind = SUPPORTED.get(path.suffix.lower())
    if kind is None:
        raise FileFailure(f"unsupported file type {path.suffix or '(none)'!r}; supported: {', '.join(SUPPORTED)}")
    try:
        if kind == "pdf":
            text = _read_pdf(path)
        else:
            # UTF-8 needs at most 4 bytes a character: a bigger file is over the limit unread.
            if path.stat().st_size > 4 * max_chars + 4:
                raise FileFailure(f"file is {path.stat().st_size} bytes, over the {max_chars}-character limit")
            data = path.read_bytes()
            if b"\x00" in data:
                raise FileFailure("binary content (NUL bytes)")
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise FileFailure(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
            if kind == "html":
                text = html_to_text(text)
    except OSError as exc:
        raise FileFailure(f"cannot read: {exc.strerror or exc}") from exc
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()
    if not text:
        raise FileFailure("no text (empty file, or a PDF without a text layer)")
    if len(text) > max_chars:
        # Storing a truncated document would answer "the latest version" with a lie; refuse instead.
        raise FileFailure(f"text is {len(text)} characters; the limit is {max_chars} (Limits.max_content_chars)")
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
