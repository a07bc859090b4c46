"""What ``add`` was handed, as the items ``add_many`` stores: a text, or a conversation of chat messages.

A chat message is ``{"role", "content", "name"?, "created_at"?}`` (the shape OpenAI, Anthropic and
Mem0 users already hold), plus what it shows besides its words: ``image_caption``, ``alt_text`` or
``file_name`` (:mod:`engram.attachments`), kept in the memory's metadata and searched with its
text. Each message becomes one ``message`` memory: its ``name``, when given, is the speaker, else
its role (a named message keeps its role in the metadata as ``message_role``, as the LangChain
integration does: an assistant named "Sol" is still an assistant); ``run_id`` (Mem0's name for a
conversation) is the session.

A message without its own ``created_at`` gets the batch's time plus its position in microseconds:
every message of one call would otherwise share a timestamp, and the neighbours a retrieval
expands to (and "most recent" recall) would come back in no particular order. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.attachments import ATTACHMENT_KEYS
from engram.errors import ValidationError, short_repr
from engram.validate import to_utc

__all__ = ["FROM_MESSAGE", "MESSAGE_FIELDS", "Messages", "as_items", "is_conversation"]

#: One chat message or a list of them, as ``add`` accepts.
Messages = Mapping[str, Any] | Sequence[Mapping[str, Any]]

#: The keys a chat message may carry; any other is refused by name rather than silently dropped.
MESSAGE_FIELDS = ("role", "content", "name", "created_at", *ATTACHMENT_KEYS)
#: The fields of a stored memory that its message gave (a name stands in the role): a refusal of one
#: names the message (``messages[1].content``); the rest (user_id, session_id, ...) are the call's own.
FROM_MESSAGE = ("content", "role", "created_at")


def is_conversation(content: Any) -> bool:
    """True for one message (a mapping) or a list of them; False for a text (or anything else)."""
    return isinstance(content, Mapping) or (
        isinstance(content, Sequence) and not isinstance(content, str | bytes)
    )


def as_items(content: Any, *, user_id: Any, kind: str, fields: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``add_many`` items for ``add(content, user_id=..., kind=..., **fields)``.

    ``fields`` may hold ``run_id`` (the session; it must agree with ``session_id`` if both are
    given) and ``infer`` (only False: Engram stores what it is given and runs no model on writes).
    """
    given = dict(fields)
    run_id = given.pop("run_id", None)
    if given.pop("infer", False) is not False:
        raise ValidationError("infer", "Engram stores messages as given and runs no LLM on the write path; "
                              "omit infer or pass infer=False")
    if run_id is not None:
        session = given.get("session_id")
        if session is not None and session != run_id:
            raise ValidationError("run_id", f"names session {short_repr(run_id)} but session_id is "
                                  f"{short_repr(session)}; give one of them")
        given["session_id"] = run_id
    base = {**given, "user_id": user_id, "kind": kind}
    if not is_conversation(content):
        return [{**base, "content": content}]
    messages = [content] if isinstance(content, Mapping) else list(content)
    if not messages:
        raise ValidationError("messages", "must hold at least one message")
    start = to_utc(given["created_at"], "created_at") if given.get("created_at") is not None else datetime.now(UTC)
    return [_item(message, i, base, start) for i, message in enumerate(messages)]


def _item(message: Any, position: int, base: Mapping[str, Any], start: datetime) -> dict[str, Any]:
    where = f"messages[{position}]"
    if not isinstance(message, Mapping):
        raise ValidationError(where, f"must be a mapping with role and content, got {type(message).__name__}")
    unknown = sorted(str(k) for k in message if k not in MESSAGE_FIELDS)
    if unknown:
        raise ValidationError(f"{where}.{unknown[0]}", f"unknown message field; allowed: {', '.join(MESSAGE_FIELDS)}")
    role = message.get("role")
    if not isinstance(role, str) or not role.strip():
        raise ValidationError(f"{where}.role", "must be a non-empty string (user, assistant, system, tool, ...)")
    name = message.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValidationError(f"{where}.name", "must be a non-empty string when given")
    when = message.get("created_at")
    created = to_utc(when, f"{where}.created_at") if when is not None else start + timedelta(microseconds=position)
    item = {**base, "content": _text(message.get("content"), where), "role": name or role, "created_at": created}
    shown = {key: message[key] for key in ATTACHMENT_KEYS if message.get(key) is not None}
    if name:  # the speaker's name stands in the role: what the turn was (an assistant's?) is kept beside it
        shown["message_role"] = role
    if shown:
        given = base.get("metadata")
        if given is not None and not isinstance(given, Mapping):
            raise ValidationError("metadata", f"must be a mapping, got {type(given).__name__}")
        item["metadata"] = {**(given or {}), **shown}
    return item


def _text(content: Any, where: str) -> str:
    """A message's text; a list of parts (``[{"type": "text", "text": ...}]``) is joined by newlines."""
    if isinstance(content, Sequence) and not isinstance(content, str | bytes):
        texts = [part.get("text") for part in content if isinstance(part, Mapping) and part.get("type") == "text"]
        strings = [t for t in texts if isinstance(t, str)]
        if not strings or len(strings) != len(texts):
            raise ValidationError(f"{where}.content", "must be a string or a list of {type: text, text} parts")
        return "\n".join(strings)
    if not isinstance(content, str):
        raise ValidationError(f"{where}.content", f"must be a string, got {type(content).__name__}")
    return content  # emptiness and length are checked with every other item's, by normalize
