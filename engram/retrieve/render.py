"""Turn a :class:`~engram.retrieve.types.Retrieval` into text an LLM reads.

Two styles:

``policy``
    The retrieval policy's ``formatForSystemPrompt``: messages, facts and summaries under ``###`` headings,
    and Engram's other kinds (procedures, episodes, documents) in sections of the same shape.
``policy_spec``
    The same, exactly as the retrieval policy specifies it, for consumers that parse it: messages,
    facts (with ``confidence``), summaries in that order, then Engram's other kinds, then the
    "_Retrieved N memories in T ms_" footer.
``augmentation``
    The augmentation format (``format_augmentation_context``): summaries, procedures (as "When: ..." /
    "Then: ..." when worded "When <trigger>: <action>"), facts as natural-language triples, past
    interactions with a relative time, and the domain database rows when a
    retrieval carries them (as in the specification's example augmented prompt).

Order: ``policy`` and ``augmentation`` keep the specifications' sections but put them, and the
memories within them, in the retrieval's presentation order (:func:`presentation_order`, the
``interleave`` setting: ``alternate`` gives best, newest, next best, ...), so a model reads the best
memory first; a section comes where its first memory does. ``policy_spec`` keeps the specified
section order and lists each section in presentation order.

Both are pure functions of the retrieval (and ``now`` for relative times), so a rendered prompt
can be cached or compared byte for byte.

What a prompt is made of: each memory appears as its entry's ``content`` only, the text that
selection redacted, clipped and fitted to ``RetrievalConfig.max_tokens``; a record's raw fields
(a fact's subject/predicate/object, a procedure's trigger/action, a document's file name) never
reach it, since they would bypass all three (and could be older than the content after an update).
So the token budget covers the memory text; around it a prompt adds only fixed headings, the
query (augmentation style), the domain rows when a retrieval carries them, and per memory line a
frame of at most :data:`LINE_FRAME_CHARS` characters (bullet, time, role label, relevance, age).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from engram.errors import ValidationError
from engram.ingest.triples import format_semantic_triple
from engram.retrieve.interleave import interleave_orders

__all__ = [
    "LINE_FRAME_CHARS",
    "MAX_ROLE_CHARS",
    "STALE",
    "STYLES",
    "Rendered",
    "Shown",
    "format_augmentation_context",
    "format_policy_prompt",
    "format_semantic_triple",
    "format_time_ago",
    "presentation_order",
    "presented",
    "to_prompt",
]


class _Dated(Protocol):
    @property
    def created_at(self) -> datetime: ...
    @property
    def status(self) -> str: ...


class Shown(Protocol):
    """What rendering reads of a returned memory (a :class:`~engram.retrieve.types.MemoryEntry`):
    described here so that the value types, which render themselves, are not imported back."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def timestamp(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def role(self) -> str | None: ...
    @property
    def record(self) -> _Dated | None: ...


class _Timing(Protocol):
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def included_results(self) -> int: ...
    @property
    def query_time_ms(self) -> float: ...


class Rendered(Protocol):
    """What rendering reads of a retrieval (a :class:`~engram.retrieve.types.Retrieval`)."""

    @property
    def query(self) -> str: ...
    @property
    def memories(self) -> Sequence[Shown]: ...
    @property
    def metadata(self) -> _Timing: ...
    @property
    def domain_rows(self) -> Sequence[Mapping[str, Any]]: ...

STYLES = ("policy", "policy_spec", "augmentation")
#: A message's role is shown when it is a short label (letters, spaces, ' _ -), else as "user".
MAX_ROLE_CHARS = 24
#: What one memory line adds to its text at most: "[YYYY-MM-DD HH:MM UTC] <role>: " in the policy
#: style's messages is the longest frame.
LINE_FRAME_CHARS = 25 + MAX_ROLE_CHARS
_ROLE_LABEL = re.compile(rf"[^\W\d](?:[^\W\d]|[ '_-]){{0,{MAX_ROLE_CHARS - 1}}}")

_AUGMENTATION_CLOSING = (
    "Use this context to inform your response, but be clear about what you know vs. what you're inferring."
)
_DOMAIN_CLOSING = "Based on the above context and current data, please respond to the user's query."


def to_prompt(
    retrieval: Rendered, style: str = "policy", *, now: datetime | None = None, timing: bool = False
) -> str:
    """Render ``retrieval`` in one of :data:`STYLES`; ``now`` only matters for ``augmentation``.

    The same memories always render to the same bytes, so an LLM provider's prompt cache keeps
    working; ``timing`` adds the policy style's "_Retrieved N memories in T ms_" footer, which
    changes on every call (``policy_spec`` always has it, as specified).
    """
    if style == "policy":
        return format_policy_prompt(retrieval, timing=timing)
    if style == "policy_spec":
        return format_policy_prompt(retrieval, timing=True, exact=True)
    if style == "augmentation":
        return format_augmentation_context(retrieval, now=now)
    raise ValidationError("style", f"must be one of {', '.join(STYLES)}")


