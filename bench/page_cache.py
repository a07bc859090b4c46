"""How much of a store the operating system holds in its page cache, and dropping it from there.

A fresh process reads the store through the page cache: files another process read a moment ago
cost no disk read, files nobody read for a while may. How long "a while" is depends on the host: a
kernel with proactive reclaim (DAMON ``pageout`` of pages idle for 60 s, as on the machines these
benchmarks ran on) drops an idle store's pages within minutes, where a host without it keeps them
while memory lasts. So the benchmarks report the share of the store resident when each measured
process starts, and can drop the store's pages first (``evict``) to measure the worst case: every
page read from disk, as after a reboot.

Linux only (``posix_fadvise`` and ``mincore``); elsewhere ``resident_share`` is None and ``evict``
refuses.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

import numpy as np

__all__ = ["evict", "resident_share", "store_files"]

_PAGE = mmap.PAGESIZE


def store_files(db: Path) -> list[Path]:
    """The database file, its write-ahead log if any, and the files saved beside it (indexes)."""
    found: list[Path] = []
    for path in sorted(db.parent.glob(db.name + "*")):
        found.extend([path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()))
    return found


def evict(db: Path) -> int:
    """Drop the store's pages from the page cache (the store closed), written to disk first: the
    kernel drops clean pages only. The number of files dropped."""
    if not hasattr(os, "posix_fadvise"):
        raise SystemExit("--os-cache evicted needs posix_fadvise (Linux)")
    files = store_files(db)
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return len(files)


def resident_share(db: Path) -> float | None:
    """The share of the store's bytes in the page cache, by ``mincore`` over a read-only map of each
    file (mapping reads nothing). None where that cannot be asked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mincore = libc.mincore
    except (OSError, AttributeError):
        return None
    mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    resident = total = 0
    for path in store_files(db):
        try:
            size = path.stat().st_size
            if size == 0:
                continue
            with open(path, "rb") as file, mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) as mapped:
                pages = (size + _PAGE - 1) // _PAGE
                vector = (ctypes.c_ubyte * pages)()
                view = np.frombuffer(mapped, dtype=np.uint8)
                try:
                    if mincore(view.ctypes.data, size, vector) != 0:
                        return None
                finally:
                    del view  # the map cannot close while exported
        except (OSError, ValueError):  # gone or shrunk since it was listed (a log checkpointed)
            continue
        # A last partial page counts for what the file holds of it.
        resident += min(size, int((np.frombuffer(vector, dtype=np.uint8) & 1).sum()) * _PAGE)
        total += size
    return round(resident / total, 3) if total else None
