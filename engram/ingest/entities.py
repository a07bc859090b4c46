"""Which entities a text names: one extractor for write time and query time, so both give the same ids.

``extract`` returns, in the order they first appear, deduplicated and at most ``MAX_IDS``:

* a known entity (its name or an alias, compared casefolded, punctuation-insensitive, possessive
  "'s" ignored; or, for a capitalized span only, a typo within ``FUZZY_SCORE``) -> the entity's id;
* any other capitalized span that looks like a name -> ``mention:<lowercased name>``
  ("met Sarah Connor" -> ``mention:sarah connor``; "When" or "The" opening a sentence is no name;
  a typographic apostrophe reads as a plain one, so "What’s Acme’s address?" names ``mention:acme``);
* the speaker, when ``role`` is a name rather than user/assistant/system/tool/ai/human, and a fact's
  subject and object, resolved the same way (``extract_record`` leaves a summary's text out);
* e-mail addresses -> ``email:alice@acme.io`` and ``domain:acme.io``; URLs and bare domains ->
  ``domain:acme.io``; order-number-like tokens (``#A-1042``, ``PO-77812``) -> ``ref:po-77812``.

Unknown names never create ``Entity`` rows: doing so would turn every capitalized word into an
entity the user has to curate, and every later query would pay for matching them. The ``mention:``
id on the memory is enough for the entity signal, because the query side produces the same id.
Once the user registers the entity, its name resolves to the entity id instead; registering it
re-tags the stored memories that name it (:mod:`engram.ingest.retag`), and ``engram upgrade`` all of them.

Cost is bounded whatever the entity table holds: exact lookups are dict probes per token, fuzzy
matching runs in rapidfuzz (C) over at most ``MAX_FUZZY_WINDOWS`` windows per text against aliases of
compatible length, at most ``MAX_INDEX_NAMES`` names and aliases are indexed (see
:mod:`engram.ingest.entity_index`, which also keeps each user's index between calls), and at most
``MAX_SCAN_CHARS`` characters of a text are read. A query's deadline is checked before the fuzzy
matching, the one step whose cost grows with the entity table.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import replace
from itertools import islice

from engram.config import Limits
from engram.ingest.entity_index import (
    MAX_INDEX_NAMES,
    MAX_NAME_CHARS,
    EntityIndex,
    check_deadline,
    text_words,
)
from engram.ingest.entity_patterns import pattern_ids
from engram.model import MemoryRecord
from engram.text import STOPWORDS, USER_ROLES

__all__ = [
    "ENTITY_TYPE_WORDS",
    "EXTRACTED_PREFIXES",
    "MAX_IDS",
    "MAX_INDEX_NAMES",
    "MENTION",
    "EntityIndex",
    "caller_entities",
    "extract",
    "extract_record",
    "mention_ids",
    "name_id",
    "said_by_the_user",
    "self_declared",
    "speaker_entity",
    "tag_record",
    "users_voice",
]

MAX_IDS = 32  # ids per text: a pasted page should not drown the entity signal
MAX_FUZZY_WINDOWS = 16  # windows per text compared by rapidfuzz, whatever its length
MAX_SCAN_CHARS = 10_000  # names past this point of a text are not looked for
MAX_ID_CHARS = 200  # a longer e-mail address or host name is not worth an id

#: The prefix of a name's id ("mention:alice moreau").
MENTION = "mention:"
#: Ids with these prefixes are made by ``extract``; ``caller_entities`` treats them as re-derivable.
EXTRACTED_PREFIXES = (MENTION, "email:", "domain:", "ref:")


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Entity-type nouns that make a query entity-focused even when no entity is named.
ENTITY_TYPE_WORDS = _word_set(
    "customer client order invoice supplier vendor product project account contact company"
)

# Capitalized only because they start a sentence (or are calendar words), not names. The second
# block is words that often open a note or a chat line ("Shipped the order", "Meeting moved").
_COMMON = STOPWORDS | _word_set(
    """
    tell show give list find get summarize summarise explain describe remind please help hi hello hey
    thanks ok okay yes no can could would should will did does do is are was were has have had let
    what who whom whose when where which why how any every each all some many much most also so but
    and or if then there here this that these those it its my our your their his her we they you he
    she me us them i a an the yesterday today tomorrow tonight last next recent recently lately
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december note remember update check look compare

    after before since until while because although though however maybe perhaps sure sorry thank
    cool fine done sent asked called met shipped paid ordered booked moved added meeting call email
    message reminder todo follow need needs want wants just still already never always often usually
    send everyone everybody someone somebody nobody breakfast lunch dinner noted started use nothing
    honestly actually finally basically hopefully unfortunately luckily apparently anyway otherwise
    bought sold got went took made gave found left told saw picked signed cancelled canceled
    returned fixed finished closed opened received delivered installed replaced tried visited drove
    flew spent paid spoke wrote heard kept brought sent
    """
) | ENTITY_TYPE_WORDS | frozenset(word + "s" for word in ENTITY_TYPE_WORDS)

# Never a name on their own ("May" can be one, so it is left out): calendar words and titles ("Dr. Lee").
_NEVER_ALONE = _word_set(
    """monday tuesday wednesday thursday friday saturday sunday january february march april june july
    august september october november december feb apr jun jul aug sep sept oct nov dec dr mr mrs ms prof
    sir"""
)

# Roles that are not a speaker's name (engram.model.ROLES plus what chat exports use).
_NOT_SPEAKERS = _word_set("user assistant system tool ai human bot agent model function developer")

# A capitalized word (ASCII and Latin-1 capitals), with inner apostrophes or hyphens: O'Brien, Coca-Cola.
_CAP = r"[A-ZÀ-ÖØ-Þ]\w*(?:['’-]\w+)*"
_SPAN = re.compile(_CAP + r"(?:[ \t]+(?:(?:of|the|&)[ \t]+)*" + _CAP + r"){0,3}")
_NAME_WORD = re.compile(r"\w+(?:['’-]\w+)*|&")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
# The first-person pronoun and its contractions: capitalized mid-sentence, never part of a name.
_PRONOUN_I = frozenset(f"i{tail}" for tail in ("", "'m", "'d", "'ve", "'ll", "’m", "’d", "’ve", "’ll"))
_SENTENCE_END = frozenset(".!?:;\n\r")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})
_OPENERS = frozenset(" \t\"'“‘([{«-–—*")


def _sentence_initial(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in _OPENERS:
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _never_alone(word: str) -> bool:
    word = _POSSESSIVE.sub("", word).lower()
    return word in _NEVER_ALONE or (word[-1:] == "s" and word[:-1] in _NEVER_ALONE)  # "Thursdays"


def _mention_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, lowercased name) of capitalized spans that look like names."""
    out: list[tuple[int, int, str]] = []
    for m in _SPAN.finditer(text):
        group, start = m.group(0), m.start()
        words = group.split() if (" " in group or "\t" in group) else [group]
        if _sentence_initial(text, start):
            # "When Sarah called", "The Acme Corporation": capitals that only open the sentence.
            dropped = 0
            while dropped < len(words) and words[dropped].lower() in _COMMON:
                dropped += 1
            if dropped == len(words):
                continue
            if len(words) - dropped >= 3 and words[dropped + 1] == "the":
                dropped += 2  # "Started the Ledgerly trial": a verb opening the sentence, then a name
            if dropped:
                offset = 0
                for word in words[:dropped]:
                    offset = group.index(word, offset) + len(word)
                start += group.index(words[dropped], offset)
                words = words[dropped:]
        end = m.end()
        if any(word.lower() in _PRONOUN_I for word in words):
            # "Hi there, I'm Sam", "Tybee Island I'd say": "I" is capitalized anywhere, never a name.
            kept = _without_pronoun(words)
            if not kept:
                continue
            first = group.index(kept[0], start - m.start())
            last = group.index(kept[-1], first + sum(len(w) for w in kept[:-1]))
            start, end = m.start() + first, m.start() + last + len(kept[-1])
            words = kept
        if len(words) == 1 and (len(words[0]) == 1 or _never_alone(words[0])):
            continue
        name = " ".join(words).lower()
        if "'" in name or "’" in name:
            name = _POSSESSIVE.sub("", name)
            # "Leo's Christmas present" names Leo: the possessor is a name of its own as well.
            owner = next((i for i, word in enumerate(words[:-1]) if _POSSESSIVE.search(word)), None)
            if owner is not None and _a_name(words[: owner + 1]):
                cut = start
                for word in words[: owner + 1]:  # in order: a word may hold the next one ("AB'sC B's")
                    cut = text.index(word, cut) + len(word)
                out.append((start, cut - 2, _POSSESSIVE.sub("", " ".join(words[: owner + 1]).lower())))
        out.append((start, end, name))
    return out


