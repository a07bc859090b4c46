"""Keyword search, a small result cache, and prompt context from the results (the keyword search contract).

Keyword search is a preset of the retrieval engine (:mod:`engram.retrieve.engine`). The contract
matches substrings ("acm" finds "Acme") in every data field, tags and metadata included, and returns
only memories matching a keyword when keywords are given (its decision 3; with none, every memory of
the type and importance asked competes, newest read first); each candidate is checked in Python, field by
field, which also says where each keyword matched. Candidates come from one of two places:

* A store with a substring index (``Store.substring_indexed``: SQLite's FTS5 trigram index and
  PostgreSQL's GIN index over trigrams) lists every memory holding a keyword, newest first
  (``Store.substring_search``), read ``SCAN_PAGE`` and then four-fold further until it ends or no
  older memory could score above the ``limit``-th result (its recency bounds its score). No memory
  is left out for its age; a search with no match reads the index only.
* A keyword under ``SUBSTRING_MIN`` (3) characters has no trigram, on either backend: the keyword
  index's whole-token hits (``FTS_PER_KEYWORD`` per keyword) plus the newest ``SCAN_LIMIT`` (2,000)
  memories, read the same way. The bound: an older memory is found only when the keyword is a
  whole token of its content; without it a search with no match read every memory.

Case: Python's casefold decides a match, and keywords are casefolded; the indexes fold letter by
letter, so a text whose letters casefold to others ("Straße" to "strasse") is not found by a
keyword of three characters or more holding them (the index is asked for "strasse" and holds
"straße"). Non-ASCII letters fold on both backends ("école" finds "ÉCOLE"); PostgreSQL folds with
``lower()`` under a collation that folds them (the database's, else ``C.utf8`` or ICU's root), and
on a server with none of them in the C locale, ASCII letters only.

Ranking is the contract's: keyword 0.4 (fraction of keywords matched) + recency 0.2 (``exp(-age/30 d)``,
0 when ``recency_boost`` is off) + importance 0.2 + type 0.2 (1.0 for the kind filtered on or a
preferred kind, else 0.5; preferred are fact, procedure and summary: distilled knowledge gives a
prompt more per token than a raw message). Ties go to the smaller id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from engram.caches import KEYWORD_CACHE_ENTRIES, KEYWORD_CACHE_TTL
from engram.context import context_of
from engram.errors import ValidationError
from engram.ext import SUBSTRING_MIN
from engram.model import KINDS, Filters, Hit, MemoryRecord
from engram.retrieve.cache import RetrievalCache, make_key
from engram.retrieve.engine import Evidence, Raw, Source, Strategy, Weighting, run
from engram.text import keyword_terms, words
from engram.validate import choice, integer, seconds, to_utc, unit

if TYPE_CHECKING:
    from engram.context import Context, ContextSource

__all__ = [
    "CACHE_MAX_ENTRIES", "CACHE_TTL", "CONTEXT_ORDERS", "PREFERRED_KINDS", "SCAN_LIMIT", "SCAN_PAGE", "WEIGHTS",
    "KeywordResult", "cache_stats", "clear_cache", "enrich_context", "invalidate", "match_keywords", "relevance",
    "search_keywords", "search_with_cache",
]

WEIGHTS: Mapping[str, float] = {"keyword": 0.4, "recency": 0.2, "importance": 0.2, "type": 0.2}
WEIGHTING = Weighting(WEIGHTS)
RECENCY_DAYS = 30.0
PREFERRED_KINDS = frozenset({"fact", "procedure", "summary"})
FTS_PER_KEYWORD = 200
SCAN_LIMIT = 2000  # the scan's bound when a keyword is too short for the substring index (module doc)
SCAN_PAGE = 500  # the newest memories read first; further reads grow four-fold up to SCAN_LIMIT
MAX_KEYWORDS = 32
MAX_LIMIT = 1000
CACHE_MAX_ENTRIES = KEYWORD_CACHE_ENTRIES
CACHE_TTL = KEYWORD_CACHE_TTL
CHARS_PER_TOKEN = 4  # the usual estimate for English text; no tokenizer is loaded for a budget check
_TEXT_FIELDS = ("content", "subject", "predicate", "object", "trigger", "action")

MatchMode = Literal["substring", "exact"]


@dataclass(frozen=True, slots=True)
class KeywordResult:
    """One keyword search result: the memory, its relevance in [0, 1], and which keyword matched which field."""

    record: MemoryRecord
    score: float
    match_reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        reasons = list(self.match_reasons)
        return {"memory": self.record.to_dict(), "score": round(self.score, 6), "match_reasons": reasons}


class SearchKwargs(TypedDict, total=False):
    """The options of :func:`search_keywords`, typed for ``Memory.search_keywords(**options)``."""

    kind: str | None
    min_importance: float | None
    limit: int
    recency_boost: bool
    match_mode: str
    now: datetime | str | None


class EnrichKwargs(TypedDict, total=False):
    """The options of :func:`enrich_context`."""

    max_tokens: int
    limit: int
    now: datetime | str | None
    kind: str | None
    min_importance: float | None
    recency_boost: bool
    match_mode: str
    order: str


#: How :func:`enrich_context` lists what it found: best first, grouped by kind (kinds in the order of
#: their best memory, best first within each), or oldest first.
CONTEXT_ORDERS = ("relevance", "type", "chronological")


def _keywords(keywords: str | Sequence[str]) -> list[str]:
    # A bare string would otherwise iterate as characters; it means whitespace-separated keywords.
    items = keywords.split() if isinstance(keywords, str) else list(keywords)
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValidationError("keywords", f"must be strings, got {type(item).__name__}")
        keyword = " ".join(item.casefold().split())
        if keyword and keyword not in out:
            out.append(keyword)
    if len(out) > MAX_KEYWORDS:
        raise ValidationError("keywords", f"at most {MAX_KEYWORDS} keywords, got {len(out)}")
    return out


def _metadata_texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _metadata_texts(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _metadata_texts(item, path)


def _field_texts(record: MemoryRecord) -> Iterator[tuple[str, str]]:
    for name in _TEXT_FIELDS:
        text = getattr(record, name)
        if text:
            yield name, text
    for tag in record.tags:
        yield "tags", tag
    yield from _metadata_texts(record.metadata, "metadata")


def _contains(keyword: str, text: str, mode: MatchMode) -> bool:
    if mode == "substring":
        return keyword in text.casefold()
    # Exact: the keyword's words appear as whole, consecutive words of the field.
    wanted, tokens = words(keyword), words(text)
    if not wanted:
        return keyword == text.casefold().strip()
    span = len(wanted)
    return any(tokens[i : i + span] == wanted for i in range(len(tokens) - span + 1))


def match_keywords(
    record: MemoryRecord, keywords: Sequence[str], mode: MatchMode = "substring"
) -> tuple[int, tuple[str, ...]]:
    """How many of ``keywords`` (already casefolded) match, and ``"<keyword> in <field>"`` for each hit."""
    matched = 0
    reasons: list[str] = []
    fields = list(_field_texts(record))
    for keyword in keywords:
        hits = [name for name, text in fields if _contains(keyword, text, mode)]
        if hits:
            matched += 1
            reasons.extend(f"{keyword} in {name}" for name in dict.fromkeys(hits))
    return matched, tuple(reasons)


def _recency(created_at: datetime, now: datetime) -> float:
    return math.exp(-max(0.0, (now - created_at).total_seconds() / 86_400) / RECENCY_DAYS)


def signals(
    record: MemoryRecord, matched: int, total: int, *, kind: str | None = None, recency_boost: bool = True,
    now: datetime | None = None,
) -> dict[str, float]:
    """The keyword search contract's four factors, each in [0, 1] (:data:`WEIGHTS` names them)."""
    return {
        "keyword": matched / total if total else 0.0,
        "recency": _recency(record.created_at, now or datetime.now(UTC)) if recency_boost else 0.0,
        "importance": min(1.0, max(0.0, record.importance)),
        "type": 1.0 if record.kind == kind or record.kind in PREFERRED_KINDS else 0.5,
    }


