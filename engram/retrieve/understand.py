"""Stage 1, query understanding (seed 003): classify, find entities and time scope, pick weights.

Deterministic rules only: no model, no network. ``mention_ids`` is also used at ingest time, so a
memory and a query that name the same unknown "Sarah Connor" share the id ``mention:sarah connor``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from difflib import SequenceMatcher

from engram.config import STRATEGY_WEIGHTS
from engram.model import Entity, QueryPlan
from engram.retrieve.timeparse import parse_time_scope
from engram.text import STOPWORDS

__all__ = ["ENTITY_TYPE_WORDS", "keywords", "mention_ids", "select_strategy", "understand"]


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Entity-type nouns that make a query entity-focused even when no entity is named.
ENTITY_TYPE_WORDS = _word_set(
    "customer client order invoice supplier vendor product project account contact company"
)

FUZZY_RATIO = 0.88
_FUZZY_MIN_CHARS = 4

_TOKEN = re.compile(r"\w+")

# A capitalized word (ASCII and Latin-1 capitals), with inner apostrophes or hyphens: O'Brien, Coca-Cola.
_CAP = r"[A-ZÀ-ÖØ-Þ]\w*(?:['’-]\w+)*"
_SPAN = re.compile(_CAP + r"(?:[ \t]+(?:(?:of|the|&)[ \t]+)*" + _CAP + r"){0,3}")
_NONSPACE = re.compile(r"\S+")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
_SENTENCE_END = frozenset(".!?:;\n\r")
_OPENERS = frozenset(" \t\"'“‘([{«-–—*")

# Capitalized only because they start a sentence (or are calendar words), not names.
_COMMON = STOPWORDS | _word_set(
    """
    tell show give list find get summarize summarise explain describe remind please help hi hello hey
    thanks ok okay yes no can could would should will did does do is are was were has have had let
    what who whom whose when where which why how any every each all some many much most also so but
    and or if then there here this that these those it its my our your their his her we they you he
    she me us them i a an the yesterday today tomorrow tonight last next recent recently lately
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december note remember update check look compare
    """
) | ENTITY_TYPE_WORDS | frozenset(word + "s" for word in ENTITY_TYPE_WORDS)

# Never a name on their own ("May" can be one, so it is left out).
_CALENDAR = _word_set(
    """monday tuesday wednesday thursday friday saturday sunday january february march april june july
    august september october november december"""
)

# Strong procedural cues win over analytical ones; weak ones ("process") only over the rest.
_PROCEDURAL = re.compile(
    r"\bhow\s+(?:do|can|should|would|could|might|must|does|did)\s+(?:i|we|you|one|they)\b"
    r"|\bhow\s+to\b|\bwhat(?:'s|’s|\s+is)\s+the\s+best\s+way\b|\busually\s+(?:handle|deal|process|do)\b"
    r"|\bbest\s+practices?\b",
    re.IGNORECASE,
)
_PROCEDURAL_WEAK = re.compile(r"\b(?:steps?|process|procedures?|workflow|checklist)\b", re.IGNORECASE)
# Bare "up"/"down" only after a form of be/go: "follow up" or "pick up" is not a trend.
_ANALYTICAL = re.compile(
    r"\b(?:why|trends?|trending|compar\w*|analy\w*|increas\w*|decreas\w*|growth|grow\w*|declin\w*)\b"
    r"|\b(?:is|are|was|were|been|be|went|go|goes|going|gone)\s+(?:\w+\s+){0,2}(?:up|down)\b",
    re.IGNORECASE,
)
_EXPLORATORY = re.compile(
    r"\btell\s+me\s+(?:about|more)\b|\boverview\b|\bsummar\w*|\bwhat\s+do\s+(?:i|we)\s+know\b"
    r"|\brecap\b|\bdescribe\b|\beverything\b",
    re.IGNORECASE,
)
_TRANSACTIONAL = re.compile(
    r"\b(?:orders?|ordered|invoices?|balances?|sales|revenue|payments?|stock|inventory|how\s+many"
    r"|how\s+much)\b",
    re.IGNORECASE,
)
# Habits live in memory, not in the domain tables ("What does Acme usually order?").
_HABITUAL = re.compile(r"\b(?:usually|typically|normally|tend\s+to|prefers?|like\s+to)\b", re.IGNORECASE)
_TIME_WORDS = re.compile(
    r"\b(?:recent|recently|latest|lately|history|timeline|when|newest|oldest|earliest|ago|since)\b",
    re.IGNORECASE,
)


def keywords(text: str) -> tuple[str, ...]:
    """Lowercased content words (length >= 2, stopwords dropped), de-duplicated in order."""
    seen: dict[str, None] = {}
    for word in _TOKEN.findall(text.lower()):
        if len(word) >= 2 and word not in STOPWORDS:
            seen.setdefault(word, None)
    return tuple(seen)


def _sentence_initial(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in _OPENERS:
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _mention_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, lowercased name) of capitalized spans that look like names."""
    out: list[tuple[int, int, str]] = []
    for m in _SPAN.finditer(text):
        parts = [(w.start(), w.group(0)) for w in _NONSPACE.finditer(m.group(0))]
        if _sentence_initial(text, m.start()):
            # "When Sarah called", "The Acme Corporation": capitals that only open the sentence.
            while parts and parts[0][1].lower() in _COMMON:
                parts.pop(0)
        if not parts or (len(parts) == 1 and (len(parts[0][1]) == 1 or parts[0][1].lower() in _CALENDAR)):
            continue
        name = _POSSESSIVE.sub("", " ".join(word for _, word in parts)).lower()
        out.append((m.start() + parts[0][0], m.end(), name))
    return out


