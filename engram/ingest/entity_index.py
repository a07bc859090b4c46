"""A user's entity names and aliases, indexed for exact lookups and bounded fuzzy search, and kept
between retrievals.

Cost is bounded whatever the entity table holds (issue 12, item 2: 10,000 entities of 100 aliases
made the first query after each write spend ~835 ms re-reading and re-indexing the table):

* at most ``MAX_INDEX_NAMES`` names and aliases are indexed (every entity's name first, then
  aliases in entity-id order), and only those are read: :func:`load_entities` asks the store for
  at most that many aliases instead of decoding every alias list;
* :class:`EntityIndexes` keeps each user's index while the user's data is unchanged, and after a
  write re-reads the table but rebuilds the index only if the table itself changed;
* reading and indexing run on a worker thread: a retrieval waits for them only until its deadline
  (then raises DeadlineExceeded) and the work goes on, so the next query finds it done instead of
  starting over; entity matching itself checks the deadline before its fuzzy step. On a loaded
  machine the read and the build of a 10,000-entity table each took up to ~250 ms, too long to
  run unchecked inside a 200 ms deadline.
"""

from __future__ import annotations

import math
import re
import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import chain, islice
from typing import TYPE_CHECKING, NamedTuple

from rapidfuzz import fuzz, process

from engram.errors import DeadlineExceeded
from engram.model import Entity
from engram.pools import process_pool

if TYPE_CHECKING:
    from engram.ext import Store

__all__ = [
    "FUZZY_MIN_CHARS", "FUZZY_SCORE", "MAX_ALIAS_TOKENS", "MAX_INDEX_NAMES", "MAX_NAME_CHARS", "EntityIndex",
    "EntityIndexes", "check_deadline", "load_entities", "name_key", "text_words",
]

MAX_INDEX_NAMES = 20_000  # names and aliases indexed per user (10,000 entities and 10,000 aliases fit)
MAX_ALIAS_TOKENS = 8  # longer "names" are sentences, not names
MAX_NAME_CHARS = 100  # a longer capitalized run is not a name
FUZZY_SCORE = 88.0  # rapidfuzz ratio (0-100); "Globax" vs "Globex" is 83, too far
FUZZY_MIN_CHARS = 4  # shorter names differ by one letter from too many words
MAX_FUZZY_CACHE = 10_000  # windows remembered per index, with their fuzzy match or None
MAX_USERS = 1024  # users whose indexes an EntityIndexes keeps

_TOKEN = re.compile(r"\w+")
_POSSESSIVE_S = re.compile(r"['’]s(?!\w)")


def check_deadline(deadline: float | None, doing: str) -> None:
    """Raise DeadlineExceeded once ``time.perf_counter()`` has passed ``deadline`` (None: no deadline)."""
    if deadline is not None and time.perf_counter() > deadline:
        raise DeadlineExceeded(f"retrieval passed its deadline while {doing}")


def text_words(text: str) -> tuple[list[int], list[str]]:
    """Start offsets and casefolded words of ``text``; the "s" of a possessive is no word ("Acme's")."""
    folded = text.casefold()
    if len(folded) != len(text):  # "ß" -> "ss": fold word by word to keep offsets
        pairs = [(m.start(), m.group(0).casefold()) for m in _TOKEN.finditer(text)]
        pairs = [(i, w) for i, w in pairs if not (w == "s" and i > 0 and text[i - 1] in "'’")]
        return [i for i, _ in pairs], [w for _, w in pairs]
    if "'" in folded or "’" in folded:
        folded = _POSSESSIVE_S.sub("  ", folded)  # same length, so offsets still match ``text``
    matches = list(_TOKEN.finditer(folded))
    return [m.start() for m in matches], [m.group(0) for m in matches]


def name_key(name: str) -> tuple[str, ...]:
    """The words of a name as ``text_words`` reads them, without offsets."""
    folded = name.casefold()
    if "'" in folded or "’" in folded:
        folded = _POSSESSIVE_S.sub(" ", folded)
    return tuple(_TOKEN.findall(folded))


