"""Saved indexes written again after a removal erased them.

Every delete, replace or forget erases the user's saved files (they may hold what was deleted), and
without them the next process to search the user (a restart, another worker) read every row back
from SQL: 25-70 s at a million memories. A process that holds the user's indexes in memory, current
once they took the removal, saves them again when the user's removals pause for :data:`QUIET_S` (a
burst of deletes saves once), and at close.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from engram.stores.sqlite.saved import SAVE_ABOVE
from engram.stores.sqlite.user_cache import Index, UserIndexCache

__all__ = ["QUIET_S", "Resaves", "caught_up_held"]

log = logging.getLogger("engram")

#: Seconds without another removal of the user before their indexes are saved again.
QUIET_S = 5.0


class Resaves:
    """Users to save again, each once its removals pause; ``save`` saves one (on this class's thread)."""

    def __init__(self, save: Callable[[str], None], quiet: float = QUIET_S) -> None:
        self.quiet = quiet
        self._save = save
        self._due: dict[str, float] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def schedule(self, user_id: str) -> None:
        """Save the user again :attr:`quiet` seconds from now (a later call puts it off again)."""
        with self._cond:
            if self._closed:
                return
            self._due[user_id] = time.monotonic() + self.quiet
            if self._thread is None or not self._thread.is_alive():  # a forked child has none running
                self._thread = threading.Thread(target=self._run, name="engram-index-resaves", daemon=True)
                self._thread.start()
            self._cond.notify()

    def pending(self) -> list[str]:
        with self._cond:
            return list(self._due)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    now = time.monotonic()
                    ready = [user for user, due in self._due.items() if due <= now]
                    if ready:
                        break
                    self._cond.wait(min(self._due.values()) - now if self._due else None)
                for user in ready:
                    del self._due[user]
            for user in ready:
                self._save_one(user)

    def _save_one(self, user_id: str) -> None:
        try:
            self._save(user_id)
        except Exception:  # a cache: the next load reads SQL instead
            log.warning("could not save the indexes of a user again", exc_info=True)

    def close(self) -> None:
        """Stop, after saving the users still waiting (their files are gone until then)."""
        with self._cond:
            self._closed = True
            pending, self._due = list(self._due), {}
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
        for user in pending:
            self._save_one(user)


class _NotHeld(Exception):
    """The held index could not be brought up to date in place: nothing to save from here."""


def caught_up_held(
    cache: UserIndexCache[Index], user_id: str, *, version: Callable[[], int | None],
    caught_up: Callable[[Index], tuple[Index, int] | None],
) -> tuple[Index, int] | None:
    """The user's held index brought up to date in place (``caught_up``, as a refresh the cache
    knows of) and the version it is current at, when it is large enough to be saved; None when none
    is held, or it cannot be caught up (too far behind): never a load of the whole user here."""
    held = cache.peek(user_id)
    if held is None or len(held) < SAVE_ABOVE:
        return None
    caught: list[tuple[Index, int] | None] = []

    def refresh(index: Index) -> tuple[Index, int] | None:
        caught.append(caught_up(index))
        return caught[-1]

    def load() -> tuple[Index, int | None]:
        raise _NotHeld

    try:
        index = cache.get_or_load(user_id, load, version, refresh, force=True)
    except _NotHeld:
        return None
    found = caught[-1] if caught else None
    if found is None or found[0] is not index:
        return None
    return found