def relevance(
    record: MemoryRecord, matched: int, total: int, *, kind: str | None = None, recency_boost: bool = True,
    now: datetime | None = None,
) -> float:
    """The keyword search contract's four-factor score in [0, 1]."""
    return WEIGHTING.score(signals(record, matched, total, kind=kind, recency_boost=recency_boost, now=now))


@dataclass(frozen=True, slots=True)
class _Query:
    user: str
    keywords: tuple[str, ...]
    kind: str | None
    min_importance: float | None
    limit: int
    recency_boost: bool
    match_mode: MatchMode
    now: datetime | None


def _query(
    ctx: Context, keywords: str | Sequence[str], user_id: str, kind: str | None, min_importance: float | None,
    limit: int, recency_boost: bool, match_mode: str, now: datetime | str | None,
) -> _Query:
    user = ctx.user(user_id)
    if kind is not None:
        choice("kind", kind, KINDS)
    if min_importance is not None:
        unit("min_importance", min_importance)
    integer("limit", limit, 1, MAX_LIMIT)
    choice("match_mode", match_mode, ("substring", "exact"))
    mode: MatchMode = "substring" if match_mode == "substring" else "exact"
    when = None if now is None else to_utc(now, "now")
    return _Query(user, tuple(_keywords(keywords)), kind, min_importance, limit, bool(recency_boost), mode, when)