class EntityIndex:
    """A user's entity names and aliases, normalized, for exact dict lookups and bounded fuzzy search.

    When two entities share a name, the one listed first wins, and canonical names win over aliases.
    ``by_words`` maps a name's words to its entity id; ``longest`` maps a first word to the most
    words of a name starting with it; ``types`` are the entities' types, lowercased, and ``of_type``
    the ids of each type's entities.
    """

    __slots__ = ("_fuzzy_cache", "_fuzzy_ids", "_fuzzy_lens", "_fuzzy_names", "by_words", "longest", "of_type",
                 "types")

    def __init__(self, entities: Iterable[Entity] = ()) -> None:
        exact: dict[tuple[str, ...], str] = {}
        longest: dict[str, int] = {}
        fuzzy: dict[str, str] = {}
        valid = [e for e in entities if isinstance(e, Entity) and isinstance(e.id, str) and e.id]
        self.types = frozenset(e.type.lower() for e in valid if isinstance(e.type, str))
        of_type: dict[str, list[str]] = {}
        for e in valid:
            if isinstance(e.type, str) and e.type.strip():
                of_type.setdefault(e.type.strip().lower(), []).append(e.id)
        #: Type (lowercased) -> the ids of the entities of that type, in the table's order.
        self.of_type: dict[str, tuple[str, ...]] = {t: tuple(ids) for t, ids in of_type.items()}
        names = chain(
            ((e.id, e.name) for e in valid),
            ((e.id, a) for e in valid if isinstance(e.aliases, tuple | list) for a in e.aliases),
        )
        for entity_id, name in islice(names, MAX_INDEX_NAMES):
            if not isinstance(name, str):
                continue
            folded = name[:MAX_NAME_CHARS].casefold()
            # One word (most names and aliases): the key name_key would give, without its regex.
            key = (folded,) if folded.isalnum() else name_key(folded)
            size = len(key)
            if not size or size > MAX_ALIAS_TOKENS or key in exact or (size == 1 and len(key[0]) < 2):
                continue
            exact[key] = entity_id
            if longest.get(key[0], 0) < size:
                longest[key[0]] = size
            joined = key[0] if size == 1 else " ".join(key)
            if len(joined) >= FUZZY_MIN_CHARS and joined not in fuzzy:
                fuzzy[joined] = entity_id
        self.by_words, self.longest = exact, longest
        # Sorted by length so a window's candidates are one slice: ratio >= FUZZY_SCORE bounds lengths.
        # The sort is stable, so equal lengths keep the entities' order: deterministic.
        self._fuzzy_names = sorted(fuzzy, key=len)
        self._fuzzy_ids = [fuzzy[name] for name in self._fuzzy_names]
        self._fuzzy_lens = [len(name) for name in self._fuzzy_names]
        # Names recur across a user's memories and queries ("Sarah" in hundreds of them): one
        # rapidfuzz search each. Reset when full rather than evicted one by one: simple and bounded.
        self._fuzzy_cache: dict[str, str | None] = {}

    def __len__(self) -> int:
        return len(self.by_words)

    @property
    def fuzzy_names(self) -> int:
        """How many names and aliases fuzzy matching compares a window with, at most."""
        return len(self._fuzzy_names)

    def exact(self, words: Sequence[str]) -> str | None:
        """The entity id whose normalized name or alias is exactly ``words``."""
        return self.by_words.get(tuple(words))

    def fuzzy(self, windows: Sequence[str]) -> list[str | None]:
        """For each window (normalized words joined by spaces), the entity id of the closest name or
        alias scoring at least ``FUZZY_SCORE``, or None. One rapidfuzz call for all of them."""
        cache = self._fuzzy_cache
        found: list[str | None] = [cache.get(window) for window in windows]
        todo = [i for i, window in enumerate(windows) if len(window) >= FUZZY_MIN_CHARS and window not in cache]
        if not todo or not self._fuzzy_names:
            return found
        # A ratio of at least r needs lengths within [r / (2 - r), (2 - r) / r] of each other. Names
        # outside one window's band score 0 for it, so a batch answers each window as alone would.
        r = FUZZY_SCORE / 100.0
        sizes = [len(windows[i]) for i in todo]
        lo = bisect_left(self._fuzzy_lens, math.ceil(min(sizes) * r / (2.0 - r)))
        hi = bisect_right(self._fuzzy_lens, math.floor(max(sizes) * (2.0 - r) / r))
        results: dict[str, str | None] = dict.fromkeys((windows[i] for i in todo), None)
        if lo < hi:
            scores = process.cdist(
                [windows[i] for i in todo], self._fuzzy_names[lo:hi], scorer=fuzz.ratio, score_cutoff=FUZZY_SCORE
            )
            best = scores.argmax(axis=1)  # the first of equal scores: the shortest name, then entity order
            for row, i in enumerate(todo):
                column = int(best[row])
                if scores[row, column] > 0:  # cdist gives 0 below the cutoff
                    found[i] = results[windows[i]] = self._fuzzy_ids[lo + column]
        if len(cache) > MAX_FUZZY_CACHE:
            cache.clear()
        cache.update(results)  # only finished answers: another thread never sees a guess
        return found

    def resolve(self, name: str) -> str | None:
        """The id of the entity ``name`` denotes as a whole (exact, then fuzzy), or None."""
        key = name_key(name[:MAX_NAME_CHARS])
        if not key:
            return None
        return self.exact(key) or (self.fuzzy([" ".join(key)])[0] if len(key) <= 4 else None)