def _a_name(words: list[str]) -> bool:
    """Whether the possessor ``words`` ("Leo's", "Bank of America's") may be a name on their own: not
    a single letter, a calendar word or a common word ("Today's Agenda", "It's Bob's")."""
    bare = [_POSSESSIVE.sub("", word).lower() for word in words if word.lower() not in _CONNECTORS]
    if len(bare) == 1 and len(bare[0]) == 1:
        return False
    return not any(word in _COMMON or word in _TIME_NOUNS or _never_alone(word) for word in bare)


_CONNECTORS = frozenset(("of", "the", "&"))
_TIME_NOUNS = _word_set("day days week weeks weekend month months year years morning evening night season")


def _without_pronoun(words: list[str]) -> list[str]:
    """The words of a span after any leading "I"/"I'm"/"I'd"..., up to the next such word."""
    lead = 0
    while lead < len(words) and words[lead].lower() in _PRONOUN_I:
        lead += 1
    rest = words[lead:]
    cut = next((i for i, word in enumerate(rest) if word.lower() in _PRONOUN_I), len(rest))
    return rest[:cut]


def mention_ids(text: str) -> tuple[str, ...]:
    """``mention:<name>`` ids for capitalized spans, e.g. "met Sarah Connor" -> "mention:sarah connor"."""
    return tuple(dict.fromkeys(MENTION + name for _, _, name in _mention_spans(_straight(text))))


