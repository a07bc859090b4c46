"""A ranking's result: every candidate's signals and score as columns, explained on demand.

:func:`engram.retrieve.rank.rank` scores all candidates at once; most of them are never shown.
The second hop reads only the best few and which entities the candidates name, so a
:class:`Ranking` makes the explained items (:class:`~engram.retrieve.types.Scored`, with their
reasons) only when asked: :meth:`Ranking.best` for a few, :meth:`Ranking.scored` for all; a
retrieval takes :meth:`Ranking.unexplained` and explains only what selection keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.attachments import ATTACHMENT_KEYS, attachments
from engram.model import MemoryRecord, TimeRange
from engram.retrieve.asked_value import VALUE_NAMES
from engram.retrieve.gain_weights import ANSWER_GAIN, CONTEXT_GAIN
from engram.retrieve.standing import machine_said
from engram.retrieve.turn_roles import users_turn
from engram.retrieve.types import Scored

__all__ = [
    "AHEAD_SIGNAL",
    "ASK_SIGNAL",
    "CONTEXT_SIGNAL",
    "CONVERSATION_SIGNAL",
    "DESCRIBES_SIGNAL",
    "LATER_SIGNAL",
    "LATEST_SIGNAL",
    "NEWEST_SIGNAL",
    "PAST_SIGNAL",
    "RULE_SIGNAL",
    "STANDING_SIGNAL",
    "TYPE_SIGNAL",
    "VALUE_SIGNAL",
    "VOICE_SIGNAL",
    "Ranking",
]

ASK_SIGNAL = "asked"
VOICE_SIGNAL = "voice"
STANDING_SIGNAL = "standing"
RULE_SIGNAL = "closest_rule"
TYPE_SIGNAL = "entity_type"
LATEST_SIGNAL = "last_conversation"
LATER_SIGNAL = "later_telling"
DESCRIBES_SIGNAL = "describes"
NEWEST_SIGNAL = "newest"
VALUE_SIGNAL = "holds_value"
PAST_SIGNAL = "no_longer_holds"
AHEAD_SIGNAL = "names_day"
CONVERSATION_SIGNAL = "same_conversation"
CONTEXT_SIGNAL = "conversation_context"

_NONE: Mapping[str, float] = MappingProxyType({})
#: The support of its conversation from which a turn's reasons say so (a third of a full match).
_TOLD_TOGETHER = 0.3
#: The context lent by the turn next to it from which a turn's reasons say so (a fifth of a full
#: match: an assistant's reply takes a third of what it follows); an answer to the assistant's
#: question, which gains ANSWER_GAIN of it rather than CONTEXT_GAIN, says so from as large a gain.
_NEXT_TO = 0.2

# Sources whose reasons are written out by name; any other source is credited as "found by <name>".
_KNOWN_SOURCES = frozenset(
    ("semantic", "keyword", "keyword_in_range", "entity", "temporal", "procedural", "summary", "links", "latest",
     "mentioned")
)


@dataclass(frozen=True, slots=True)
class Ranking:
    """Scores and signals of ``records`` (``columns[j][i]`` is record ``i``'s value of the signal
    ``names[j]``), best first in ``order`` (ties by id), with what their reasons are written from:
    the sources that found each memory, the query's entities and time range, the entities each
    candidate names and the second hop's bridges."""

    records: Sequence[MemoryRecord]
    scores: Sequence[float]
    names: tuple[str, ...]
    columns: Sequence[Sequence[float]]
    weights: Mapping[str, float]
    order: Sequence[int]
    vectors: Mapping[str, npt.NDArray[np.float32]]
    sources: Mapping[str, Sequence[str]]
    query_entities: Sequence[str]
    named_by: Sequence[Set[str]]
    time_range: TimeRange | None
    bridges: Mapping[str, tuple[float, str]]
    #: Memory id -> the sentence of it whose own vector gave its meaning (engram.ingest.facets).
    sentences: Mapping[str, str] = field(default_factory=dict)
    #: The query asks how something is done: a procedure's ``standing`` says so.
    procedural: bool = False
    #: The user's turns that gained as answers to the assistant's question (engram.retrieve.episodes.answers).
    answered: frozenset[str] = frozenset()
    #: ... and those that gained so as what the user decided, for a question of the outcome
    #: (engram.retrieve.later.decisions).
    decided: frozenset[str] = frozenset()
    #: The shape of value the query asks for (engram.retrieve.asked_value), named in a reason.
    value: str | None = None

    def __len__(self) -> int:
        return len(self.records)

    def best(self, n: int) -> list[Scored]:
        """The ``n`` best items, explained."""
        return [self._item(at, tuple(column[at] for column in self.columns)) for at in self.order[:n]]

    def scored(self) -> list[Scored]:
        """Every item, explained, best first."""
        rows = list(zip(*self.columns, strict=True)) if self.columns else []
        return [self._item(at, rows[at]) for at in self.order]

    def unexplained(self) -> list[Scored]:
        """Every item, best first, with empty signals, weights and reasons: :meth:`explained` adds
        them to the few a retrieval returns (explaining all ~70 candidates cost as much as ranking
        them)."""
        records, scores, vectors = self.records, self.scores, self.vectors
        # By position (record, score, signals, weights, reasons, vector): ~70 of them a retrieval.
        return [
            Scored((record := records[at]), scores[at], _NONE, _NONE, (), vectors.get(record.id))
            for at in self.order
        ]

    def having(self, signal: str) -> frozenset[str]:
        """The ids of the items whose ``signal`` is above 0 (none when no column holds it)."""
        if signal not in self.names:
            return frozenset()
        column = self.columns[self.names.index(signal)]
        return frozenset(record.id for record, value in zip(self.records, column, strict=True) if value > 0)

    def explained(self, items: Sequence[Scored]) -> list[Scored]:
        """``items`` (this ranking's, in any order, their records possibly replaced) with their
        signals, weights and reasons."""
        at_of = {record.id: at for at, record in enumerate(self.records)}
        out: list[Scored] = []
        for item in items:
            at = at_of[item.record.id]
            out.append(replace(item, **self._explanation(at, tuple(column[at] for column in self.columns))))
        return out

    def _item(self, at: int, values: tuple[float, ...]) -> Scored:
        record = self.records[at]
        return Scored(
            record=record, score=self.scores[at], vector=self.vectors.get(record.id),
            **self._explanation(at, values),
        )

    def _explanation(self, at: int, values: tuple[float, ...]) -> dict[str, Any]:
        record = self.records[at]
        signals = dict(zip(self.names, values, strict=True))
        bridge = self.bridges.get(record.id)
        reasons = _reasons(
            record, self.sources.get(record.id, ()), signals, self.query_entities, self.named_by[at],
            self.time_range, bridge[1] if bridge else None, self.sentences.get(record.id), self.procedural,
            record.id in self.answered, self.value, record.id in self.decided,
        )
        return {"signals": signals, "weights": dict(self.weights), "reasons": reasons}


