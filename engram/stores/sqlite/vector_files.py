"""Large users' vectors saved beside the database (``<db>.vectors/``), so that a new process loads
them from one file instead of reading every row back from SQL.

A user's vectors live in their rows of ``memories``, among their other columns and between other
users' rows: loading 10k of them read ~15 MB scattered over the file (150-250 ms on two busy cores),
the largest part of what a tenant's first query costs after a restart. The file holds the same
arrays the index is built from (vectors, rowids, ids, kinds, statuses) and the user's version when
they were read, in one SQL snapshot; it is used only while the user's version is still that one,
and mapped rather than read: pages come in as the first scan touches them.

Erasure: a delete, replace or forget erases the user's file (it holds what was deleted), as the
approximate index's saved snapshot is (:mod:`.ann`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["SAVE_ABOVE", "SavedVectors", "drop", "load", "save"]

log = logging.getLogger("engram")

#: Users with at least this many vectors are saved: below it a SQL read takes a few milliseconds.
SAVE_ABOVE = 2_000
_MAGIC = b"ENGVEC01"
_HEADER = struct.Struct("<8sqqqq")  # magic, user version, rows, dimensions, bytes of the ids
_ALIGN = 64


@dataclass(frozen=True)
class SavedVectors:
    version: int
    rowids: npt.NDArray[np.int64]
    ids: list[str]
    matrix: npt.NDArray[np.float32]  # mapped copy-on-write: the index may write rows in place
    kinds: npt.NDArray[np.int8]
    statuses: npt.NDArray[np.int8]


def _file(db_path: str, user_id: str) -> Path | None:
    if db_path == ":memory:":
        return None
    digest = hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Path(f"{db_path}.vectors") / f"{digest}.vec"


def _padded(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def save(
    db_path: str, user_id: str, version: int, rowids: npt.NDArray[np.int64], ids: list[str],
    matrix: npt.NDArray[np.float32], kinds: npt.NDArray[np.int8], statuses: npt.NDArray[np.int8],
    *, publish: Callable[[], bool], lock: threading.Lock,
) -> None:
    """Write the file whole under a temporary name, then rename it (a reader sees all or nothing),
    under ``lock`` and only if ``publish()`` still says so (asked again after the rename): an
    erasure of the user since the rows were read, in this process (which takes the same lock) or
    another (which moves the user's version), cancels it."""
    path = _file(db_path, user_id)
    if path is None:
        return
    names = "\n".join(ids).encode("utf-8", "surrogatepass")
    rows, dims = matrix.shape
    partial = path.with_suffix(f".{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as out:
            out.write(_HEADER.pack(_MAGIC, version, rows, dims, len(names)))
            out.write(b"\0" * (_padded(_HEADER.size) - _HEADER.size))
            for part in (np.ascontiguousarray(matrix, dtype=np.float32), rowids.astype(np.int64), kinds, statuses):
                out.write(part.tobytes())
            out.write(names)
        with lock:
            if publish():
                os.replace(partial, path)
                # Another process may have erased the user between that look and the rename.
                if not publish():
                    path.unlink(missing_ok=True)
    except OSError:
        log.warning("could not save the vectors of a user to %s", path, exc_info=True)
    finally:
        partial.unlink(missing_ok=True)


def load(db_path: str, user_id: str, version: int, dimensions: int | None) -> SavedVectors | None:
    """The user's saved vectors if they were saved at ``version`` (with ``dimensions``), else None."""
    path = _file(db_path, user_id)
    if path is None:
        return None
    try:
        with open(path, "rb") as source:
            magic, saved, rows, dims, name_bytes = _HEADER.unpack(source.read(_HEADER.size))
            if magic != _MAGIC or saved != version or (dimensions is not None and dims != dimensions):
                return None
            start = _padded(_HEADER.size)
            tail = start + rows * dims * 4
            source.seek(tail)
            rowids = np.frombuffer(source.read(rows * 8), dtype=np.int64)
            kinds = np.frombuffer(source.read(rows), dtype=np.int8)
            statuses = np.frombuffer(source.read(rows), dtype=np.int8)
            names = source.read(name_bytes).decode("utf-8", "surrogatepass")
        matrix = np.memmap(path, dtype=np.float32, mode="c", offset=start, shape=(rows, dims))
    except (OSError, ValueError, struct.error):
        return None
    ids = names.split("\n") if rows else []
    if len(ids) != rows or len(rowids) != rows or len(statuses) != rows:
        return None
    return SavedVectors(saved, rowids, ids, np.asarray(matrix), kinds, statuses)


def drop(db_path: str, user_id: str) -> None:
    """Erase the user's file, if any."""
    path = _file(db_path, user_id)
    if path is None:
        return
    try:
        path.unlink(missing_ok=True)
    except OSError:
        log.warning("could not erase the saved vectors %s", path, exc_info=True)