def _straight(text: str) -> str:
    """``text`` with typographic apostrophes as plain ones, at the same offsets: a phone or a Mac types
    "What’s Acme’s address?", whose "What’s" is then the common word it is, not part of a name."""
    return text.translate(_APOSTROPHES) if "’" in text or "‘" in text else text


def name_id(name: str) -> str | None:
    """``mention:<name>`` for a field that is a name as a whole, spelled as a span would spell it."""
    words = _NAME_WORD.findall(_straight(name[:MAX_NAME_CHARS]))
    if not words or all(word.lower() in _COMMON for word in words):
        return None
    return MENTION + _POSSESSIVE.sub("", " ".join(words)).lower()


def speaker_entity(role: str | None, index: EntityIndex) -> str | None:
    """The entity id of who said a memory, when its role names a person ("Priya"), else None."""
    if not isinstance(role, str) or not role.strip() or role.strip().casefold() in _NOT_SPEAKERS:
        return None
    if not any(ch.isalpha() for ch in role):
        return None
    return index.resolve(role) or name_id(role)


def users_voice(user_id: str, index: EntityIndex, asked: Sequence[str], declared: Sequence[str] = ()) -> str | None:
    """Who the user's own messages (:func:`said_by_the_user`) are said by, when the query names
    that user: by the user id ("What does Alice like?" of user ``alice``, as Mem0's examples name
    users), or by a name the user gave themselves (``declared``, see :func:`self_declared`). The
    user's own "I love sci-fi movies" is then Alice speaking. None otherwise."""
    if not asked:
        return None
    who = speaker_entity(user_id, index)
    if who is not None and who in asked:
        return who
    return next((name for name in declared if name in asked), None)


#: "I'm Maya", "my name is Maya", "call me Maya": the user says who they are.
_SELF_NAMED = re.compile(
    r"\b(?:i['’]m|i\s+am|my\s+name\s+is|call\s+me)\s+([A-Z][\w'’-]+)(?=[\s,.!?;:]|$)", re.IGNORECASE
)


def self_declared(record: MemoryRecord, index: EntityIndex) -> str | None:
    """The entity of the name the user gives themselves in their own message ("Hi! I'm Maya, I run
    Kestrel Office Tech"), as a name (capitalized); None otherwise."""
    if not said_by_the_user(record):
        return None
    for match in _SELF_NAMED.finditer(record.content[:MAX_SCAN_CHARS]):
        name = match.group(1)
        if name[0].isupper() and name.casefold() not in _COMMON:
            return speaker_entity(name, index)
    return None


def said_by_the_user(record: MemoryRecord) -> bool:
    """Whether ``record`` is the user's own message (role ``user`` or ``human``, any case)."""
    return isinstance(record.role, str) and record.role.strip().casefold() in USER_ROLES


def _scan(text: str, index: EntityIndex, deadline: float | None) -> list[str]:
    """The ids ``text`` mentions, ordered by where they start."""
    text = _straight(text[:MAX_SCAN_CHARS])
    hits: list[tuple[int, str]] = []
    covered = pattern_ids(text, index, hits)
    if covered:
        # NUL is neither a word, a space nor a sentence end, so masked parts join and split nothing.
        chars = list(text)
        for start, end in covered:
            chars[start:end] = "\x00" * (end - start)
        text = "".join(chars)
    spans = _mention_spans(text)
    if len(index):
        spans = _known(text, index, spans, hits, deadline)
    hits.extend((start, MENTION + name) for start, _, name in spans if len(name) <= MAX_NAME_CHARS)
    hits.sort(key=lambda hit: hit[0])  # stable: ties keep the order they were found in
    return [entity_id for _, entity_id in hits if len(entity_id) <= MAX_ID_CHARS]