def load_entities(store: Store, user_id: str) -> list[Entity]:
    """The user's entities with only the aliases ``EntityIndex`` would index (see the module doc).

    Uses the store's ``entity_names(user_id, max_aliases=...)`` when it has one (both bundled stores
    do); any other store's ``entities`` are read whole and cut here.
    """
    bounded = getattr(store, "entity_names", None)
    entities: list[Entity] = (
        bounded(user_id, max_aliases=MAX_INDEX_NAMES) if callable(bounded) else store.entities(user_id)
    )
    left = max(0, MAX_INDEX_NAMES - len(entities))  # names come first in the index
    out: list[Entity] = []
    for entity in entities:
        aliases = tuple(entity.aliases[:left]) if left else ()
        left -= len(aliases)
        out.append(entity if aliases == tuple(entity.aliases) else Entity(entity.id, entity.type, entity.name, aliases))
    return out


class _Entry(NamedTuple):
    version: Hashable
    ready: Future[tuple[list[Entity], EntityIndex]]


def _pool() -> ThreadPoolExecutor:
    """One worker pool for every EntityIndexes of the process."""
    return process_pool("engram-entities", 2)


class EntityIndexes:
    """Each user's ``EntityIndex``, for the retrieval and write paths (see the module doc).

    ``version`` is whatever changes when the user's data may have (the pipeline passes the store's
    change token and its cache generation). ``loads`` and ``builds`` count the work done, so callers
    and tests can see that an unchanged table is neither re-read nor re-indexed.
    """

    def __init__(self, max_users: int = MAX_USERS) -> None:
        self._max_users = max_users
        self._users: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.loads = 0
        self.builds = 0

    def get(self, store: Store, user_id: str, version: Hashable, deadline: float | None = None) -> EntityIndex:
        """The user's index as of ``version``; DeadlineExceeded if it is not ready by ``deadline``
        (a ``time.perf_counter()`` value; None waits), in which case it is still being made."""
        with self._lock:
            entry = self._users.get(user_id)
            if entry is None or entry.version != version:
                previous = None if entry is None else entry.ready
                entry = _Entry(version, _pool().submit(self._refresh, store, user_id, previous))
                if user_id not in self._users and len(self._users) >= self._max_users:
                    self._users.clear()
                self._users[user_id] = entry
        wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
        try:
            return entry.ready.result(wait)[1]
        except TimeoutError:
            raise DeadlineExceeded("retrieval passed its deadline while reading and indexing entities") from None
        except BaseException:
            with self._lock:  # a failed read is not kept: the next call reads again
                if self._users.get(user_id) is entry:
                    del self._users[user_id]
            raise

    def _refresh(
        self, store: Store, user_id: str, previous: Future[tuple[list[Entity], EntityIndex]] | None
    ) -> tuple[list[Entity], EntityIndex]:
        entities = load_entities(store, user_id)
        self.loads += 1
        # Waiting for the previous read cannot deadlock: the pool is FIFO, so it started before this one.
        if previous is not None and previous.exception() is None:
            known, index = previous.result()
            if known == entities:  # a write that left the entity table as it was (most add memories)
                return entities, index
        self.builds += 1
        return entities, EntityIndex(entities)

    def cached(self, user_id: str) -> list[Entity] | None:
        """The entities the user's index was last built from (None while none is ready)."""
        entry = self._users.get(user_id)
        if entry is None or not entry.ready.done() or entry.ready.exception() is not None:
            return None
        return entry.ready.result()[0]
