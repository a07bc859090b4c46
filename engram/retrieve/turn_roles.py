"""Who said a turn, read from its role and the role its message was given (``message_role``):
the user, a named person, the assistant, or a notice or tool's output that is no one's turn."""

from __future__ import annotations

import functools

from engram.model import MemoryRecord
from engram.retrieve.standing import machine_said
from engram.text import ASIDE_ROLES, ROLE_WORDS, USER_ROLES

__all__ = ["among_people", "aside", "roles", "said_by_a_person", "said_by_the_assistant", "users_turn"]


def said_by_a_person(record: MemoryRecord) -> bool:
    """Whether ``record`` is a message a person wrote: the user's, or a named speaker's (not an
    assistant's, a notice, a tool's output or a memory stored without a role)."""
    return bool(roles(record)[0]) and not machine_said(record) and not aside(record)


def said_by_the_assistant(record: MemoryRecord) -> bool:
    """Whether ``record`` is the assistant's turn (or a model's), by its role or the role its message
    was given; not a notice or a tool's output."""
    return machine_said(record) and not aside(record)


def users_turn(record: MemoryRecord) -> bool:
    """Whether ``record`` is the user's message, by its role or the role its message was given (a
    named user, "Alex", whose message was given as the user's)."""
    role, given = roles(record)
    return role in USER_ROLES or given in USER_ROLES


def roles(record: MemoryRecord) -> tuple[str, str]:
    """``record``'s role and the role its message was given (``message_role``), read alike."""
    given = (record.metadata or {}).get("message_role")
    return _folded(record.role, given if isinstance(given, str) else str(given) if given else None)


@functools.lru_cache(maxsize=1024)
def _folded(role: str | None, given: str | None) -> tuple[str, str]:
    # A ranking reads the roles of its ~200 candidates about a thousand times (each turn beside
    # each of its neighbours): ~1 ms a retrieval at 100k memories, folded anew each time.
    return (role or "").strip().casefold(), (given or "").strip().casefold()


def among_people(record: MemoryRecord) -> bool:
    """Whether ``record`` may be a turn of a conversation between people: said by a named person,
    not by an assistant, a user with no name or in a role given to another part."""
    role, given = roles(record)
    return bool(role) and role not in ROLE_WORDS and not (given and given not in USER_ROLES)


def aside(record: MemoryRecord) -> bool:
    """Whether ``record`` is a notice or a tool's output (by its role or the role it was given)."""
    role, given = roles(record)
    return role in ASIDE_ROLES or given in ASIDE_ROLES
