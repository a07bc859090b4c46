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
largest rowid), one descriptor per array (dtype, shape, offset), then the arrays, each aligned to 64
bytes. Lists of strings are stored as one UTF-8 array of newline-joined items. Files of the first
layout (no count of removals) are used only at their version.

Erasure: the files hold vectors and words of the user's memories, so every delete, replace or
forget erases them (see the store's module docstring); a save under way when that happens is not
kept.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import mmap
import os
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engram.stores.packing import Gathered, encoded, strings, write_part
from engram.stores.sqlite.snapshot import Changes

__all__ = [
    "KINDS", "SAVE_ABOVE", "Saved", "behind", "drop", "encoded", "load", "path_of", "save", "strings",
    "user_digest", "user_files",
]


log = logging.getLogger("engram")

#: Users with at least this many memories are saved. A user of 100-500 memories cost a first query
#: ~5 ms of SQL reads and building where their files load in ~0.3 ms; most queries of a service
#: with many tenants meet them cold. Below, the files would outnumber what they save.
SAVE_ABOVE = 100
#: What is saved, each in ``<db>.<kind>/``.
KINDS = ("vectors", "keywords")
_MAGIC, _MAGIC_FIRST = b"ENGSAVE2", b"ENGSAVE1"
_HEADER = struct.Struct("<8sqqqq")  # magic, the user's version, arrays, removals, largest rowid
_HEADER_FIRST = struct.Struct("<8sqq")  # magic, the user's version, arrays
_PART = struct.Struct("<8sqqqq")  # dtype, dimensions, shape (two), offset
_ALIGN = 64


@dataclass(frozen=True)
class Saved:
    """A saved index's arrays and when its rows were read."""

    parts: list[npt.NDArray[np.generic]]
    version: int
    removed: int | None  # None: a file of the first layout, used only at its version
    last_rowid: int  # the largest rowid among its rows (-1: none)


def user_digest(user_id: str) -> str:
    """The name every file kept beside the database for this user starts with."""
    return hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def path_of(db_path: str, kind: str, user_id: str) -> Path | None:
    """The user's file of this kind ("vectors", "keywords"); None for an in-memory database."""
    if db_path == ":memory:":
        return None
    return Path(f"{db_path}.{kind}") / f"{user_digest(user_id)}.bin"


def user_files(db_path: str, user_id: str) -> list[Path]:
    """Every file kept beside the database for this user: saved indexes of each kind, approximate
    index snapshots (all named by :func:`user_digest`)."""
    if db_path == ":memory:":
        return []
    folder, digest = Path(db_path).parent, user_digest(user_id)
    return sorted(p for side in folder.glob(f"{glob.escape(Path(db_path).name)}.*") if side.is_dir()
                  for p in side.glob(f"{digest}.*") if p.is_file())


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def save(
    db_path: str, kind: str, user_id: str, version: int, parts: Sequence[npt.NDArray[np.generic] | Gathered],
    *, removed: int, last_rowid: int, publish: Callable[[], bool], lock: threading.Lock,
) -> None:
    """Write the file whole under a temporary name, then rename it (a reader sees all or nothing),
    under ``lock`` and only if ``publish()`` says so, asked again after the rename: an erasure of
    the user since the rows were read, in this process (which takes the same lock) or another
    (which moves the user's version), cancels it."""
    path = path_of(db_path, kind, user_id)
    if path is None:
        return
    partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        offset = _aligned(_HEADER.size + _PART.size * len(parts))
        descriptors = []
        for part in parts:
            rows, columns = (*part.shape, 1)[:2]  # one or two dimensions
            descriptors.append(_PART.pack(part.dtype.str.encode(), part.ndim, rows, columns, offset))
            offset = _aligned(offset + part.nbytes)
        with open(partial, "wb") as out:
            out.write(_HEADER.pack(_MAGIC, version, len(parts), removed, last_rowid))
            out.write(b"".join(descriptors))
            for part, descriptor in zip(parts, descriptors, strict=True):
                out.seek(_PART.unpack(descriptor)[4])
                write_part(out, part)
        with lock:
            if publish() and all(p.current() for p in parts if isinstance(p, Gathered)):
                os.replace(partial, path)
                if not publish():  # another process erased the user between that look and the rename
                    path.unlink(missing_ok=True)
    except OSError:
        log.warning("could not save a user's index to %s", path, exc_info=True)
    finally:
        partial.unlink(missing_ok=True)


def load(db_path: str, kind: str, user_id: str) -> Saved | None:
    """The arrays saved for the user, as views of a copy-on-write map, and when they were read."""
    path = path_of(db_path, kind, user_id)
    if path is None:
        return None
    try:
        # mmap itself, not np.memmap: that resolves the path first, a third of a small user's load.
        with open(path, "rb") as file:
            mapped = np.frombuffer(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY), dtype=np.uint8)
        magic = mapped[:8].tobytes()
        if magic == _MAGIC:
            _, version, count, removed, last_rowid = _HEADER.unpack(mapped[: _HEADER.size].tobytes())
            header = _HEADER.size
        elif magic == _MAGIC_FIRST:
            _, version, count = _HEADER_FIRST.unpack(mapped[: _HEADER_FIRST.size].tobytes())
            removed, last_rowid, header = None, -1, _HEADER_FIRST.size
        else:
            return None
        parts: list[npt.NDArray[np.generic]] = []
        for i in range(count):
            start = header + i * _PART.size
            dtype, ndim, rows, columns, offset = _PART.unpack(mapped[start : start + _PART.size].tobytes())
            kind_of = np.dtype(dtype.rstrip(b"\0").decode())
            shape = (rows,) if ndim == 1 else (rows, columns)
            size = kind_of.itemsize * rows * (columns if ndim == 2 else 1)
            parts.append(np.asarray(mapped[offset : offset + size]).view(kind_of).reshape(shape))
    except (OSError, ValueError, TypeError, struct.error):
        return None
    return Saved(parts, version, removed, last_rowid)


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


def drop(db_path: str, kind: str, user_id: str) -> None:
    """Erase the user's file of this kind, if any."""
    path = path_of(db_path, kind, user_id)
    if path is None:
        return
    try:
        path.unlink(missing_ok=True)
    except OSError:
        log.warning("could not erase a user's saved index %s", path, exc_info=True)
