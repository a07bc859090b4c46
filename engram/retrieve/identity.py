"""Questions about who someone is ("Who is Priya?", "Tell me about Jess", "What do you know about
Tiago?"): their answer says what the person is, does or is to the user ("Priya Nair does operations
and finance", "my sister Jess", "Jess lives in Porto"), while the person's own chat messages name
them as often and share more of the question's words. Such a question lets the memories that
describe the person gain (:func:`described`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from engram.ingest.entity_index import EntityIndex
from engram.model import MemoryRecord
from engram.retrieve.latest import SHORT_QUESTION

__all__ = ["asked_who", "described"]

_OPENING = r"^\W*(?:(?:so|and|ok|okay|hey|sorry|remind\s+me|tell\s+me|do\s+you\s+(?:know|remember))\b[\s,]*)*"
_NAME = r"(?P<name>[\w'’-]+(?:\s+[\w'’-]+){0,3}?)"
#: The question names one person or thing and asks only who or what they are; each form must be
#: the whole question ("Who is Priya meeting tomorrow?" asks about one thing she does).
_WHO = (
    re.compile(
        _OPENING + r"(?:who(?:\s+(?:is|was)|'s|’s)|tell\s+me\s+(?:more\s+)?about|what\s+(?:do|can)\s+you\s+"
        r"(?:know|tell\s+me|remember)\s+about|what\s+do\s+(?:we|i)\s+know\s+about"
        rf"|what\s+(?:have\s+i|did\s+i)\s+(?:told|tell)\s+you\s+about)\s+{_NAME}(?:\s+again)?[\s?.!]*$",
        re.IGNORECASE,
    ),
    # "Remind me who Priya is", "Do you know who Tiago is?"
    re.compile(_OPENING + rf"who\s+{_NAME}\s+(?:is|was)(?:\s+again)?[\s?.!]*$", re.IGNORECASE),
)
#: Not a person or thing of the user's: the user themselves, a group, a type ("my customers").
_NOT_A_NAME = re.compile(
    r"^(?:me|myself|us|you|yourself|him|her|them|it|this|that|everyone|everybody|someone|anyone"
    r"|(?:my|our|your|the|a|an|his|her|their|this|that|these|those)\b.*)$",
    re.IGNORECASE,
)
#: What says what someone is, does or is to others, right after their name (and a surname).
_SAYS_WHAT = (r"(?:is|was|are|were|does|did|runs|ran|owns|works|worked|lives|lived|handles|manages|leads"
              r"|heads|teaches|studies|studied|helps|looks\s+after|takes\s+care\s+of|has\s+been|used\s+to)")
#: Who someone is to the user or to others, right before their name ("my sister Jess").
_RELATION = (r"(?:sister|brother|husband|wife|partner|son|daughter|mum|mom|mother|dad|father|aunt|uncle"
             r"|cousin|niece|nephew|grandma|grandmother|grandpa|grandfather|friend|boyfriend|girlfriend"
             r"|colleague|coworker|co-worker|boss|manager|neighbou?r|roommate|flatmate|accountant|doctor"
             r"|dentist|lawyer|assistant|contact|client|customer|teacher|coach|therapist|landlord|mentor)")


def asked_who(query: str, entities: Sequence[str], index: EntityIndex | None = None) -> tuple[str, ...]:
    """The names ``query`` asks about when it asks only who or what someone is, else (): the name
    must be one of the query's ``entities`` (ids such as ``mention:priya``), so "Who is Priya
    meeting tomorrow?" asks about no one's identity; for an entity of the user's table (``index``),
    its name and aliases come too ("Priya Nair", "PN" for "Who is Priya?")."""
    if len(query) > SHORT_QUESTION:
        return ()
    found = next((m for form in _WHO if (m := form.search(query)) is not None), None)
    if found is None:
        return ()
    name = " ".join(found["name"].replace("’", "'").split())
    if _NOT_A_NAME.match(name):
        return ()
    folded = _folded(name)
    if index is not None and (resolved := index.resolve(name)) in entities:  # a registered entity: its names too
        names = [" ".join(key) for key, eid in index.by_words.items() if eid == resolved]
        return tuple(dict.fromkeys([name, *(n for n in names if n.casefold() != name.casefold())]))
    for entity in entities:
        known = _folded(entity.split(":", 1)[-1])
        if known == folded or known.startswith(folded + " "):
            return (name,)
    return ()


def _folded(name: str) -> str:
    return " ".join(name.replace("_", " ").replace("-", " ").split()).casefold()


def described(records: Sequence[MemoryRecord], names: Sequence[str]) -> npt.NDArray[np.float64]:
    """Per record, 1 when it says what one of ``names`` is, does or is to someone: the name (with a
    surname after it or not) followed by "is", "runs", "lives", ... ("Priya Nair does operations
    and finance") or a comma ("Jess, my sister"), a relation right before it ("my sister Jess",
    "her husband Tiago", "the contact is Alice"), or a fact whose subject is the name; else 0."""
    out = np.zeros(len(records), dtype=np.float64)
    if not names:
        return out
    pattern = _pattern(tuple(names))
    folded = [n.casefold() for n in names]
    for at, record in enumerate(records):
        subject = (record.subject or "").casefold()
        of_them = any(subject == n or subject.startswith(n + " ") for n in folded)
        if of_them or pattern.search(record.content) is not None:
            out[at] = 1.0
    return out


@lru_cache(maxsize=64)
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    # A name as a name: each word capitalised ("Bill", not the water bill), whatever the rest's case.
    name = "(?:" + "|".join(r"\s+".join(rf"(?-i:{re.escape(w[0].upper())}){re.escape(w[1:])}" for w in n.split())
                            for n in names if n.strip()) + ")"
    return re.compile(
        rf"\b{name}(?:\s+(?-i:[A-Z])[\w'-]+)?(?:(?:\s*,)\s*(?:my|our|the|a|an|his|her|their|who)\b|\s+{_SAYS_WHAT}\b)"
        rf"|\b(?:my|our|his|her|their|your)\s+(?:\w+\s+)?{_RELATION}(?:\s*,)?\s+{name}\b"
        rf"|\b{_RELATION}\s+(?:is|was)\s+{name}\b",
        re.IGNORECASE,
    )
