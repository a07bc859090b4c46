"""A large user's in-memory indexes saved beside the database, so that a new process loads them
from one file instead of rebuilding them from every row in SQL.

A user's rows are spread over the file among other users' rows: loading 10k vectors read ~15 MB
scattered over it and building their keyword postings read every row's terms (150-300 ms each on two
busy cores), most of what a tenant's first query cost after a restart. A saved file holds the arrays
an index is built from, the user's version and count of removals when its rows were read (in one
SQL snapshot), and the largest rowid among them. It is mapped copy-on-write, not read: pages come in
as the first search touches them, and an index that changes a row in place changes only its own
copy. While the user's version is the one saved, the file is the index; when it moved, the loader
reads what changed since (:meth:`~.snapshot.SnapshotReader.changed_since`: the rows after the
largest saved one, and the rows the user's removals since counted) and applies it (at a million
memories, rebuilding from every row took 16-28 s).

Layout: a header (magic, the user's version, the number of arrays, the count of removals, the
largest rowid, the file's length and a CRC-32 of the whole file, header included with the CRC's
own field zero), one descriptor per array (dtype, shape, offset), then the arrays, each aligned to
64 bytes. Lists of strings are stored as one UTF-8 array of newline-joined items.

Trust: a file is used only when its length and checksum hold (checked before any array is
touched, so a truncated file never faults a page), its descriptors stay inside it and name plain
numeric types; anything else is ignored and removed, the SQL path answers and the next load saves
a new file. Checking reads the whole file once per load (CRC-32 at ~1.7 GB/s: ~1 ms for a
1,000-memory user's files, ~0.9 s at a million memories). Files of the earlier layouts (no
checksum) are treated the same way: rebuilt once after an upgrade. A file mapped by a running
process must be replaced by rename only (see :func:`intact`): one overwritten in place (``cp``,
``rsync --inplace``) is dropped at its next use, but one truncated during a search faults the
process (SIGBUS).

Erasure: the files hold vectors and words of the user's memories, so every delete, replace or
forget erases them (see the store's module docstring); a save under way when that happens is not
kept.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import threading
import weakref
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.stores.packing import Gathered, encoded, strings, write_part
from engram.stores.sqlite.side_files import make_folder, partial_name, private_file, user_digest, user_files
from engram.stores.sqlite.snapshot import Changes
from engram.stores.sqlite.user_cache import UserIndexCache

__all__ = [
    "KINDS", "SAVE_ABOVE", "Mapped", "Saved", "behind", "drop", "encoded", "load", "path_of", "save", "strings",
    "user_digest", "user_files",
]


log = logging.getLogger("engram")

#: Users with at least this many memories are saved. A user of 100-500 memories cost a first query
#: ~5 ms of SQL reads and building where their files load in ~0.3 ms; most queries of a service
#: with many tenants meet them cold. Below, the files would outnumber what they save.
SAVE_ABOVE = 100
#: What is saved, each in ``<db>.<kind>/``.
KINDS = ("vectors", "keywords")
_MAGIC = b"ENGSAVE3"
#: magic, the user's version, arrays, removals, largest rowid, the file's length, CRC-32 (and padding)
_HEADER = struct.Struct("<8sqqqqqI4x")
_CRC_AT = 48  # where the CRC field starts in the header
_PART = struct.Struct("<8sqqqq")  # dtype, dimensions, shape (two), offset
_ALIGN = 64
_MAX_ARRAYS = 64


@dataclass(frozen=True)
class Saved:
    """A saved index's arrays and when its rows were read."""

    parts: list[npt.NDArray[np.generic]]
    version: int
    removed: int | None  # None: a file of the first layout, used only at its version
    last_rowid: int  # the largest rowid among its rows (-1: none)
    intact: Callable[[], bool] = lambda: True  # see :func:`intact`


def path_of(db_path: str, kind: str, user_id: str) -> Path | None:
    """The user's file of this kind ("vectors", "keywords"); None for an in-memory database."""
    if db_path == ":memory:":
        return None
    return Path(f"{db_path}.{kind}") / f"{user_digest(user_id)}.bin"


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


