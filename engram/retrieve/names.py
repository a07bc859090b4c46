"""How the query's names read among the candidates: a short name of one who speaks is that speaker
("Mel" for Melanie), and a first name is the one full name among the candidates that begins with it
("Alice" for Alice Moreau)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import replace

from engram.ingest.entities import MENTION
from engram.model import MemoryRecord, QueryPlan
from engram.retrieve.newest import without_names

__all__ = ["as_speakers", "first_names", "named_in_lowercase"]


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
        name = entity[len(MENTION):] if entity.startswith(MENTION) else ""
        if len(name) >= 3 and " " not in name and entity not in speakers:
            longer = _beginning(speakers, entity, letters=True)
            if len(longer) == 1 and entity not in (own_words or {}).get(longer[0], ()):
                entity = longer[0]
        out.append(entity)
    return tuple(dict.fromkeys(out))


# Where a word of a question is a person's name though written in lowercase: asked what they did
# ("did priya say/post/...", "when did mark last post"), whose ("priya's email"), or what they said
# ("priya said", "jess thinks"), or named as whom to ask ("ask jess", "from mark"); not after "the",
# "a", "my" ... ("the bill's total"), nor as a verb or a noun ("can you mark friday", "did jack up
# the price", "what is art?").
_DETERMINED = "".join(f"(?<!{d} )" for d in ("the", "a", "an", "my", "our", "your", "his", "her", "their", "this",
                                             "that"))
_DONE = (r"say|said|think|thought|post|posted|send|sent|ask|asked|buy|bought|go|went|come|came|get|got|want"
         r"|wanted|like|liked|mention|mentioned|tell|told|write|wrote|reply|replied|call|called|decide|decided"
         r"|pay|paid|order|ordered|book|booked|leave|left|start|started|finish|finished|meet|met|need|needed"
         r"|suggest|suggested|recommend|recommended|feel|felt|last|first|ever|really|actually|also|just")
_AS_A_NAME = (r"(?:\b(?i:did|does|do|has|had|will|would|can|could)\s+{0}\s+(?:" + _DONE + r")\b"
              r"|\b(?i:ask|tell|told|from)\s+{0}\b"
              r"|" + _DETERMINED + r"\b{0}(?:['’]s\b|\s+(?:says|said|thinks|thought|asked|wants|wanted|likes|liked"
              r"|mentioned|told|wrote|feels|felt|suggested|recommended)\b))")


def named_in_lowercase(plan: QueryPlan, speakers: Iterable[str]) -> QueryPlan:
    """``plan`` with the ones who speak among the candidates that its question names in lowercase
    where a name stands ("what did priya say about the trial?", "when did mark last post?"): an
    entity is read from a capital or the user's entity table, and a chat's speakers are in neither.
    Their names leave the subject of a question about the newest."""
    words = set(re.findall(r"[a-z][\w-]*", plan.text))  # lowercase words only: capitals were read already
    named = [s for s in sorted(set(speakers)) if s.startswith(MENTION) and s not in plan.entities
             and s[len(MENTION):] in words and len(s) - len(MENTION) >= 3
             and re.search(_AS_A_NAME.format(re.escape(s[len(MENTION):])), plan.text) is not None]
    if not named:
        return plan
    newest = None if plan.newest is None else tuple(sorted(without_names(plan.newest, named)))
    voiced = tuple(s for s in named if re.search(_VOICED.format(re.escape(s[len(MENTION):])), plan.text))
    return replace(plan, entities=(*plan.entities, *named), newest=newest, speaking=(*plan.speaking, *voiced))


# Whose words are asked for: "what did priya think of ...", "what jess said about ...".
_VOICED = (r"\b{0}\s+(?:(?:really|actually|honestly|first|just|also|ever)\s+)?(?:say|says|said|think|thinks"
           r"|thought|feel|feels|felt|mention|mentions|mentioned|tell|tells|told|suggest|suggests|suggested"
           r"|recommend|recommends|recommended|write|writes|wrote)\b")


def first_names(
    query_entities: Sequence[str], records: Sequence[MemoryRecord], speakers: frozenset[str]
) -> dict[str, str]:
    """Full name -> the query's one-word name it stands for, when exactly one name among the
    candidates' (not a speaker's: :func:`as_speakers` reads those) begins with it and a space:
    "What's Alice's email?" asks about Alice Moreau when she is the one Alice there."""
    single = [q for q in query_entities if q.startswith(MENTION) and " " not in q]
    if not single:
        return {}
    named = {e for r in records for e in r.entities if e.startswith(MENTION) and " " in e} - speakers
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
