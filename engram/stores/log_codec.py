"""How a logged retrieval's items and settings are written in a store's rows (JSON text)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from engram.model import LoggedItem, six_places

__all__ = ["decode_items", "decode_settings", "encode_items", "item_token"]


def encode_items(items: Sequence[LoggedItem]) -> str:
    """Compact JSON: the signals' names once, then each item's id, kind and values in that order
    (rounded to 6 places; null where an item lacks a signal). Naming all 11 signals in each of 8
    items made a row's items ~2.0 KB (~20 MB a user at the default retention); this form ~1.05 KB
    (2,000 rows of the multi-tenant benchmark's log, re-encoded)."""
    names = list(dict.fromkeys(name for item in items for name in item.signals))
    rows = [
        {"id": i.id, "kind": i.kind,
         "values": [None if (v := i.signals.get(name)) is None else six_places(v) for name in names]}
        for i in items
    ]
    return json.dumps({"signals": names, "items": rows}, separators=(",", ":"), ensure_ascii=False)


def item_token(memory_id: str) -> str:
    """How ``encode_items`` writes a memory's id: an exact substring, so a store finds the retrievals
    that returned a memory without parsing JSON."""
    return '"id":' + json.dumps(memory_id, ensure_ascii=False)


def decode_items(value: Any) -> tuple[LoggedItem, ...]:
    """Either way rows were written: the compact form above, or a list of items each naming its
    signals (before the compact form; such rows stay readable)."""
    data = json.loads(value) if isinstance(value, str | bytes) else value
    if isinstance(data, Mapping):
        names = [str(n) for n in data["signals"]]
        return tuple(
            LoggedItem(str(d["id"]), str(d["kind"]),
                       {n: float(v) for n, v in zip(names, d["values"], strict=True) if v is not None})
            for d in data["items"]
        )
    return tuple(
        LoggedItem(str(d["id"]), str(d["kind"]), {str(k): float(v) for k, v in d["signals"].items()}) for d in data
    )


def decode_settings(value: Any) -> dict[str, Any]:
    data = json.loads(value) if isinstance(value, str | bytes) else value
    return dict(data or {})