class _Checked:
    """A file being written: the CRC and position of what went through it."""

    def __init__(self, fd: int) -> None:
        self.file = os.fdopen(fd, "wb")
        self.crc = 0
        self.at = 0

    def __enter__(self) -> _Checked:
        return self

    def __exit__(self, *_: object) -> None:
        self.file.close()

    def write(self, data: bytes | memoryview) -> int:
        self.crc = zlib.crc32(data, self.crc)
        self.at += memoryview(data).nbytes  # an array's view counts items, not bytes
        return self.file.write(data)

    def pad_to(self, offset: int) -> None:
        if offset > self.at:
            self.write(bytes(offset - self.at))


def save(
    db_path: str, kind: str, user_id: str, version: int, parts: Sequence[npt.NDArray[np.generic] | Gathered],
    *, removed: int, last_rowid: int, publish: Callable[[], bool], lock: threading.Lock,
) -> None:
    """Write the file whole under a temporary name, then rename it (a reader sees all or nothing),
    under ``lock`` and only if ``publish()`` says so, asked again after the rename: an erasure of
    the user since the rows were read, in this process (which takes the same lock) or another
    (which moves the user's version), cancels it. The file takes the database's mode (:mod:`.side_files`)."""
    path = path_of(db_path, kind, user_id)
    if path is None:
        return
    partial = partial_name(path)
    try:
        make_folder(path.parent, db_path)
        offset = _aligned(_HEADER.size + _PART.size * len(parts))
        descriptors = []
        for part in parts:
            rows, columns = (*part.shape, 1)[:2]  # one or two dimensions
            descriptors.append(_PART.pack(part.dtype.str.encode(), part.ndim, rows, columns, offset))
            offset = _aligned(offset + part.nbytes)
        with _Checked(private_file(partial, db_path)) as out:
            # The header with a zero CRC first: the CRC covers it, then the rest as it is written.
            out.write(_HEADER.pack(_MAGIC, version, len(parts), removed, last_rowid, offset, 0))
            out.write(b"".join(descriptors))
            for part, descriptor in zip(parts, descriptors, strict=True):
                out.pad_to(_PART.unpack(descriptor)[4])
                write_part(out, part)  # type: ignore[arg-type]
            out.pad_to(offset)
            out.file.seek(_CRC_AT)
            out.file.write(struct.pack("<I", out.crc))
        with lock:
            if publish() and all(p.current() for p in parts if isinstance(p, Gathered)):
                os.replace(partial, path)
                if not publish():  # another process erased the user between that look and the rename
                    path.unlink(missing_ok=True)
    except OSError:
        log.warning("could not save a user's index to %s", path, exc_info=True)
    finally:
        partial.unlink(missing_ok=True)


def _checked(mapped: npt.NDArray[np.uint8]) -> tuple[int, int, int, int] | None:
    """The header's version, array count, removals and largest rowid when the file's length and
    CRC hold; None otherwise (the length is checked first: no page past the end is touched)."""
    if len(mapped) < _HEADER.size or mapped[:8].tobytes() != _MAGIC:
        return None
    header = bytearray(mapped[: _HEADER.size].tobytes())
    _, version, count, removed, last_rowid, length, crc = _HEADER.unpack(header)
    if length != len(mapped) or not 0 <= count <= _MAX_ARRAYS or _HEADER.size + count * _PART.size > length:
        return None
    header[_CRC_AT : _CRC_AT + 4] = bytes(4)
    if zlib.crc32(mapped[_HEADER.size :].data, zlib.crc32(header)) != crc:
        return None
    return version, count, removed, last_rowid


def intact(path: Path, was: os.stat_result) -> Callable[[], bool]:
    """Whether the file mapped from ``path`` (``was``: its state then) is still as it was mapped:
    False when the same file (same inode) changed in place since (truncated or rewritten: its mapped
    pages would fault or read other bytes). A file replaced by rename leaves the mapped one whole.
    One ``stat``, ~2 us: asked at each use of an index mapped from a file."""
    length = was.st_size

    def check() -> bool:
        try:
            now = os.stat(path)
        except OSError:
            return True  # removed: the mapped inode lives on
        if (now.st_ino, now.st_dev) != (was.st_ino, was.st_dev):
            return True
        return now.st_size == length and now.st_mtime_ns == was.st_mtime_ns

    return check


