"""LongMemEval (Wu et al., ICLR 2025) as :class:`EvalCase` values: the only dataset-specific code.

An item carries its own haystack: ``haystack_sessions[i]`` (a list of ``{"role", "content",
"has_answer"?}`` turns) happened at ``haystack_dates[i]`` and is named ``haystack_session_ids[i]``.
Gold is ``answer_session_ids`` for sessions and the turns marked ``has_answer`` for turns. Dates look
like ``2023/05/20 (Sat) 02:21`` and carry no zone; the benchmark treats them as one clock, so UTC.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.eval import EvalCase, EvalDoc

__all__ = ["cases", "load", "parse_date"]

ABSTENTION_SUFFIX = "_abs"


def parse_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` as an aware UTC datetime; the weekday is redundant and ignored."""
    parts = text.split()
    if len(parts) == 3 and parts[1].startswith("("):
        parts = [parts[0], parts[2]]
    try:
        return datetime.strptime(" ".join(parts), "%Y/%m/%d %H:%M").replace(tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"not a LongMemEval date: {text!r}") from exc


def load(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The item list from a ``.json`` or ``.json.gz`` file."""
    with Path(path).open("rb") as raw:
        magic = raw.read(2)
    opener: Any = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LongMemEval items")
    return data


def _case(item: Mapping[str, Any]) -> EvalCase:
    documents: list[EvalDoc] = []
    gold_turns: set[str] = set()
    seen: dict[str, int] = {}
    for session_id, date, turns in zip(
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
    ):
        created_at = parse_date(date)
        # A few haystacks hold the same session twice (at different dates); a suffix keeps doc ids unique.
        seen[session_id] = seen.get(session_id, 0) + 1
        prefix = session_id if seen[session_id] == 1 else f"{session_id}#{seen[session_id]}"
        for index, turn in enumerate(turns):
            content = turn.get("content") or ""
            if not content.strip():
                continue  # Memory refuses empty content, and an empty turn cannot be retrieved anyway
            doc_id = f"{prefix}:{index}"
            documents.append(EvalDoc(doc_id, session_id, str(turn["role"]), content, created_at))
            if turn.get("has_answer") is True:
                gold_turns.add(doc_id)
    return EvalCase(
        question_id=str(item["question_id"]),
        question_type=str(item["question_type"]),
        question=str(item["question"]),
        now=parse_date(item["question_date"]),
        documents=tuple(documents),
        gold_turns=frozenset(gold_turns),
        gold_sessions=frozenset(str(s) for s in item["answer_session_ids"]),
    )


def cases(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]], *, include_abstention: bool = False,
    limit: int | None = None,
) -> Iterator[EvalCase]:
    """Cases in file order; abstention questions (no answer exists, so nothing to retrieve) skipped."""
    items: Iterable[Mapping[str, Any]] = load(source) if isinstance(source, (str, os.PathLike)) else source
    produced = 0
    for item in items:
        if limit is not None and produced >= limit:
            return
        if not include_abstention and str(item["question_id"]).endswith(ABSTENTION_SUFFIX):
            continue
        produced += 1
        yield _case(item)