def mention_ids(text: str) -> tuple[str, ...]:
    """``mention:<name>`` ids for capitalized spans, e.g. "met Sarah Connor" -> "mention:sarah connor"."""
    return tuple(dict.fromkeys(f"mention:{name}" for _, _, name in _mention_spans(text)))


class _Alias:
    __slots__ = ("entity_id", "joined", "tokens")

    def __init__(self, entity_id: str, tokens: tuple[str, ...]) -> None:
        self.entity_id = entity_id
        self.tokens = tokens
        self.joined = " ".join(tokens)


def _aliases(entities: Iterable[Entity]) -> list[_Alias]:
    out: list[_Alias] = []
    for entity in entities:
        seen: set[tuple[str, ...]] = set()
        for name in (entity.name, *entity.aliases):
            tokens = tuple(_TOKEN.findall(name.casefold())) if isinstance(name, str) else ()
            if tokens and tokens not in seen:
                seen.add(tokens)
                out.append(_Alias(entity.id, tokens))
    # Longest first, so "Acme Corporation" wins over a separate entity called "Acme".
    out.sort(key=lambda a: (-len(a.tokens), -len(a.joined)))
    return out


def _match_entities(query: str, entities: Sequence[Entity]) -> list[tuple[int, int, str]]:
    """(char start, char end, entity id) of known entities named in ``query``."""
    if not entities:
        return []
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(query)]
    tokens = [query[s:e].casefold() for s, e in spans]
    used = [False] * len(tokens)
    aliases = _aliases(entities)
    found: list[tuple[int, int, str]] = []

    def claim(i: int, n: int, entity_id: str) -> None:
        for j in range(i, i + n):
            used[j] = True
        found.append((spans[i][0], spans[i + n - 1][1], entity_id))

    by_first: dict[str, list[_Alias]] = {}
    for alias in aliases:
        by_first.setdefault(alias.tokens[0], []).append(alias)
    for i, token in enumerate(tokens):
        if used[i]:
            continue
        for alias in by_first.get(token, ()):  # already longest first
            n = len(alias.tokens)
            if tuple(tokens[i : i + n]) == alias.tokens and not any(used[i : i + n]):
                claim(i, n, alias.entity_id)
                break

    # Fuzzy pass over what is left: typos and punctuation variants of aliases with enough letters.
    scored: list[tuple[int, float, int, str]] = []
    for alias in aliases:
        n, joined = len(alias.tokens), alias.joined
        if len(joined) < _FUZZY_MIN_CHARS:
            continue
        for i in range(len(tokens) - n + 1):
            if any(used[i : i + n]):
                continue
            window = tokens[i : i + n]
            if all(w in STOPWORDS for w in window):
                continue
            candidate = " ".join(window)
            if 2 * min(len(candidate), len(joined)) < FUZZY_RATIO * (len(candidate) + len(joined)):
                continue  # lengths alone rule it out; skip the costly comparison
            matcher = SequenceMatcher(None, candidate, joined, autojunk=False)
            if matcher.quick_ratio() >= FUZZY_RATIO and (ratio := matcher.ratio()) >= FUZZY_RATIO:
                scored.append((n, ratio, i, alias.entity_id))
    for n, _ratio, i, entity_id in sorted(scored, key=lambda s: (-s[0], -s[1], s[2])):
        if not any(used[i : i + n]):
            claim(i, n, entity_id)
    return found