# -- shared helpers ------------------------------------------------------------------------------


def _parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    # Stored times are UTC; a naive string can only have come from a UTC writer.
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def _created_at(entry: Shown) -> datetime | None:
    if entry.record is not None:
        return entry.record.created_at
    return _parse_time(entry.timestamp)


def _role(entry: Shown) -> str:
    # The role is a record field, not redacted or budgeted text: only a short word-like label
    # (user, assistant, a speaker's name) is shown, never an address, a number or a paragraph.
    role = entry.role
    return role if role and _ROLE_LABEL.fullmatch(role) else "user"


def _group(entries: Iterable[Shown], key: Callable[[Shown], str]) -> dict[str, list[Shown]]:
    groups: dict[str, list[Shown]] = {}
    for entry in entries:
        groups.setdefault(key(entry), []).append(entry)
    return groups


def format_time_ago(then: datetime, now: datetime | None = None) -> str:
    """How long before ``now`` (default: the current UTC time) ``then`` was, in coarse words.

    Buckets are by elapsed time, not calendar days ("yesterday" is 24 to 48 hours ago), and a
    month is 30 days, a year 365, so the answer depends only on the difference.
    """
    if now is None:
        now = datetime.now(UTC)
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    delta = now - then
    # Up to a minute ahead is clock skew between writers, not a memory from the future.
    if delta < timedelta(minutes=-1):
        return "in the future"
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return _plural(seconds // 60, "minute")
    if seconds < 86_400:
        return _plural(seconds // 3600, "hour")
    days = seconds // 86_400
    if days < 2:
        return "yesterday"
    if days < 7:
        return _plural(days, "day")
    if days < 30:
        return _plural(days // 7, "week")
    if days < 365:
        return _plural(days // 30, "month")
    return _plural(days // 365, "year")


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit} ago" if n == 1 else f"{n} {unit}s ago"


# -- policy style --------------------------------------------------------------------------------


def _policy_time(timestamp: str) -> str:
    # The specification's toLocaleString() depends on the server's locale and zone; a fixed UTC format
    # keeps prompts identical across machines (and therefore cacheable and testable).
    parsed = _parse_time(timestamp)
    if parsed is None:
        return timestamp
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


_POLICY_SECTIONS: Mapping[str, str] = {
    "message": "messages",
    "fact": "facts",
    "summary": "summaries",
    "procedure": "procedures",
    "episode": "events",
    "document": "documents",
    "chunk": "documents",
}


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def presentation_order(entries: Sequence[Shown], strategy: str, ratio: float | None = None) -> list[Shown]:
    """The order a prompt lists memories in, from their rank order: ``alternate`` takes the best
    unused, then the newest unused, and so on (``ratio``: the share taken from the best, 0.5 by
    default); ``score_first`` keeps rank order; ``recency_first`` goes newest first. Ties fall
    back to the id."""
    ranked = list(range(len(entries)))
    newest = sorted(ranked, key=lambda i: (-(_created_at(entries[i]) or _EPOCH).timestamp(), entries[i].id))
    order = interleave_orders(ranked, newest, strategy, len(entries), key=lambda i: i, ratio=ratio)
    return [entries[i] for i in order]


def presented(retrieval: Rendered) -> list[Shown]:
    """``retrieval``'s memories in the presentation order its config's ``interleave`` names."""
    config = retrieval.metadata.config
    ratio = config.get("interleaveRatio")
    strategy = str(config.get("interleave", "score_first"))
    return presentation_order(retrieval.memories, strategy, None if ratio is None else float(ratio))


def _policy_section(entry: Shown) -> str:
    # A kind this module does not know still reaches the prompt, as an event, rather than vanish.
    return _POLICY_SECTIONS.get(entry.type, "events")


_POLICY_HEADINGS: Mapping[str, str] = {
    "messages": "### Previous Messages",
    "facts": "### Known Facts",
    "summaries": "### Conversation Summaries",
    "procedures": "### Procedures",
    "events": "### Past Events",
    "documents": "### Documents",
}


def _bullet(entry: Shown) -> str:
    return f"- {entry.content}{_stale(entry)}"


#: What follows a memory a newer version superseded (asked for about the past, or with
#: ``include_superseded``): a model must not read it as what holds now.
STALE = " (no longer holds)"


def _stale(entry: Shown) -> str:
    record = entry.record
    return STALE if record is not None and record.status == "superseded" else ""


def format_policy_prompt(retrieval: Rendered, *, timing: bool = False, exact: bool = False) -> str:
    """The retrieval policy's system-prompt block; '' when nothing was retrieved.

    By default sections come in the order of their first memory (see the module doc) and a fact's
    score is shown as what it is, its relevance to the query (the policy's "confidence" read as
    "probably false" at 0.40). ``exact`` gives the specified format: the specified section order,
    "confidence", and the timing footer. Within a section memories keep the presentation order,
    messages too: ``interleave`` means the same for every kind.
    """
    if not retrieval.memories:
        return ""
    groups = _group(presented(retrieval), _policy_section)
    order = list(_POLICY_HEADINGS) if exact else list(groups)
    label = "confidence" if exact else "relevance"
    lines_of: dict[str, Callable[[Shown], str]] = {
        "messages": lambda m: f"[{_policy_time(m.timestamp)}] {_role(m)}: {m.content}",
        "facts": lambda f: f"- {f.content}{_stale(f)} ({label}: {f.score:.2f})",
    }
    sections = ["## Relevant Context from Previous Conversations\n"]
    for name in order:
        members = groups.get(name, [])
        if members:
            line = lines_of.get(name, _bullet)
            sections.extend([_POLICY_HEADINGS[name], *(line(e) for e in members), ""])
    if timing or exact:
        meta = retrieval.metadata
        sections.append(f"_Retrieved {meta.included_results} memories in {round(meta.query_time_ms)}ms_\n")
    return "\n".join(sections)


# -- augmentation style ----------------------------------------------------------------------------


_AUGMENTATION_TYPES: Mapping[str, str] = {"summary": "summary", "procedure": "procedural", "fact": "semantic"}
_AUGMENTATION_HEADINGS: Mapping[str, str] = {
    "summary": "## Relevant Summaries",
    "procedural": "## Relevant Procedures",
    "semantic": "## Relevant Facts",
    "episodic": "## Relevant Past Interactions",
}


#: A procedure worded "When <trigger>: <action>" (as one given only its trigger and action is
#: stored): the augmentation format shows it as its "- When: ..." / "  Then: ..." pair. Read from the
#: content shown, so redaction, clipping and the token budget still hold.
_WHEN_THEN = re.compile(r"When\s+(.+?):\s+(.+)\Z", re.DOTALL)


def _augmentation_type(entry: Shown) -> str:
    # Messages, episodes, documents and chunks are all "what happened / was said" to this format.
    return _AUGMENTATION_TYPES.get(entry.type, "episodic")


def _domain_row(row: Mapping[str, Any]) -> str:
    return "- " + ", ".join(f"{key}: {value}" for key, value in row.items())


def format_augmentation_context(retrieval: Rendered, *, now: datetime | None = None) -> str:
    """The augmentation format (``format_augmentation_context``); '' when there are neither memories nor rows.

    Blocks are separated by exactly one blank line, as in the specification's example prompt (its
    code would leave a doubled blank line before the closing line and before a first section
    that is not summaries). With domain rows the prompt ends as the specification's example does: the
    rows, a rule, and the instruction to answer from context and current data.
    """
    if not retrieval.memories and not retrieval.domain_rows:
        return ""
    if now is None:
        now = datetime.now(UTC)
    groups = _group(presented(retrieval), _augmentation_type)

    def line(entry: Shown) -> str:
        rule = _WHEN_THEN.match(entry.content) if entry.type == "procedure" else None
        if rule is not None:
            return f"- When: {' '.join(rule[1].split())}\n  Then: {' '.join(rule[2].split())}\n"
        created = _created_at(entry) if _augmentation_type(entry) == "episodic" else None
        if created is None:
            return f"- {entry.content}{_stale(entry)}\n"
        return f"- {entry.content}{_stale(entry)} ({format_time_ago(created, now)})\n"

    # Sections in the order of their first memory, so the best one is read first.
    blocks = [
        _AUGMENTATION_HEADINGS[name] + "\n" + "".join(line(e) for e in members) for name, members in groups.items()
    ]

    head = (
        "# Retrieved Context\n\n"
        "The following information from your memory may be relevant to the query: "
        f'"{retrieval.query}"\n'
    )
    parts = [head, *blocks]
    if retrieval.domain_rows:
        rows = "".join(_domain_row(row) + "\n" for row in retrieval.domain_rows)
        parts.append("# Domain Database Query Results\n\n" + rows)
        parts.append("---\n\n" + _DOMAIN_CLOSING + "\n")
    else:
        parts.append(_AUGMENTATION_CLOSING + "\n")
    return "\n".join(parts)