def _discard(path: Path, file: int) -> None:
    """Remove a file that failed its checks, unless another took its name meanwhile."""
    try:
        here, there = os.fstat(file), os.stat(path)
        if (here.st_ino, here.st_dev) == (there.st_ino, there.st_dev):
            path.unlink()
            log.warning("ignored and removed a damaged saved index %s", path)
    except OSError:
        pass


def load(db_path: str, kind: str, user_id: str) -> Saved | None:
    """The arrays saved for the user, as views of a copy-on-write map, and when they were read;
    None when there are none or they fail their checks (the file is then removed)."""
    path = path_of(db_path, kind, user_id)
    if path is None:
        return None
    try:
        # mmap itself, not np.memmap: that resolves the path first, a third of a small user's load.
        with open(path, "rb") as file:
            was = os.fstat(file.fileno())
            size = was.st_size
            if size == 0:
                _discard(path, file.fileno())
                return None
            mapped = np.frombuffer(mmap.mmap(file.fileno(), size, access=mmap.ACCESS_COPY), dtype=np.uint8)
            header = _checked(mapped)
            if header is None:
                _discard(path, file.fileno())
                return None
        version, count, removed, last_rowid = header
        parts: list[npt.NDArray[np.generic]] = []
        for i in range(count):
            start = _HEADER.size + i * _PART.size
            dtype, ndim, rows, columns, offset = _PART.unpack(mapped[start : start + _PART.size].tobytes())
            kind_of = np.dtype(dtype.rstrip(b"\0").decode("ascii"))
            if kind_of.kind not in "biuf" or ndim not in (1, 2) or min(rows, columns, offset) < 0:
                return None
            shape = (rows,) if ndim == 1 else (rows, columns)
            size = kind_of.itemsize * rows * (columns if ndim == 2 else 1)
            if offset + size > len(mapped):
                return None
            parts.append(np.asarray(mapped[offset : offset + size]).view(kind_of).reshape(shape))
    except (OSError, ValueError, TypeError, struct.error):
        return None
    return Saved(parts, version, removed, last_rowid, intact(path, was))


def behind(
    found: Saved | None, current: int | None, removed: Callable[[], int | None],
    changes: Callable[[int, int], Changes | None],
) -> Changes | None:
    """What a saved file lacks (nothing when it is current at ``current``): ``changes(last_rowid,
    removed)`` reads the user's changes since its rows were read. None when the file cannot serve:
    none, or a file of the first layout behind the user. ``removed`` reads the user's count of
    removals now, for a file at the user's version."""
    if found is None or current is None:
        return None
    if found.version == current:
        # A count moved without a new version: a change in place that no write makes today.
        if found.removed is None or removed() == found.removed:
            return Changes([], [], current, found.removed)
        return None
    return None if found.removed is None else changes(found.last_rowid, found.removed)


class Mapped:
    """Indexes that map a saved file, each with its file's :func:`intact` check."""

    def __init__(self) -> None:
        self._checks: weakref.WeakKeyDictionary[Any, Callable[[], bool]] = weakref.WeakKeyDictionary()

    def note(self, index: object, check: Callable[[], bool]) -> None:
        self._checks[index] = check

    def drop_changed(self, cache: UserIndexCache[Any], user_id: str) -> None:
        """Drop the user's held index when the file it maps changed in place since (its next use
        loads it again), before a search touches its pages."""
        held = cache.peek(user_id)
        check = None if held is None else self._checks.get(held)
        if check is not None and not check():
            log.warning("a saved index changed in place under this process; loading the user again")
            self._checks.pop(held, None)
            cache.pop(user_id)


def drop(db_path: str, kind: str, user_id: str) -> None:
    """Erase the user's file of this kind, if any."""
    path = path_of(db_path, kind, user_id)
    if path is None:
        return
    try:
        path.unlink(missing_ok=True)
    except OSError:
        log.warning("could not erase a user's saved index %s", path, exc_info=True)