def _keyword_list(ctx: Context, user: str, keyword: str, filters: Filters) -> Callable[[int], list[Hit]]:
    return lambda n: ctx.store.keyword_search(user, keyword, n, filters)


class _Newest:
    """The user's newest memories under ``filters``, listed a page further at a time and kept: the
    engine's fetch of them then reads nothing again, and only the keyword hits are fetched."""

    def __init__(self, ctx: Context, user: str, filters: Filters) -> None:
        self._ctx, self._user, self.filters = ctx, user, filters
        self._records: dict[str, MemoryRecord] = {}
        self._hits: list[Hit] = []
        self._ended = False

    def read(self, n: int) -> list[Hit]:
        have = len(self._hits)
        if n > have and not self._ended:
            page = self._ctx.store.list(self._user, self.filters, limit=n - have, offset=have)
            self._ended = len(page) < n - have
            self._records.update((r.id, r) for r in page)
            self._hits.extend((r.id, r.created_at.timestamp()) for r in page)
        return self._hits[:n]

    def fetch(self, user_id: str, memory_ids: Sequence[str]) -> list[MemoryRecord]:
        rest = [i for i in memory_ids if i not in self._records]
        known = [r for i in memory_ids if (r := self._records.get(i)) is not None]
        return known + (self._ctx.store.fetch(user_id, rest) if rest else [])


def _strategy(ctx: Context, q: _Query, now: datetime, newest: _Newest) -> Strategy:
    """Keyword search as a preset of the engine: best score first, ties to the smaller id."""
    filters = newest.filters
    if not q.keywords:
        # No keywords filter nothing (the contract filters by keyword only when keywords are given):
        # the newest first, until the recency bound says no older one can rank; without recency
        # every memory could, and the newest SCAN_LIMIT are read.
        sources: tuple[Source, ...] = (Source(
            "recent", newest.read, SCAN_PAGE, grows=True, most=None if q.recency_boost else SCAN_LIMIT,
        ),)
    elif ctx.store.substring_indexed and all(len(k) >= SUBSTRING_MIN for k in q.keywords):
        # Lists every memory a keyword can match, so the walk may end only by the recency bound.
        sources = (Source(
            "recent", lambda n: ctx.store.substring_search(q.user, q.keywords, n, filters), SCAN_PAGE, grows=True,
        ),)
    else:
        fts = [Source(f"keyword:{k}", _keyword_list(ctx, q.user, k, filters), FTS_PER_KEYWORD) for k in q.keywords]
        sources = (*fts, Source("recent", newest.read, min(SCAN_PAGE, SCAN_LIMIT), grows=True, most=SCAN_LIMIT))

    def judge(record: MemoryRecord, _raw: Raw) -> Evidence | None:
        if q.min_importance is not None and record.importance < q.min_importance:
            return None
        matched, reasons = match_keywords(record, q.keywords, q.match_mode)
        if q.keywords and not matched:
            return None
        found = signals(record, matched, len(q.keywords), kind=q.kind, recency_boost=q.recency_boost, now=now)
        return Evidence(found, reasons)

    def bound(lists: Mapping[str, list[Hit]]) -> float:
        # A memory not read yet is no newer than the last one the walk read; every other factor may be 1.
        oldest_read = datetime.fromtimestamp(lists["recent"][-1][1], UTC)
        fresh = _recency(oldest_read, now) if q.recency_boost else 0.0
        best_keyword = 1.0 if q.keywords else 0.0
        return WEIGHTING.score({"keyword": best_keyword, "recency": fresh, "importance": 1.0, "type": 1.0})

    return Strategy("keyword", sources, filters, judge, WEIGHTING, q.limit, bound=bound)