def _reasons(
    record: MemoryRecord,
    found_by: Sequence[str],
    signals: Mapping[str, float],
    query_entities: Sequence[str],
    candidate_entities: Set[str],
    time_range: TimeRange | None,
    bridge: str | None = None,
    sentence: str | None = None,
    procedural: bool = False,
    answered: bool = False,
    value: str | None = None,
    decided: bool = False,
) -> tuple[str, ...]:
    reasons: list[str] = []
    names = set(found_by)
    if "semantic" in names:
        reasons.append(f"semantic match {signals['semantic_similarity']:.2f}")
    if sentence is not None:
        shown = sentence if len(sentence) <= 100 else sentence[:99] + "…"
        reasons.append(f"its sentence '{shown}' matches in meaning {signals['semantic_similarity']:.2f}")
    if "keyword" in names or "keyword_in_range" in names:
        reasons.append("keyword match")
    # Entity and time facts are reported whenever they hold, whichever source found the memory.
    seen: set[str] = set()
    for entity in query_entities:
        if entity in candidate_entities and entity not in seen:
            seen.add(entity)
            reasons.append(f"mentions {entity}")
    if "entity" in names and not seen:
        reasons.append("entity match")
    if bridge is not None:
        reasons.append(f"mentions {bridge}, as a top result does")
    elif signals.get("entity_overlap") and not seen and not signals.get(DESCRIBES_SIGNAL):
        reasons.append("beside a turn that names what the query names")  # episodes.named_next_to
    if signals.get(ASK_SIGNAL):
        reasons.append("a question, as asked")
    if signals.get(VOICE_SIGNAL):
        reasons.append("in the words of whom the query asks about")
    if signals.get(CONTEXT_SIGNAL, 0.0) >= (_NEXT_TO * CONTEXT_GAIN / ANSWER_GAIN if answered else _NEXT_TO):
        reasons.append(_next_to(record, answered, decided))
    if signals.get(CONVERSATION_SIGNAL, 0.0) >= _TOLD_TOGETHER:
        reasons.append("in a conversation between people whose other turns match")
    if signals.get(DESCRIBES_SIGNAL):
        reasons.append("says who or what the query asks about is")
    if signals.get(LATEST_SIGNAL):
        reasons.append("from the last conversation" if signals[LATEST_SIGNAL] > 0.5 else "from a recent conversation")
    if signals.get(PAST_SIGNAL):
        reasons.append("what held before a newer version, asked for")
    if signals.get(VALUE_SIGNAL):
        shape = VALUE_NAMES.get(value or "")
        reasons.append(f"holds {shape}, as the query asks" if shape else "holds the kind of value the query asks for")
    if signals.get(LATER_SIGNAL, 0.0) >= _NEXT_TO:
        reasons.append("said later of what a top match tells")
    if signals.get(NEWEST_SIGNAL):
        reasons.append("the newest of what the query asks about" if signals[NEWEST_SIGNAL] >= 1.0
                       else "among the newest of what the query asks about")
    if signals.get(STANDING_SIGNAL):
        reasons.append("a procedure, for a question of how something is done"
                       if procedural and record.kind == "procedure"
                       else "the user's standing instruction, preference or own statement, asked for")
    if signals.get(RULE_SIGNAL):
        reasons.append("the user's standing statement closest to this request" if signals[RULE_SIGNAL] >= 1.0
                       else "among the user's standing statements closest to this request")
    if time_range is not None:
        label = time_range.expression or f"{time_range.start.date()}..{time_range.end.date()}"
        if time_range.start <= record.created_at <= time_range.end:
            reasons.append(f"in time range '{label}'")
        elif signals.get(AHEAD_SIGNAL):
            reasons.append(f"names a day in '{label}'")
    for key, text in attachments(record.metadata, strict=False):
        reasons.append(f"shows {ATTACHMENT_KEYS[key]}: {text if len(text) <= 80 else text[:79] + '…'}")
    if "procedural" in names or record.kind == "procedure":
        reasons.append("procedure")
    if "summary" in names or record.kind == "summary":
        reasons.append("summary")
    if "links" in names:
        reasons.append("linked from another result")
    # "links:<id>" names the memory it was reached from; unknown sources are still credited.
    for name in sorted(names - _KNOWN_SOURCES) if not names <= _KNOWN_SOURCES else ():
        if name.startswith("links:"):
            reasons.append(f"linked from {name[len('links:') :]}")
        else:
            reasons.append(f"found by {name}")
    return tuple(reasons)


def _next_to(record: MemoryRecord, answered: bool = False, decided: bool = False) -> str:
    """Why a turn gained from the turn next to it, as that turn's part in the conversation."""
    if machine_said(record):
        return "the reply to a turn that matches"
    if decided:
        return "what the user decided, next to a turn that matches"
    if answered:  # also a named user's ("Alex"), given as the user's message
        return "answers the assistant's question, which matches"
    if users_turn(record):
        return "next to an assistant's turn that matches"
    return "next to a turn that matches"
