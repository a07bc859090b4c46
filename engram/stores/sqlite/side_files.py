"""The folders kept beside a database file (``<db>.vectors/``, ``<db>.keywords/``, ``<db>.ann/``):
who may read them, and what a crash or an erasure leaves in them.

Their files hold words and vectors of the users' memories, so they are no more readable than the
database itself: folders take the database file's mode with search bits where it has read bits (a
database at 0600 gives 0700), files its mode (0600). A file is written under a temporary name
``<user digest>.<pid>.<thread>[.<kind>].partial`` and renamed over the last; a process killed
meanwhile leaves that name behind, holding the user's whole index. Erasing a user removes every file
named for them in every side folder, temporary ones included, and opening a store removes the
temporary files of processes that no longer run.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import stat
import threading
import time
from pathlib import Path

__all__ = [
    "erase_user", "file_mode", "folder_mode", "make_folder", "partial_name", "private_file", "side_folders", "tidy",
    "user_digest", "user_files",
]

log = logging.getLogger("engram")

#: A temporary file older than this is left over whatever its name says: a save takes seconds.
STALE_S = 3600.0


def user_digest(user_id: str) -> str:
    """The name every file kept beside the database for this user starts with."""
    return hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def file_mode(db_path: str) -> int:
    """The permission bits of the database file (0600 when it cannot be read: the safe choice)."""
    try:
        return stat.S_IMODE(os.stat(db_path).st_mode) & 0o666
    except OSError:
        return 0o600


def folder_mode(db_path: str) -> int:
    mode = file_mode(db_path)
    return mode | ((mode & 0o444) >> 2)  # search where read is allowed


def make_folder(folder: Path, db_path: str) -> None:
    """Create ``folder`` with :func:`folder_mode`, or narrow an existing one to it."""
    mode = folder_mode(db_path)
    folder.mkdir(mode=mode, exist_ok=True)
    current = stat.S_IMODE(folder.stat().st_mode)
    if current != mode:
        os.chmod(folder, mode)


def private_file(path: Path, db_path: str) -> int:
    """A new file at ``path`` (truncated if it exists) open for writing, with the database's mode."""
    mode = file_mode(db_path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        if hasattr(os, "fchmod"):  # not on Windows before 3.13
            os.fchmod(fd, mode)  # the umask may have narrowed it, an older file may be wider
    except OSError:
        os.close(fd)
        raise
    return fd


def partial_name(final: Path, kind: str = "") -> Path:
    """The temporary name a file is written under before it is renamed to ``final``."""
    digest = final.name.split(".", 1)[0]
    extra = f".{kind}" if kind else ""
    return final.with_name(f"{digest}.{os.getpid()}.{threading.get_ident()}{extra}.partial")


def side_folders(db_path: str) -> list[Path]:
    """Every folder named ``<db>.<something>`` beside the database file."""
    if db_path == ":memory:":
        return []
    db = Path(db_path)
    try:
        return sorted(p for p in db.parent.glob(f"{glob.escape(db.name)}.*") if p.is_dir())
    except OSError:
        return []


def user_files(db_path: str, user_id: str) -> list[Path]:
    """Every file beside the database named for this user: saved indexes of each kind, approximate
    index snapshots and temporary files of saves under way or interrupted."""
    digest = user_digest(user_id)
    return sorted(p for side in side_folders(db_path) for p in side.glob(f"{digest}.*") if p.is_file())


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows' kill would end it: only the age then tells
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


def _stale(path: Path, now: float) -> bool:
    parts = path.name.split(".")
    pid = int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else None
    try:
        age = now - path.stat().st_mtime
    except OSError:
        return False
    return age > STALE_S or (pid is not None and not _alive(pid))


def tidy(db_path: str) -> int:
    """At open: narrow the side folders and files to the database's mode, and remove temporary
    files that no running process is writing. Returns how many files were removed."""
    removed, now = 0, time.time()
    mode = file_mode(db_path)
    for folder in side_folders(db_path):
        try:
            make_folder(folder, db_path)
            entries = list(os.scandir(folder))
        except OSError:
            log.warning("could not tidy %s", folder, exc_info=True)
            continue
        for entry in entries:
            path = Path(entry.path)
            with contextlib.suppress(OSError):
                if not entry.is_file(follow_symlinks=False):
                    continue
                if entry.name.endswith(".partial") and _stale(path, now):
                    path.unlink(missing_ok=True)
                    removed += 1
                elif stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) & ~mode:
                    os.chmod(path, stat.S_IMODE(entry.stat().st_mode) & mode)
    return removed


def erase_user(db_path: str, user_id: str) -> None:
    """Remove every file of the user in every side folder (a save under way then fails to rename)."""
    for path in user_files(db_path, user_id):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            log.warning("could not erase a user's file %s", path, exc_info=True)
