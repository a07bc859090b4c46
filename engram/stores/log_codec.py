"""How a logged retrieval's items and settings are written in a store's rows (JSON text)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engram.model import LoggedItem

__all__ = ["decode_items", "decode_settings", "encode_items", "item_token"]


def encode_items(items: Sequence[LoggedItem]) -> str:
    """Compact JSON (signals rounded to 6 places): the log row stays a few hundred bytes."""
    return json.dumps(
        [{"id": i.id, "kind": i.kind, "signals": {k: round(v, 6) for k, v in i.signals.items()}} for i in items],
        separators=(",", ":"),
        ensure_ascii=False,
    )


def item_token(memory_id: str) -> str:
    """How ``encode_items`` writes a memory's id: an exact substring, so a store finds the retrievals
    that returned a memory without parsing JSON."""
    return '"id":' + json.dumps(memory_id, ensure_ascii=False)


def decode_items(value: Any) -> tuple[LoggedItem, ...]:
    data = json.loads(value) if isinstance(value, str | bytes) else value
    return tuple(
        LoggedItem(str(d["id"]), str(d["kind"]), {str(k): float(v) for k, v in d["signals"].items()}) for d in data
    )


def decode_settings(value: Any) -> dict[str, Any]:
    data = json.loads(value) if isinstance(value, str | bytes) else value
    return dict(data or {})