def _known(
    text: str, index: EntityIndex, spans: list[tuple[int, int, str]], hits: list[tuple[int, str]],
    deadline: float | None,
) -> list[tuple[int, int, str]]:
    """Add known entities named in ``text`` to ``hits``; return the spans that name none."""
    starts, words = text_words(text)
    claimed = [False] * len(words)

    def claim(i: int, n: int, entity_id: str) -> None:
        claimed[i : i + n] = [True] * n
        hits.append((starts[i], entity_id))

    first, exact, free = index.longest, index.by_words, 0
    for i in [i for i, word in enumerate(words) if word in first]:  # most words start no name
        if i < free:
            continue  # inside a name already claimed
        for n in range(min(first[words[i]], len(words) - i), 0, -1):
            entity_id = exact.get(tuple(words[i : i + n]))
            # A name made of common words ("May", "Order") counts only when capitalized, and not
            # merely because it opens a sentence.
            if entity_id is not None and (
                not _COMMON.issuperset(words[i : i + n])
                or (text[starts[i]].isupper() and not _sentence_initial(text, starts[i]))
            ):
                claim(i, n, entity_id)
                free = i + n
                break

    # Typos, only inside capitalized spans: every window of up to 4 words, longest first, so
    # "Acme Corporaton" beats "Acme"; at most MAX_FUZZY_WINDOWS per text.
    ranges = [(bisect_left(starts, start), bisect_left(starts, end)) for start, end, _ in spans]
    windows: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if any(claimed[lo:hi]):
            continue
        for n in range(min(4, hi - lo), 0, -1):
            for i in range(lo, hi - n + 1):
                if len(windows) < MAX_FUZZY_WINDOWS and not _COMMON.issuperset(words[i : i + n]):
                    windows.append((i, n))
    if windows and index.fuzzy_names:
        check_deadline(deadline, "matching entity names")
        matches = index.fuzzy([" ".join(words[i : i + n]) for i, n in windows])
        for (i, n), entity_id in zip(windows, matches, strict=True):
            if entity_id is not None and not any(claimed[i : i + n]):
                claim(i, n, entity_id)
    return [span for span, (lo, hi) in zip(spans, ranges, strict=True) if not any(claimed[lo:hi])]


def extract(
    text: str,
    *,
    index: EntityIndex,
    role: str | None = None,
    subject: str | None = None,
    object: str | None = None,
    deadline: float | None = None,
) -> tuple[str, ...]:
    """The entity ids ``text`` (and its speaker, subject and object) mentions; see the module doc.

    Deterministic, deduplicated, speaker first, then the text, subject and object in reading order;
    at most ``MAX_IDS``. Never raises for a string (anything else counts as no text), except
    DeadlineExceeded once ``time.perf_counter()`` passes ``deadline``.
    """
    found: dict[str, None] = {}
    speaker = speaker_entity(role, index)
    if speaker is not None:
        found[speaker] = None
    for part in (text, subject, object):
        if isinstance(part, str) and part:
            found.update(dict.fromkeys(_scan(part, index, deadline)))
    return tuple(islice(found, MAX_IDS))


def extract_record(record: MemoryRecord, index: EntityIndex) -> tuple[str, ...]:
    """``extract`` over a memory's content, role, subject and object; a summary's content is skipped.

    A summary names everything that happened in its period, so tagging it with every entity would
    make it match every entity question (on the everyday-questions set, hit@1 fell from 0.37 to 0.31
    with summaries tagged). A caller can still tag a summary by hand.
    """
    content = "" if record.kind == "summary" else record.content
    return extract(content, index=index, role=record.role, subject=record.subject, object=record.object)


def caller_entities(record: MemoryRecord, index: EntityIndex) -> tuple[str, ...]:
    """The stored entity ids extraction cannot re-derive: ones a caller gave by hand.

    Drops ``EXTRACTED_PREFIXES`` ids and whatever ``extract_record`` finds in the record now, so
    re-tagging after an edit or a change of the entity table leaves no stale extracted id behind.
    """
    derived = set(extract_record(record, index))
    return tuple(e for e in record.entities if e not in derived and not e.startswith(EXTRACTED_PREFIXES))


def tag_record(
    record: MemoryRecord, index: EntityIndex, *, limits: Limits, given: Sequence[str] | None = None
) -> MemoryRecord:
    """``record`` with ``given`` (default: its own entities) kept as is, then the extracted ids.

    Extracted ids fill what ``limits.max_tags`` leaves and are truncated, never refused; ones longer
    than ``limits.max_id_chars`` are dropped.
    """
    kept = tuple(record.entities if given is None else given)
    room = limits.max_tags - len(kept)
    if room <= 0:
        return record if kept == record.entities else replace(record, entities=kept)
    seen = set(kept)
    extra = [e for e in extract_record(record, index) if e not in seen and len(e) <= limits.max_id_chars]
    entities = kept + tuple(extra[:room])
    return record if entities == record.entities else replace(record, entities=entities)