def _run(ctx: Context, q: _Query) -> list[KeywordResult]:
    newest = _Newest(ctx, q.user, Filters(kinds=None if q.kind is None else (q.kind,)))  # active memories only
    found = run(newest, q.user, _strategy(ctx, q, q.now or datetime.now(UTC), newest))
    return [KeywordResult(s.record, s.score, s.reasons) for s in found]


def search_keywords(
    source: ContextSource, keywords: str | Sequence[str], *, user_id: str, kind: str | None = None,
    min_importance: float | None = None, limit: int = 10, recency_boost: bool = True,
    match_mode: str = "substring", now: datetime | str | None = None,
) -> list[KeywordResult]:
    """Memories of ``user_id`` matching any of ``keywords`` (case-insensitive), best first; with no
    keywords, every memory passing ``kind`` and ``min_importance`` competes (keyword factor 0)."""
    ctx = context_of(source)
    q = _query(ctx, keywords, user_id, kind, min_importance, limit, recency_boost, match_mode, now)
    return _run(ctx, q)


# -- cache ----------------------------------------------------------------------------------------------
def search_with_cache(
    source: ContextSource, keywords: str | Sequence[str], *, user_id: str, kind: str | None = None,
    min_importance: float | None = None, limit: int = 10, recency_boost: bool = True,
    match_mode: str = "substring", now: datetime | str | None = None, cache_ttl: float = CACHE_TTL,
) -> list[KeywordResult]:
    """:func:`search_keywords` through the keyword cache of :mod:`engram.caches`: at most 100 queries,
    each kept ``cache_ttl`` seconds (0: bypass) and dropped as soon as the user's memories change.

    The key holds the user's write generation, which every write through ``Memory`` bumps, and the
    store's change token, which writes by other processes change, so a write anywhere makes older
    answers unreachable. An explicit ``now`` is part of the key as given; without one, the clock is not
    (it would end an answer at a clock boundary, not its TTL), and recency drifts by at most ``cache_ttl``.
    """
    ctx = context_of(source)
    q = _query(ctx, keywords, user_id, kind, min_importance, limit, recency_boost, match_mode, now)
    seconds("cache_ttl", cache_ttl)
    if cache_ttl == 0:
        return _run(ctx, q)
    cache = _cache(ctx)
    written = ctx.caches.generation(q.user)
    # The store's change token covers writes by other processes, which this process never sees.
    token = ctx.store.change_token(q.user)
    key = make_key(
        "keyword_search", q.keywords, q.kind, q.min_importance, q.limit, q.recency_boost, q.match_mode,
        q.now, written, token,
    )
    cached = cache.get(q.user, key)
    if cached is not None:
        return list(cached)
    generation = cache.generation(q.user)  # read before searching: an invalidation meanwhile wins
    results = _run(ctx, q)
    cache.put(q.user, key, tuple(results), ttl=float(cache_ttl), generation=generation)
    return results


def _cache(ctx: Context) -> RetrievalCache[tuple[KeywordResult, ...]]:
    cache: RetrievalCache[tuple[KeywordResult, ...]] = ctx.caches.keywords
    return cache


