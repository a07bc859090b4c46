"""Which entities a text names: one extractor for write time and query time, so both give the same ids.

``extract`` returns, in the order they first appear, deduplicated and at most ``MAX_IDS``:

* a known entity (its name or an alias, compared casefolded, punctuation-insensitive, possessive
  "'s" ignored; or, for a capitalized span only, a typo within ``FUZZY_SCORE``) -> the entity's id;
* any other capitalized span that looks like a name -> ``mention:<lowercased name>``
  ("met Sarah Connor" -> ``mention:sarah connor``; "When" or "The" opening a sentence is no name);
* the speaker, when ``role`` is a name rather than user/assistant/system/tool/ai/human, and a fact's
  subject and object, resolved the same way (``extract_record`` leaves a summary's text out);
* e-mail addresses -> ``email:alice@acme.io`` and ``domain:acme.io``; URLs and bare domains ->
  ``domain:acme.io``; order-number-like tokens (``#A-1042``, ``PO-77812``) -> ``ref:po-77812``.

Unknown names never create ``Entity`` rows: doing so would turn every capitalized word into an
entity the user has to curate, and every later query would pay for matching them. The ``mention:``
id on the memory is enough for the entity signal, because the query side produces the same id.
Once the user registers the entity, its name resolves to the entity id instead; ``backfill``
rewrites stored memories to match.

Cost is bounded whatever the entity table holds: exact lookups are dict probes per token, fuzzy
matching runs in rapidfuzz (C) over at most ``MAX_FUZZY_WINDOWS`` windows per text against aliases of
compatible length, at most ``MAX_INDEX_NAMES`` names and aliases are indexed, and at most
``MAX_SCAN_CHARS`` characters of a text are read.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import chain, islice
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process

from engram.config import Limits
from engram.model import STATUSES, Entity, Filters, MemoryRecord
from engram.text import STOPWORDS

if TYPE_CHECKING:
    from engram.ext import Store

__all__ = [
    "ENTITY_TYPE_WORDS", "EXTRACTED_PREFIXES", "MAX_IDS", "EntityIndex", "backfill", "caller_entities",
    "entity_index", "extract", "extract_record", "mention_ids", "tag_record",
]

MAX_IDS = 32  # ids per text: a pasted page should not drown the entity signal
MAX_INDEX_NAMES = 20_000  # names and aliases indexed per user (100 entities x 100 aliases fit)
MAX_ALIAS_TOKENS = 8  # longer "names" are sentences, not names
MAX_FUZZY_WINDOWS = 16  # rapidfuzz calls per text, whatever its length
MAX_SCAN_CHARS = 10_000  # names past this point of a text are not looked for
MAX_NAME_CHARS = 100  # a longer capitalized run is not a name
MAX_ID_CHARS = 200  # a longer e-mail address or host name is not worth an id
FUZZY_SCORE = 88.0  # rapidfuzz ratio (0-100); "Globax" vs "Globex" is 83, too far
FUZZY_MIN_CHARS = 4  # shorter names differ by one letter from too many words
MAX_FUZZY_CACHE = 10_000  # windows remembered per index, with their fuzzy match or None

#: Ids with these prefixes are made by ``extract``; ``caller_entities`` treats them as re-derivable.
EXTRACTED_PREFIXES = ("mention:", "email:", "domain:", "ref:")


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

_TOKEN = re.compile(r"\w+")
# A capitalized word (ASCII and Latin-1 capitals), with inner apostrophes or hyphens: O'Brien, Coca-Cola.
_CAP = r"[A-ZÀ-ÖØ-Þ]\w*(?:['’-]\w+)*"
_SPAN = re.compile(_CAP + r"(?:[ \t]+(?:(?:of|the|&)[ \t]+)*" + _CAP + r"){0,3}")
_NAME_WORD = re.compile(r"\w+(?:['’-]\w+)*|&")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_POSSESSIVE_S = re.compile(r"['’]s(?!\w)")
_SENTENCE_END = frozenset(".!?:;\n\r")
_OPENERS = frozenset(" \t\"'“‘([{«-–—*")

# Each pattern runs only when a cheap test says it can match: most texts hold no "@", no URL and
# no domain, and a full regex scan costs more than everything else extract does.
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@((?:[\w-]{1,63}\.)+[a-z]{2,24})\b", re.IGNORECASE)
_URL = re.compile(r"\b(?:https?://|www\.)((?:[\w-]{1,63}\.)+[a-z]{2,24})\b[^\s<>\"')\]]*", re.IGNORECASE)
_TLDS = "com|org|net|io|ai|co|dev|app|edu|gov|biz|info|us|uk|de|fr|nl|eu|ca|au|ch|se|es|it|jp|in"
_TLD_HINT = re.compile(rf"\.(?:{_TLDS})(?![\w-])", re.IGNORECASE)
_DOMAIN = re.compile(rf"(?<![\w@./-])((?:[a-z0-9-]{{1,63}}\.)+(?:{_TLDS}))(?![\w-]|\.\w)", re.IGNORECASE)
# References are found from their digits: "#A-1042", "#123", "PO-77812", "INV-2026-001", "ORD12345".
_DIGITS = re.compile(r"\d+")
_REF_WORD = re.compile(r"[\w#-]+")
_REF = re.compile(r"(#)?([a-z]{0,6}-?\d[\w-]{0,30})(?![\w@/-]|\.\w)", re.IGNORECASE)
_REF_PLAIN = re.compile(r"[A-Za-z]{1,6}-?\d")


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
        if len(words) == 1 and (len(words[0]) == 1 or _never_alone(words[0])):
            continue
        name = " ".join(words).lower()
        if "'" in name or "’" in name:
            name = _POSSESSIVE.sub("", name)
        out.append((start, m.end(), name))
    return out


def mention_ids(text: str) -> tuple[str, ...]:
    """``mention:<name>`` ids for capitalized spans, e.g. "met Sarah Connor" -> "mention:sarah connor"."""
    return tuple(dict.fromkeys(f"mention:{name}" for _, _, name in _mention_spans(text)))


def _words(text: str) -> tuple[list[int], list[str]]:
    """Start offsets and casefolded words of ``text``; the "s" of a possessive is no word ("Acme's")."""
    folded = text.casefold()
    if len(folded) != len(text):  # "ß" -> "ss": fold word by word to keep offsets
        pairs = [(m.start(), m.group(0).casefold()) for m in _TOKEN.finditer(text)]
        pairs = [(i, w) for i, w in pairs if not (w == "s" and i > 0 and text[i - 1] in "'’")]
        return [i for i, _ in pairs], [w for _, w in pairs]
    if "'" in folded or "’" in folded:
        folded = _POSSESSIVE_S.sub("  ", folded)  # same length, so offsets still match ``text``
    matches = list(_TOKEN.finditer(folded))
    return [m.start() for m in matches], [m.group(0) for m in matches]


def _key(name: str) -> tuple[str, ...]:
    """The words of a name as ``_words`` reads them, without offsets."""
    folded = name.casefold()
    if "'" in folded or "’" in folded:
        folded = _POSSESSIVE_S.sub(" ", folded)
    return tuple(_TOKEN.findall(folded))


class EntityIndex:
    """A user's entity names and aliases, normalized, for exact dict lookups and bounded fuzzy search.

    When two entities share a name, the one listed first wins, and canonical names win over aliases.
    """

    __slots__ = ("_exact", "_first", "_fuzzy_cache", "_fuzzy_ids", "_fuzzy_lens", "_fuzzy_names")

    def __init__(self, entities: Iterable[Entity] = ()) -> None:
        exact: dict[tuple[str, ...], str] = {}
        first: dict[str, int] = {}  # first word -> most words of a name starting with it
        fuzzy: dict[str, str] = {}
        valid = [e for e in entities if isinstance(e, Entity) and isinstance(e.id, str) and e.id]
        names = chain(
            ((e.id, e.name) for e in valid),
            ((e.id, a) for e in valid if isinstance(e.aliases, tuple | list) for a in e.aliases),
        )
        for entity_id, name in islice(names, MAX_INDEX_NAMES):
            if not isinstance(name, str):
                continue
            key = _key(name[:MAX_NAME_CHARS])
            size = len(key)
            if not size or size > MAX_ALIAS_TOKENS or key in exact or (size == 1 and len(key[0]) < 2):
                continue
            exact[key] = entity_id
            if first.get(key[0], 0) < size:
                first[key[0]] = size
            joined = " ".join(key)
            if len(joined) >= FUZZY_MIN_CHARS and joined not in fuzzy:
                fuzzy[joined] = entity_id
        self._exact, self._first = exact, first
        # Sorted by length so a window's candidates are one slice: ratio >= FUZZY_SCORE bounds lengths.
        # The sort is stable, so equal lengths keep the entities' order: deterministic.
        self._fuzzy_names = sorted(fuzzy, key=len)
        self._fuzzy_ids = [fuzzy[name] for name in self._fuzzy_names]
        self._fuzzy_lens = [len(name) for name in self._fuzzy_names]
        # Names recur across a user's memories and queries ("Sarah" in hundreds of them): one
        # rapidfuzz search each. Reset when full rather than evicted one by one: simple and bounded.
        self._fuzzy_cache: dict[str, str | None] = {}

    def __len__(self) -> int:
        return len(self._exact)

    def exact(self, words: Sequence[str]) -> str | None:
        """The entity id whose normalized name or alias is exactly ``words``."""
        return self._exact.get(tuple(words))

    def fuzzy(self, windows: Sequence[str]) -> list[str | None]:
        """For each window (normalized words joined by spaces), the entity id of the closest name or
        alias scoring at least ``FUZZY_SCORE``, or None. One rapidfuzz call for all of them."""
        cache = self._fuzzy_cache
        found: list[str | None] = [cache.get(window) for window in windows]
        todo = [i for i, window in enumerate(windows) if len(window) >= FUZZY_MIN_CHARS and window not in cache]
        if not todo or not self._fuzzy_names:
            return found
        # A ratio of at least r needs lengths within [r / (2 - r), (2 - r) / r] of each other. Names
        # outside one window's band score 0 for it, so a batch answers each window as alone would.
        r = FUZZY_SCORE / 100.0
        sizes = [len(windows[i]) for i in todo]
        lo = bisect_left(self._fuzzy_lens, math.ceil(min(sizes) * r / (2.0 - r)))
        hi = bisect_right(self._fuzzy_lens, math.floor(max(sizes) * (2.0 - r) / r))
        results: dict[str, str | None] = dict.fromkeys((windows[i] for i in todo), None)
        if lo < hi:
            scores = process.cdist(
                [windows[i] for i in todo], self._fuzzy_names[lo:hi], scorer=fuzz.ratio, score_cutoff=FUZZY_SCORE
            )
            best = scores.argmax(axis=1)  # the first of equal scores: the shortest name, then entity order
            for row, i in enumerate(todo):
                column = int(best[row])
                if scores[row, column] > 0:  # cdist gives 0 below the cutoff
                    found[i] = results[windows[i]] = self._fuzzy_ids[lo + column]
        if len(cache) > MAX_FUZZY_CACHE:
            cache.clear()
        cache.update(results)  # only finished answers: another thread never sees a guess
        return found

    def resolve(self, name: str) -> str | None:
        """The id of the entity ``name`` denotes as a whole (exact, then fuzzy), or None."""
        key = _key(name[:MAX_NAME_CHARS])
        if not key:
            return None
        return self.exact(key) or (self.fuzzy([" ".join(key)])[0] if len(key) <= 4 else None)


@lru_cache(maxsize=16)
def _cached_index(entities: tuple[Entity, ...]) -> EntityIndex:
    return EntityIndex(entities)


def entity_index(entities: Sequence[Entity]) -> EntityIndex:
    """An ``EntityIndex`` for ``entities``, reused while the same list comes back (one per query otherwise)."""
    key = tuple(entities)
    try:
        return _cached_index(key)
    except TypeError:  # an unhashable field: build it without the cache
        return EntityIndex(key)


def _name_id(name: str) -> str | None:
    """``mention:<name>`` for a field that is a name as a whole, spelled as a span would spell it."""
    words = _NAME_WORD.findall(name[:MAX_NAME_CHARS])
    if not words or all(word.lower() in _COMMON for word in words):
        return None
    return "mention:" + _POSSESSIVE.sub("", " ".join(words)).lower()


def _speaker(role: str | None, index: EntityIndex) -> str | None:
    if not isinstance(role, str) or not role.strip() or role.strip().casefold() in _NOT_SPEAKERS:
        return None
    if not any(ch.isalpha() for ch in role):
        return None
    return index.resolve(role) or _name_id(role)


def _ref_id(hashed: bool, code: str) -> str | None:
    code = code.rstrip("-")
    digits = sum(ch.isdigit() for ch in code)
    if hashed:
        return f"ref:{code.lower()}" if len(code) >= 2 else None
    # Without "#", letters then at least three digits: "PO-77812" yes; "Q3", "MP3", "2026" no.
    return f"ref:{code.lower()}" if digits >= 3 and _REF_PLAIN.match(code) else None


def _refs(text: str, index: EntityIndex, hits: list[tuple[int, str]], covered: list[tuple[int, int]]) -> None:
    done = 0
    for digits in _DIGITS.finditer(text):
        if digits.start() < done:
            continue  # inside a word already read
        start = _back(text, digits.start(), "_#-", 64)
        word = _REF_WORD.match(text, start)
        done = word.end() if word is not None else digits.end()
        if start > 0 and text[start - 1] in "@./:":
            continue  # part of an address, a path, a decimal or a time
        m = _REF.match(text, start)
        if m is None or m.end() != done or (len(index) and index.exact(_key(m.group(2)))):
            continue  # not a reference, or a name the user gave an entity ("Model 3000", "Thing299")
        if ref := _ref_id(m.group(1) is not None, m.group(2)):
            hits.append((start, ref))
            covered.append(m.span())


def _back(text: str, end: int, chars: str, limit: int) -> int:
    """Where the run of word characters and ``chars`` ending at ``end`` starts (at most ``limit`` back)."""
    start = end
    while start > 0 and end - start < limit and (text[start - 1].isalnum() or text[start - 1] in chars):
        start -= 1
    return start


def _patterns(text: str, index: EntityIndex, hits: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """Add e-mail, domain and reference ids to ``hits``; return the character ranges they cover.

    Each pattern is tried only where its anchor is ("@", a known top-level domain, "://", a digit):
    scanning the whole text with the full patterns costs more than the rest of ``extract``.
    """
    covered: list[tuple[int, int]] = []
    done = 0
    at = text.find("@")
    while at >= 0:
        m = _EMAIL.match(text, _back(text, at, "_.+-", 64)) if at >= done else None
        if m is not None:
            hits.append((m.start(), f"email:{m.group(0).lower()}"))
            hits.append((m.start(), f"domain:{m.group(1).lower()}"))
            covered.append(m.span())
            done = m.end()
        at = text.find("@", max(at + 1, done))
    if "." in text:
        hosts: list[re.Match[str]] = []
        if "://" in text or "www." in text or "WWW." in text:
            hosts += _URL.finditer(text)
        done = 0
        for hint in _TLD_HINT.finditer(text):
            mail = bisect_right(covered, (hint.start(), len(text))) - 1  # covered holds e-mails, in order
            if hint.start() >= done and (mail < 0 or covered[mail][1] <= hint.start()):
                # A URL's host is preceded by "/" and an e-mail's by "@": neither matches here again.
                m = _DOMAIN.match(text, _back(text, hint.start(), "_.-", 255))
                if m is not None:
                    hosts.append(m)
                    done = m.end()
        for m in hosts:
            host = m.group(1).lower()
            hits.append((m.start(), f"domain:{host[4:] if host.startswith('www.') else host}"))
            covered.append(m.span())
    if _DIGITS.search(text):
        _refs(text, index, hits, covered)
    return covered


def _scan(text: str, index: EntityIndex) -> list[str]:
    """The ids ``text`` mentions, ordered by where they start."""
    text = text[:MAX_SCAN_CHARS]
    hits: list[tuple[int, str]] = []
    covered = _patterns(text, index, hits)
    if covered:
        # NUL is neither a word, a space nor a sentence end, so masked parts join and split nothing.
        chars = list(text)
        for start, end in covered:
            chars[start:end] = "\x00" * (end - start)
        text = "".join(chars)
    spans = _mention_spans(text)
    if len(index):
        spans = _known(text, index, spans, hits)
    hits.extend((start, f"mention:{name}") for start, _, name in spans if len(name) <= MAX_NAME_CHARS)
    hits.sort(key=lambda hit: hit[0])  # stable: ties keep the order they were found in
    return [entity_id for _, entity_id in hits if len(entity_id) <= MAX_ID_CHARS]


def _known(
    text: str, index: EntityIndex, spans: list[tuple[int, int, str]], hits: list[tuple[int, str]]
) -> list[tuple[int, int, str]]:
    """Add known entities named in ``text`` to ``hits``; return the spans that name none."""
    starts, words = _words(text)
    claimed = [False] * len(words)

    def claim(i: int, n: int, entity_id: str) -> None:
        claimed[i : i + n] = [True] * n
        hits.append((starts[i], entity_id))

    first, exact, free = index._first, index._exact, 0
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
    if windows and index._fuzzy_names:
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
) -> tuple[str, ...]:
    """The entity ids ``text`` (and its speaker, subject and object) mentions; see the module doc.

    Deterministic, deduplicated, speaker first, then the text, subject and object in reading order;
    at most ``MAX_IDS``. Never raises for a string; anything else counts as no text.
    """
    found: dict[str, None] = {}
    speaker = _speaker(role, index)
    if speaker is not None:
        found[speaker] = None
    for part in (text, subject, object):
        if isinstance(part, str) and part:
            found.update(dict.fromkeys(_scan(part, index)))
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


def backfill(store: Store, user_id: str, *, limits: Limits | None = None, page: int = 500) -> int:
    """Re-extract the entities of every memory of ``user_id`` (any status); returns how many changed.

    Ids a caller gave by hand (see ``caller_entities``) are kept; extracted ones are recomputed
    against the user's current entity table. A memory whose set of ids is unchanged is not written,
    so a second run writes nothing. Rows are rewritten with ``store.replace(record, None)``, which
    keeps the stored vector. Callers holding a ``Memory`` should drop its cached retrievals after.
    """
    limits = limits or Limits()
    index = EntityIndex(store.entities(user_id))
    everything = Filters(statuses=STATUSES)
    changed = 0
    offset = 0
    while True:
        # The order (created_at, id) is unchanged by replace(), so paging stays stable while rewriting.
        records = store.list(user_id, everything, limit=page, offset=offset)
        for record in records:
            tagged = tag_record(record, index, limits=limits, given=caller_entities(record, index))
            if set(tagged.entities) != set(record.entities):
                store.replace(tagged, None)
                changed += 1
        if len(records) < page:
            return changed
        offset += page
