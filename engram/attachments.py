"""What a message shows besides its words: an image's caption, its alt text, a file's name.

An agent that is shown a photo stores what it was told about it ("Here's my latest painting") and,
separately, what the photo shows ("a painting of a horse in a field"). Questions ask about the
second ("What has Melanie painted?"), and no retrieval can find words it never indexed. So an
attachment's text becomes part of the memory's text, in brackets after what was said
(``... [image: a painting of a horse in a field]``): the keyword and meaning sources search it,
the prompt shows it to the model (which never sees the image) and the explanation names it. The
attachment also stays under its own key in ``metadata``. This is what a vision model's description
does in Mem0, without a model on the write path: the caller passes the caption it has.

A chat message carries them as keys beside ``role`` and ``content``; any memory as keys of its
``metadata``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram.errors import ValidationError

__all__ = ["ATTACHMENT_KEYS", "MAX_ATTACHMENT_CHARS", "attachments", "described"]

#: Each key and how the memory's text names it.
ATTACHMENT_KEYS: Mapping[str, str] = {"image_caption": "image", "alt_text": "image alt text", "file_name": "file"}
#: The longest attachment text kept: a caption, not a document (documents have their own API).
MAX_ATTACHMENT_CHARS = 2000


def attachments(metadata: Mapping[str, Any], *, strict: bool = True) -> list[tuple[str, str]]:
    """The (key, text) of each attachment in ``metadata``, in :data:`ATTACHMENT_KEYS` order;
    ValidationError naming the key when one is not a string of at most ``MAX_ATTACHMENT_CHARS``
    (without ``strict``, such a value is left out: metadata stored before attachments existed)."""
    found: list[tuple[str, str]] = []
    for key in ATTACHMENT_KEYS:
        value = metadata.get(key)
        if value is None:
            continue
        if not strict and (not isinstance(value, str) or len(value) > MAX_ATTACHMENT_CHARS):
            continue
        if not isinstance(value, str):
            raise ValidationError(f"metadata.{key}", f"must be a string, got {type(value).__name__}")
        if "\x00" in value:  # it joins the memory's text, which holds none
            raise ValidationError(f"metadata.{key}", "must not contain NUL characters")
        text = " ".join(value.split())
        if len(text) > MAX_ATTACHMENT_CHARS:
            raise ValidationError(f"metadata.{key}", f"{len(text):,} characters, at most {MAX_ATTACHMENT_CHARS:,}")
        if text:
            found.append((key, text))
    return found


def described(content: str, metadata: Mapping[str, Any]) -> str:
    """``content`` followed by each attachment of ``metadata`` it does not already show."""
    parts = [content]
    for key, text in attachments(metadata):
        shown = f"[{ATTACHMENT_KEYS[key]}: {text}]"
        if shown not in content:
            parts.append(shown)
    return " ".join(parts)
