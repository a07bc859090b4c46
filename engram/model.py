"""The frozen values passed between stages: what is stored, and what a query is understood as."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict

from engram.pools import PerProcess

__all__ = [
    "HISTORY_EVENTS",
    "KINDS",
    "KIND_ALIASES",
    "ROLES",
    "STATUSES",
    "Entity",
    "EntityRelation",
    "Filters",
    "HistoryEvent",
    "Hit",
    "Link",
    "LoggedItem",
    "LoggedRetrieval",
    "MemoryChanges",
    "MemoryFields",
    "MemoryRecord",
    "QueryPlan",
    "ReadOnlyDict",
    "ReadOnlyList",
    "RelationType",
    "TimeRange",
    "new_id",
    "plain",
    "read_only",
    "six_places",
]

KINDS = ("message", "fact", "episode", "procedure", "summary", "document", "chunk")
#: The specifications' memory types, and the kind each is stored as: the recall modes and the
#: augmentation format speak of semantic, episodic and procedural memory.
KIND_ALIASES = {"semantic": "fact", "episodic": "episode", "procedural": "procedure"}
STATUSES = ("active", "archived", "superseded", "deleted")
ROLES = ("user", "assistant", "system", "tool")  # any other non-empty string is a speaker name

#: A candidate source's answer: a memory id and the source's raw score (higher is better).
Hit = tuple[str, float]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: The last id's millisecond and random part, and their lock: each process's own (a parent's
#: thread may have held the lock at a fork, and parent and child bumping the same random part
#: within one millisecond would make the same ids).
_last_ids: PerProcess[tuple[threading.Lock, list[int]]] = PerProcess(lambda _parents: (threading.Lock(), [0, 0]))


def six_places(value: float) -> float:
    """``value`` to 6 decimal places, as scores and signals are logged and reported: the float
    nearest a whole number of millionths, in a fifth of the time of ``round(value, 6)`` (which goes
    through decimal digits: the ~150 values of a retrieval took a third of the retrieval log's write).
    It is ``round(value, 6)`` but within a millionth of a tie, where the product rounds first
    (0.7510685 gives 0.751068, ``round`` 0.751069); a magnitude of 1e9 or more, an infinity or NaN
    is left to ``round`` (the product would lose digits of the whole part)."""
    if -1e9 < value < 1e9:
        return round(value * 1e6) / 1e6
    return round(value, 6) if value == value else value  # NaN stays NaN


def new_id() -> str:
    """A ULID: 26 characters that sort by creation time, monotonic within one process."""
    lock, last = _last_ids.get()
    with lock:
        ms = time.time_ns() // 1_000_000
        if ms <= last[0]:
            # Same millisecond (or a clock step back): keep order by bumping the random part.
            ms = last[0]
            rand = last[1] + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 1
        last[0], last[1] = ms, rand
    value = (ms << 80) | (rand & ((1 << 80) - 1))
    out = []
    for _ in range(26):
        out.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(out))


def _refused(self: object, *_: object, **__: object) -> Any:
    raise TypeError(f"{type(self).__name__} is read-only: copy it (dict(...), list(...)) to change it")


class ReadOnlyDict(dict[str, Any]):
    """A dict that refuses changes: the metadata of a record a store answers with, which its cache
    shares with every later question (another user's, through a shared scope). Still a dict to
    ``json.dumps``, ``==`` and ``isinstance``; ``dict(value)`` is a copy to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refused
    clear = pop = popitem = setdefault = update = _refused

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle rebuild it whole, not item by item
        return ReadOnlyDict, (dict(self),)


class ReadOnlyList(list[Any]):
    """A list that refuses changes, inside a :class:`ReadOnlyDict`."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refused
    append = clear = extend = insert = pop = remove = reverse = sort = _refused

    def __reduce__(self) -> tuple[Any, ...]:
        return ReadOnlyList, (list(self),)


def plain(value: Any) -> Any:
    """A deep, changeable copy of :func:`read_only` JSON: plain dicts and lists (a caller's own)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def read_only(value: Any) -> Any:
    """``value`` (decoded JSON) with every dict and list in it made read-only."""
    if isinstance(value, dict):
        return ReadOnlyDict({k: read_only(v) for k, v in value.items()})
    if isinstance(value, list):
        return ReadOnlyList([read_only(v) for v in value])
    return value


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One stored memory. Times are timezone-aware UTC. A record a store answers with may be shared
    (its cache holds it for the next question): it is frozen, and its metadata a
    :class:`ReadOnlyDict` (lists in it :class:`ReadOnlyList`)."""

    id: str
    user_id: str
    content: str
    kind: str
    created_at: datetime
    recorded_at: datetime
    content_hash: str
    agent_id: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    role: str | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    trigger: str | None = None
    action: str | None = None
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    importance: float = 0.5
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    last_accessed_at: datetime | None = None
    access_count: int = 0
    status: str = "active"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    doc_key: str | None = None
    version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = plain(dict(value))
            out[name] = value
        return out


class _Fields(TypedDict, total=False):
    agent_id: str | None
    session_id: str | None
    project_id: str | None
    role: str | None
    subject: str | None
    predicate: str | None
    object: str | None
    trigger: str | None
    action: str | None
    tags: Sequence[str]
    entities: Sequence[str]
    importance: float
    created_at: datetime | str
    valid_from: datetime | str | None
    valid_to: datetime | str | None
    status: str
    metadata: Mapping[str, Any]
    doc_key: str | None
    version: int | None


class MemoryChanges(_Fields, total=False):
    """What ``update`` may change (checked at run time too: anything else is refused by name)."""

    content: str
    kind: str


class MemoryFields(_Fields, total=False):
    """The optional fields of ``add`` beside content, user and kind; ``run_id`` is Mem0's name for
    the session, and ``infer`` may only be False (no model runs on the write path)."""

    id: str
    run_id: str | None
    infer: bool


#: What a history event says happened to a memory (engram.stores.sql.history).
HISTORY_EVENTS = ("add", "update", "supersede", "restore", "delete")


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One change to a memory, as the store's audit log recorded it in the changing transaction.

    ``before`` and ``after`` are the content on either side (None where there was none, and None in
    every event of a deleted memory: deletion erases its text from the log); ``fields`` names what
    changed, never its values. ``event`` is one of :data:`HISTORY_EVENTS`.
    """

    memory_id: str
    event: str
    at: datetime
    before: str | None = None
    after: str | None = None
    fields: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Link:
    """A directed edge between two memories of one user (e.g. ``part_of``, ``supersedes``)."""

    from_id: str
    to_id: str
    type: str
    strength: float = 1.0


@dataclass(frozen=True, slots=True)
class Entity:
    """A canonical entity such as ``customer:a1b2c3d4`` with the names it goes by."""

    id: str
    type: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrictions every candidate source applies inside the store, scoped to one user."""

    kinds: tuple[str, ...] | None = None
    tags_all: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    session_id: str | None = None
    project_id: str | None = None
    agent_id: str | None = None
    statuses: tuple[str, ...] = ("active",)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_after: datetime | None = None
    created_before: datetime | None = None
    #: Fact triple parts, compared case-insensitively (how current truth finds earlier versions).
    subject: str | None = None
    predicate: str | None = None
    #: A filter in Mem0's language (engram.metadata_filter), compiled into the store's queries.
    where: Mapping[str, Any] | None = None

    def describe(self) -> list[str]:
        """Names of the filters in force, for a payload's ``appliedFilters``."""
        names = []
        if self.kinds is not None:
            names.append("kinds")
        if self.tags_all:
            names.append("tags_all")
        if self.tags_any:
            names.append("tags_any")
        for name in ("session_id", "project_id", "agent_id", "subject", "predicate"):
            if getattr(self, name) is not None:
                names.append(name)
        if self.statuses != ("active",):
            names.append("statuses")
        if self.metadata:
            names.append("metadata")
        if self.where:
            names.append("where")
        if self.created_after is not None or self.created_before is not None:
            names.append("created_range")
        return names


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A closed interval [start, end] in UTC that a query refers to."""

    start: datetime
    end: datetime
    expression: str = ""
    #: A vague expression ("recently", "lately") names no edges: it favours memories inside the
    #: range without putting them ahead of better matches outside it.
    vague: bool = False
    #: The period a thing asked about is for ("the sales tax for Q3"): what tells of it is often said
    #: after it or before, so it too favours what falls inside without putting it ahead.
    about: bool = False


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What stage 1 understood of a query (the query type plus what retrieval needs)."""

    text: str
    category: str  # factual | procedural | exploratory | analytical
    entity_focused: bool
    time_focused: bool
    procedural: bool
    requires_domain_db: bool
    entities: tuple[str, ...]
    time_range: TimeRange | None
    weights: Mapping[str, float]
    strategy: str  # key of the weights in STRATEGY_WEIGHTS
    keywords: tuple[str, ...] = ()
    #: The query prefers recent memories without naming a range ("recently", "latest"); "When did
    #: ...?" is time-focused but prefers no age.
    recency: bool = False
    #: The query asks what someone asked ("What did Bob ask last week?"): their questions answer it.
    asks: bool = False
    #: Whose words the query asks for: the entities named just before a verb of saying or feeling
    #: ("What did Priya think of the trial?"). Their own messages answer it.
    speaking: tuple[str, ...] = ()
    #: The query asks for something to be done or suggested ("Write a function that ...", "Any
    #: tips on what to bake?"): the user's standing instructions and preferences shape the answer;
    #: or it asks what those are ("What rules have I asked you to follow?"): they are the answer.
    requests: bool = False
    #: Of those, the queries the user's rules govern: asking for something to be done or made, or
    #: what the rules are; not a question of general knowledge, which ``requests`` also reads (the
    #: rules closest to it, ``closest_rule``, lifted "the base station is 40 m from the greenhouse"
    #: out of first place for "How far is the base station from the greenhouse?").
    governed: bool = False
    #: A type of the user's entities the query asks about as a whole ("Tell me about my customers"):
    #: its slot among ``entities`` (``type:customer``) -> the ids of the entities of that type. A
    #: memory naming any of them names the slot.
    typed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The query asks what is known of the user as a whole ("What do you know about me?"): what
    #: the user said of themselves, and the facts kept, answer it whatever their words.
    profile: bool = False
    #: The query asks what was said in the last conversation ("What did we talk about last time?",
    #: "Where did we leave off?"): the newest conversation answers it whatever its words.
    latest: bool = False
    #: The query asks whether something may be done ("Can I phone Maya in the evening?"): the
    #: standing instructions and preferences of whoever it names answer it.
    permission: bool = False
    #: The name the query asks who or what they are ("Who is Priya?"): what describes them answers it.
    described: tuple[str, ...] = ()
    #: The query asks for the newest of something ("When did Acme last order?", "What's the latest
    #: on Pinecrest?"): the stemmed words of what it asks about besides names (empty: whatever its
    #: entities say); None for any other query.
    newest: tuple[str, ...] | None = None
    #: The shape of value the query asks for ("email", "link", "phone", "identifier": "What's
    #: Alice's email?"): a memory that holds one answers it, whatever its words.
    value: str | None = None
    #: The query asks about what held before and no longer does ("What was my old gym?"): what a
    #: newer version superseded answers it.
    past: bool = False
    #: When it asks only by a time gone by ("Which gym did I go to in September?"), its terms: only
    #: a fact whose predicate's last word is among them answers ("gym", not "membership fee").
    held: tuple[str, ...] = ()
    #: The query asks what the assistant said or suggested ("Which isolation level did you tell me
    #: to use?"): the assistant's long replies are read as its own words.
    yours: bool = False
    #: The query asks why something happened or was decided: an assistant's reply takes more of
    #: the relevance of the turn it follows.
    cause: bool = False
    #: The query asks how something is or was done: an assistant's reply is read as the answer to
    #: the turn it follows, taking all of that turn's relevance.
    how: bool = False
    #: The query asks how something turned out or stands now: a later telling of a best match ranks
    #: with it.
    outcome: bool = False


@dataclass(frozen=True, slots=True)
class RelationType:
    """An ontology edge: entities of ``from_type`` may have ``relation`` to entities of ``to_type``."""

    from_type: str
    relation: str
    to_type: str

    def __str__(self) -> str:
        return f"{self.from_type} --{self.relation}--> {self.to_type}"


@dataclass(frozen=True, slots=True)
class EntityRelation:
    """One stored relation between two entities, with the types it was checked against."""

    from_id: str
    relation: str
    to_id: str
    from_type: str
    to_type: str

    def __str__(self) -> str:
        return f"{self.from_id} --{self.relation}--> {self.to_id}"


@dataclass(frozen=True, slots=True)
class LoggedItem:
    """One returned memory as ranking saw it."""

    id: str
    kind: str
    signals: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class LoggedRetrieval:
    """One logged retrieval; ``used`` is filled from feedback when read back for tuning."""

    id: str
    query: str
    category: str
    strategy: str
    created_at: datetime
    items: tuple[LoggedItem, ...]
    #: searchType, keywordWeight, fusion and weightsSource of the retrieval.
    settings: Mapping[str, Any] = field(default_factory=dict)
    used: tuple[str, ...] = ()

    def returned_ids(self) -> list[str]:
        return [item.id for item in self.items]
