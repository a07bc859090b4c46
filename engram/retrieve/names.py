"""How the query's names read among the candidates: a short name of one who speaks is that speaker
("Mel" for Melanie), and a first name is the one full name among the candidates that begins with it
("Alice" for Alice Moreau)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set

from engram.model import MemoryRecord

__all__ = ["as_speakers", "first_names", "names_said", "said_names"]


def as_speakers(
    query_entities: Sequence[str], speakers: frozenset[str], own_words: Mapping[str, Set[str]] | None = None
) -> tuple[str, ...]:
    """The query's entities, a short name of one who speaks among the candidates read as that
    speaker: "How long have Mel and her husband been married?" asks about Melanie, whom the others
    call Mel (a name of at least 3 letters that begins exactly one speaker's name; LoCoMo dev asks 5
    questions about "Mel"). Not a name the speaker's own turns use (``own_words``: speaker -> the
    entities they name): people do not call themselves so, and Annabel's "my aunt Ann" is someone else."""
    out: list[str] = []
    for entity in query_entities:
        name = entity[len(_MENTION):] if entity.startswith(_MENTION) else ""
        if len(name) >= 3 and " " not in name and entity not in speakers:
            longer = _beginning(speakers, entity, letters=True)
            if len(longer) == 1 and entity not in (own_words or {}).get(longer[0], ()):
                entity = longer[0]
        out.append(entity)
    return tuple(dict.fromkeys(out))


_MENTION = "mention:"
#: How much of a memory's text is read for the query's names.
_READ_NAMES = 2_000


def said_names(query_entities: Sequence[str]) -> dict[str, re.Pattern[str]]:
    """The query's names (of at least 3 letters) and how each is found in a memory's text, whatever
    its case: "requires-python" and "we moved to postgres" say Python and Postgres, though only a
    capital makes a name when a memory is stored (a pasted pyproject, code, a lowercase chat)."""
    return {entity: re.compile(r"(?<!\w)" + re.escape(entity[len(_MENTION):]) + r"(?!\w)")
            for entity in query_entities if entity.startswith(_MENTION) and len(entity) - len(_MENTION) >= 3}


def names_said(record: MemoryRecord, said: Mapping[str, re.Pattern[str]]) -> list[str]:
    """The names of ``said`` (:func:`said_names`) that ``record`` says in its text; none in a
    summary, which names everything of its period, nor one that begins a fuller name the record
    carries ("Alice" in "Alice Chen runs the warehouse": :func:`first_names` reads those)."""
    if not said or record.kind == "summary":
        return []
    folded = record.content[:_READ_NAMES].lower()
    return [entity for entity, pattern in said.items()
            if entity[len(_MENTION):] in folded and pattern.search(folded) is not None
            and not any(name.startswith(entity + " ") for name in record.entities)]


def first_names(
    query_entities: Sequence[str], records: Sequence[MemoryRecord], speakers: frozenset[str]
) -> dict[str, str]:
    """Full name -> the query's one-word name it stands for, when exactly one name among the
    candidates' (not a speaker's: :func:`as_speakers` reads those) begins with it and a space:
    "What's Alice's email?" asks about Alice Moreau when she is the one Alice there."""
    single = [q for q in query_entities if q.startswith(_MENTION) and " " not in q]
    if not single:
        return {}
    named = {e for r in records for e in r.entities if e.startswith(_MENTION) and " " in e} - speakers
    out: dict[str, str] = {}
    for name in single:
        longer = _beginning(named, name, letters=False)
        if len(longer) == 1:
            out[longer[0]] = name
    return out


def _beginning(names: Iterable[str], short: str, *, letters: bool) -> list[str]:
    """The ``names`` that begin with ``short`` and go on after a space ("alice moreau" for "alice"),
    or, with ``letters``, also straight on ("melanie" for "mel")."""
    out = []
    for name in names:
        following = name[len(short):len(short) + 1]
        if name.startswith(short) and (following == " " or (letters and following.isalpha())):
            out.append(name)
    return out