def select_strategy(category: str, *, entity_focused: bool, procedural: bool) -> str:
    """Seed 003 ``select_strategy``, returning the key of the weights."""
    if procedural:
        return "procedural"
    if entity_focused and category == "factual":
        return "factual_entity_focused"
    if category == "analytical":
        return "analytical"
    return "exploratory"


def _classify(query: str) -> str:
    if _PROCEDURAL.search(query):
        return "procedural"
    if _ANALYTICAL.search(query):
        return "analytical"
    if _PROCEDURAL_WEAK.search(query):
        return "procedural"
    if _EXPLORATORY.search(query):
        return "exploratory"
    return "factual"


def _mentions_type(query: str, types: frozenset[str]) -> bool:
    for word in _TOKEN.findall(query.lower()):
        if word in types or (word.endswith("s") and (word[:-1] in types or word[:-2] in types)):
            return True
    return False


def understand(
    query: str,
    *,
    now: datetime,
    known_entities: Sequence[Entity] = (),
    weights_by_strategy: Mapping[str, Mapping[str, float]] | None = None,
) -> QueryPlan:
    """Classify ``query`` and extract its entities, time scope, keywords and ranking weights.

    Raises ValidationError only for a naive ``now``.
    """
    time_range = parse_time_scope(query, now)  # validates ``now`` first, whatever the query
    if not isinstance(query, str):
        query = ""
    category = _classify(query)
    procedural = category == "procedural"

    matched = _match_entities(query, known_entities)
    mentions = [
        (start, f"mention:{name}")
        for start, end, name in _mention_spans(query)
        if not any(start < m_end and m_start < end for m_start, m_end, _ in matched)
    ]
    ordered = sorted([(start, entity_id) for start, _, entity_id in matched] + mentions)
    entities = tuple(dict.fromkeys(entity_id for _, entity_id in ordered))

    types = ENTITY_TYPE_WORDS | frozenset(e.type.lower() for e in known_entities if isinstance(e.type, str))
    # In a how-to question a type word names a class of things ("rush orders"), not a particular one.
    entity_focused = bool(entities) or (not procedural and _mentions_type(query, types))
    time_focused = time_range is not None or _TIME_WORDS.search(query) is not None
    requires_domain_db = (
        category in ("factual", "analytical")
        and _TRANSACTIONAL.search(query) is not None
        and _HABITUAL.search(query) is None
    )
    strategy = select_strategy(category, entity_focused=entity_focused, procedural=procedural)
    table = weights_by_strategy or STRATEGY_WEIGHTS
    weights = dict(table.get(strategy) or STRATEGY_WEIGHTS[strategy])
    return QueryPlan(
        text=query,
        category=category,
        entity_focused=entity_focused,
        time_focused=time_focused,
        procedural=procedural,
        requires_domain_db=requires_domain_db,
        entities=entities,
        time_range=time_range,
        weights=weights,
        strategy=strategy,
        keywords=keywords(query),
    )