def invalidate(source: ContextSource, user_id: str) -> None:
    """Drop ``user_id``'s cached keyword searches (every write does, through :mod:`engram.caches`)."""
    _cache(context_of(source)).invalidate_user(user_id)


def clear_cache(source: ContextSource) -> None:
    _cache(context_of(source)).clear()


def cache_stats(source: ContextSource) -> dict[str, Any]:
    """Hits, misses, size, max_entries, evictions, expirations and hit_rate."""
    return _cache(context_of(source)).stats()


# -- context --------------------------------------------------------------------------------------------
def _line(result: KeywordResult) -> str:
    record = result.record
    text = " ".join(record.content.split())
    return f"- [{record.kind}] {text} ({record.created_at.date().isoformat()})"


def enrich_context(
    source: ContextSource, query: str | Sequence[str], *, user_id: str, max_tokens: int = 1000, limit: int = 5,
    now: datetime | str | None = None, kind: str | None = None, min_importance: float | None = None,
    recency_boost: bool = True, match_mode: str = "substring", order: str = "relevance",
) -> dict[str, Any]:
    """Prompt context from keyword search (``enrich_context``): ``{memories, summary, count, last_retrieved}``.

    ``summary`` is the context for the prompt: a header and one line per memory within ``max_tokens``
    (at ``CHARS_PER_TOKEN`` characters a token), taken best first: a line that does not fit whole is
    cut if at least a few words of it fit, and nothing after it is added; ``memories`` and ``count``
    cover exactly what ``summary`` shows. ``order`` then lists them best first (``relevance``),
    grouped by kind (``type``) or oldest first (``chronological``). A string query gives its content
    words as keywords; ``kind``, ``min_importance``, ``recency_boost`` and ``match_mode`` are
    :func:`search_keywords`'.
    """
    integer("max_tokens", max_tokens, 1, 1_000_000)
    choice("order", order, list(CONTEXT_ORDERS))
    keywords = keyword_terms(query) if isinstance(query, str) else list(query)
    when = datetime.now(UTC) if now is None else to_utc(now, "now")
    results = search_keywords(source, keywords, user_id=user_id, limit=limit, now=when, kind=kind,
                              min_importance=min_importance, recency_boost=recency_boost, match_mode=match_mode)
    budget = max_tokens * CHARS_PER_TOKEN
    # The header with the largest possible count: the real one is never longer.
    header = f"Found {len(results)} related memories:"
    room = budget - len(header)
    shown: list[dict[str, Any]] = []
    lines: list[str] = []
    for result in results:
        line = _line(result)
        cost = len(line) + 1  # the newline before it
        truncated = cost > room
        if truncated:
            if room < 24:  # less than a few words: a stub would cost tokens and say nothing
                break
            line = line[: room - 2] + "…"
        lines.append(line)
        room -= len(line) + 1
        shown.append({
            "id": result.record.id, "kind": result.record.kind, "content": result.record.content,
            "score": round(result.score, 6), "match_reasons": list(result.match_reasons),
            "created_at": result.record.created_at.isoformat(), "truncated": truncated,
        })
        if truncated:
            break
    if order != "relevance" and shown:
        keyed = list(zip(shown, lines, [r.record.created_at for r in results], strict=False))
        if order == "type":
            first = {item["kind"]: at for at, item in reversed(list(enumerate(shown)))}
            keyed.sort(key=lambda row: first[row[0]["kind"]])  # stable: best first within a kind
        else:
            keyed.sort(key=lambda row: row[2])
        shown, lines = [item for item, _, _ in keyed], [line for _, line, _ in keyed]
    if shown:
        noun = "memory" if len(shown) == 1 else "memories"
        summary = "\n".join([f"Found {len(shown)} related {noun}:", *lines])
    else:
        # With results but no room even for the header, an empty context is the honest answer.
        summary = "" if results else "No related memories found."[:budget]
    return {"memories": shown, "summary": summary, "count": len(shown), "last_retrieved": when}
