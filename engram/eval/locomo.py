"""LoCoMo (Maharana et al., ACL 2024) as :class:`EvalCase` values.

One conversation is one user's memory: two named speakers over many dated sessions. Every turn is a
document whose role is its speaker's name and whose time is its session's ``session_N_date_time``
(``'1:56 pm on 8 May, 2023'``, no zone: UTC). A turn that shares a photo carries the photo's caption
(``blip_caption``), as the benchmark's own systems read it. Every question of a conversation shares
that conversation's documents (the same tuple object, so the runner indexes it once); its reference
time is the last session's time. Gold is the ``evidence`` turn ids; category 5 (adversarial: no
answer exists) is skipped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.attachments import described
from engram.eval import EvalCase, EvalDoc

__all__ = ["CATEGORIES", "cases", "parse_date"]

#: Category numbers as the dataset's own evaluation names them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SKIPPED = frozenset({5})

_SESSION = re.compile(r"session_(\d+)$")
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def parse_date(text: str) -> datetime:
    """``'1:56 pm on 8 May, 2023'`` as an aware UTC datetime."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"not a LoCoMo date: {text!r}") from exc


def _turn_text(turn: Mapping[str, Any]) -> str:
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        # As a chat message's image_caption is stored (engram.attachments).
        return described(text, {"image_caption": caption})
    return text


def _documents(conversation: Mapping[str, Any]) -> tuple[tuple[EvalDoc, ...], datetime]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.match(key)))
    documents: list[EvalDoc] = []
    last = None
    for number in numbers:
        turns = conversation.get(f"session_{number}") or []
        when = parse_date(str(conversation[f"session_{number}_date_time"]))
        last = when if last is None or when > last else last
        for turn in turns:
            content = _turn_text(turn)
            if content:
                documents.append(EvalDoc(_evidence_id(str(turn["dia_id"])), f"session_{number}",
                                         str(turn["speaker"]), content, when))
    if last is None:
        raise ValueError("a conversation without sessions")
    return tuple(documents), last


def _evidence_id(raw: str) -> str:
    """``D1:3`` whatever the spacing the dataset's annotators typed (``D:1:3``, ``D1: 3``)."""
    m = _EVIDENCE.search(raw)
    return f"D{m.group(1)}:{m.group(2)}" if m else raw.strip()


def load(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LoCoMo conversations")
    return data


def cases(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]], *, limit: int | None = None
) -> Iterator[EvalCase]:
    """Questions of categories 1-4 in file order, each conversation's documents shared by its questions."""
    items: Iterable[Mapping[str, Any]] = load(source) if isinstance(source, (str, os.PathLike)) else source
    produced = 0
    for item in items:
        documents, last = _documents(item["conversation"])
        known = {d.doc_id: d.session_id for d in documents}
        for number, qa in enumerate(item.get("qa") or []):
            category = int(qa.get("category", 0))
            if category in SKIPPED or category not in CATEGORIES:
                continue
            gold = frozenset(_evidence_id(str(e)) for e in qa.get("evidence") or []) & set(known)
            if not gold:
                continue  # evidence that names no turn of the conversation cannot be retrieved
            if limit is not None and produced >= limit:
                return
            produced += 1
            yield EvalCase(
                question_id=f"{item.get('sample_id', 'conv')}:{number}",
                question_type=CATEGORIES[category],
                question=str(qa["question"]),
                now=last,
                documents=documents,
                gold_turns=gold,
                gold_sessions=frozenset(known[g] for g in gold),
            )
