"""Stage 3 selection: the retrieval policy, diversity and context-window rules.

Every function here is pure and deterministic: equal inputs give equal outputs, ties are broken by
memory id, and nothing is mutated in place.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from engram.config import RedactionConfig, RetrievalConfig
from engram.errors import ConfigError
from engram.retrieve.interleave import INTERLEAVE_STRATEGIES, interleave_orders
from engram.retrieve.sentences import clip_content, split_sentences
from engram.retrieve.signals import DEFAULT_SIMILARITY_RANGE
from engram.retrieve.types import MemoryEntry, Scored
from engram.text import STOPWORDS
from engram.tokens import count_many, count_tokens, cut_to_tokens

__all__ = [
    "BUDGET_RULES",
    "INTERLEAVE_STRATEGIES",
    "POOL_TOP_K",
    "QUERY_TOKENS",
    "Selection",
    "clip_content",
    "dedup",
    "estimate_tokens",
    "fit_budget",
    "interleave",
    "interleave_orders",
    "mmr",
    "normalize_and_hash",
    "redact",
    "select",
    "selection_pool",
    "split_sentences",
]

T = TypeVar("T")

_WORD_CHAR = re.compile(r"\w")
_CONTENT_WORD = re.compile(r"\w{2,}")


@dataclass(frozen=True)
class Selection:
    """What :func:`select` chose, with the numbers a payload's metadata reports: how many candidates
    each stage dropped (see ``RetrievalMetadata`` for what ``mmr_removed`` and ``beyond_top_k`` count)."""

    entries: list[MemoryEntry]
    dedup_removed: int
    total_tokens: int
    applied_filters: list[str]
    mmr_removed: int = 0
    beyond_top_k: int = 0
    budget_removed: int = 0


def normalize_and_hash(text: str) -> str:
    """The retrieval policy's ``normalizeAndHash``: lowercase, NFKC, collapse whitespace, trim, strip edge punctuation.

    Returns the first 16 hex characters of the SHA-256 of the normalised text. Python's ``\\w`` is
    Unicode-aware where the specification's JavaScript ``[^\\w]`` is ASCII-only; the JavaScript version would
    strip a CJK or Cyrillic text to the empty string, so every such memory would hash alike and
    deduplication would keep only one of them. Here letters of every script are kept.
    """
    normalized = unicodedata.normalize("NFKC", text.lower())
    normalized = " ".join(normalized.split())  # re's \s is str.isspace: the same runs, ten times faster
    normalized = _strip_edges(normalized)
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_" or _WORD_CHAR.match(char) is not None


def _strip_edges(text: str) -> str:
    """``re.sub(r"^\\W+|\\W+$", "", text)`` without the regex: its ``\\W+$`` branch retries from every
    non-word run, quadratic on long punctuated texts; walking in from both ends is linear."""
    start, end = 0, len(text)
    while start < end and not _is_word(text[start]):
        start += 1
    while end > start and not _is_word(text[end - 1]):
        end -= 1
    return text[start:end]


def dedup(items: Sequence[Scored]) -> tuple[list[Scored], int]:
    """Keep the first item per normalised content hash; also the number removed. Idempotent."""
    seen: set[str] = set()
    kept: list[Scored] = []
    for item in items:
        key = normalize_and_hash(item.record.content)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept, len(items) - len(kept)


def _by_score(items: Sequence[Scored]) -> list[Scored]:
    """Tier, then score; equal scores keep the order they came in (ranking breaks its ties by
    relevance before the id), so a reported score that bends near 1 never reorders a ranking."""
    return sorted(items, key=lambda s: (s.tier, -s.score))


def _by_recency(items: Sequence[Scored]) -> list[Scored]:
    return sorted(items, key=lambda s: (-s.record.created_at.timestamp(), s.record.id))


def mmr(
    items: Sequence[Scored], k: int, lam: float, similarity_range: tuple[float, float] = DEFAULT_SIMILARITY_RANGE
) -> list[Scored]:
    """Greedy Maximal Marginal Relevance that spends relevance only on near-duplicates: up to ``k`` items.

    The first pick is the most relevant; each next pick maximises ``score - (1 - lam) * dup``, where
    ``dup`` is the largest similarity to the picks so far above the embedder's "clear match" level
    (the top of ``similarity_range``), scaled to [0, 1] at identical, times the share of the
    memory's content words that the picks already hold (what it would say again). Memories that are merely about
    the same topic (a conversation's turns, a customer's orders) cost nothing, so diversity never
    pushes a relevant memory out of the top k; paraphrases of a pick drop behind distinct memories.
    Departs from the textbook ``lam * rel - (1 - lam) * sim``, which on calibrated scores traded real
    relevance for mere topical difference. Items without a vector (or of another dimension) are
    0-similar to everything. Ties go to the higher score, then to the earlier in ranking order
    (which breaks equal scores by relevance); ``lam == 1`` gives exactly the relevance order.
    """
    ordered = _by_score(items)
    n = len(ordered)
    if k <= 0 or n == 0:
        return []
    k = min(k, n)
    # Finite stand-ins for NaN/inf scores keep every objective comparable, so argmax never stalls.
    relevance = np.nan_to_num(
        np.array([s.score for s in ordered], dtype=np.float64), nan=-1e9, posinf=1e9, neginf=-1e9
    )
    # A lower tier always comes first (see Scored.tier): its own, larger scale.
    relevance = relevance - 1e6 * np.array([s.tier for s in ordered], dtype=np.float64)
    dim = next((s.vector.size for s in ordered if s.vector is not None and s.vector.size), 0)
    matrix = np.zeros((n, max(dim, 1)), dtype=np.float32)
    for i, s in enumerate(ordered):
        if s.vector is not None and s.vector.size == dim and dim:
            matrix[i] = np.asarray(s.vector, dtype=np.float32).ravel()
    matrix = np.nan_to_num(matrix, nan=0.0, posinf=0.0, neginf=0.0)
    # Normalise so the dot product is a true cosine even for vectors stored un-normalised.
    norms = np.linalg.norm(matrix, axis=1)
    np.divide(matrix, norms[:, None], out=matrix, where=norms[:, None] > 0)
    threshold = min(max(similarity_range[1], 0.0), 0.99)

    words: dict[int, frozenset[str]] = {}

    def words_of(i: int) -> frozenset[str]:
        if i not in words:
            words[i] = frozenset(w for w in _CONTENT_WORD.findall(ordered[i].record.content.lower())
                                 if w not in STOPWORDS)
        return words[i]

    # Plain Python over the pool (30 memories by default): per-pick array operations on so few
    # cost more than the arithmetic, which is the same here element by element.
    values = relevance.tolist()
    ceiling = np.maximum.accumulate(relevance[::-1])[::-1].tolist()  # the best value from each place on
    penalty, scale = 1.0 - lam, 1.0 - threshold
    picked = [False] * n
    max_sim = [0.0] * n
    covered: set[str] = set()
    order: list[int] = []
    for _ in range(k):
        best, best_value = -1, -math.inf
        for i in range(n):
            if ceiling[i] <= best_value:
                break  # a penalty only lowers a value: nothing from here on can do better
            if picked[i]:
                continue
            dup = min(max((max_sim[i] - threshold) / scale, 0.0), 1.0)
            if dup > 0:
                # Close in meaning is not yet a duplicate: two turns on one topic that tell different
                # things ("my cousin's preschool graduation" in one, "a colleague's graduation" in
                # the other) are both worth returning. The share of a memory's words that the picks
                # already hold says how much of it is said already; a paraphrase adds little.
                mine = words_of(i)
                dup *= len(mine & covered) / len(mine) if mine else 1.0
            value = values[i] - penalty * dup
            if value > best_value:  # the first maximum: higher score, then smaller id
                best, best_value = i, value
        picked[best] = True
        order.append(best)
        covered |= words_of(best)
        sims = (matrix @ matrix[best]).astype(np.float64).tolist()
        max_sim = [old if old >= new else new for old, new in zip(max_sim, sims, strict=True)]
    return [ordered[i] for i in order]


def interleave(items: Sequence[Scored], strategy: str, k: int, ratio: float | None = None) -> list[Scored]:
    """The retrieval policy's ``interleaveResults``: up to ``k`` items, each id once.

    ``alternate`` takes the best-scored unused item, then the newest unused item, and so on;
    ``score_first`` and ``recency_first`` use one order only. Equal scores keep the ranking's
    order; equal times fall back to the id.
    """
    by_score, by_recency = _by_score(items), _by_recency(items)
    return interleave_orders(by_score, by_recency, strategy, k, key=lambda s: s.record.id, ratio=ratio)


def estimate_tokens(text: str) -> int:
    """What ``text`` costs in a prompt, counted by a real tokenizer (:mod:`engram.tokens`); the
    retrieval policy's one token per four characters undercounts code, numbers and most scripts."""
    return count_tokens(text)


def redact(text: str, cfg: RedactionConfig) -> tuple[str, bool]:
    """The retrieval policy's ``applyRedaction``: replace every pattern match; also whether anything matched."""
    if not cfg.enabled:
        return text, False
    total = 0
    for pattern in cfg.patterns:
        # A function replacement keeps backslashes in the replacement text literal.
        text, count = re.subn(pattern, lambda _m: cfg.replacement, text)
        total += count
    return text, total > 0


#: What the token budget follows (``RetrievalConfig.budget_rules``): the two specifications' rules, or
#: Engram's merge of them.
BUDGET_RULES = ("merged", "policy", "pipeline")
#: What ends a memory cut to fit the budget: one token, where the policy's ``...`` costs three.
ELLIPSIS = "…"
#: The pipeline specification's ``query_tokens``: what its context-window fitting keeps for the query.
QUERY_TOKENS = 100


def fit_budget(entries: Sequence[MemoryEntry], max_tokens: int, rules: str = "merged",
               counted: dict[str, int] | None = None) -> list[MemoryEntry]:
    """Fit ``entries`` (in rank order) to ``max_tokens``; the returned list keeps their order.

    ``merged`` (the default): summaries first (the pipeline specification's
    ``fit_to_context_window``), then the rest in order; the first entry that does not fit is cut and
    ended with ``...`` (the retrieval policy's ``enforceTokenBudget``), and fitting stops there.
    ``policy``: ``enforceTokenBudget`` alone, no summaries first. ``pipeline``:
    ``fit_to_context_window`` alone: :data:`QUERY_TOKENS` are kept for the query, a summary that
    does not fit is skipped, and the first other entry that does not fit ends the fitting, uncut.

    The policy appends ``...`` after cutting to ``remaining * 4`` characters, which can overshoot the
    budget by a token; here the cut is made between tokens and ends with ``…`` (one token), so the
    counted total never exceeds ``max_tokens``. A cut that would leave no text is skipped. Tokens
    are counted by :func:`estimate_tokens` under every rule.
    """
    if rules not in BUDGET_RULES:
        raise ConfigError("budget_rules", f"must be one of {', '.join(BUDGET_RULES)}; got {rules!r}")
    summaries = [e for e in entries if e.type == "summary"]
    rest = [e for e in entries if e.type != "summary"]
    ordered = list(entries) if rules == "policy" else summaries + rest
    budget = max_tokens - QUERY_TOKENS if rules == "pipeline" else max_tokens
    fitted: dict[str, MemoryEntry] = {}
    total = 0
    counts = count_many([e.content for e in ordered])
    if counted is not None:  # the caller's record of each entry's tokens, as returned (cut ones recounted)
        counted.update({e.content: n for e, n in zip(ordered, counts, strict=True)})
    for entry, tokens in zip(ordered, counts, strict=True):
        if total + tokens <= budget:
            fitted[entry.id] = entry
            total += tokens
            continue
        if rules == "pipeline":
            if entry.type == "summary":
                continue  # the pipeline skips a summary that does not fit and goes on
            break
        remaining = budget - total
        if remaining > 1:
            head = cut_to_tokens(entry.content, remaining - 1).rstrip()
            # A cut can join into a different token at its end; shorten until the whole fits.
            while head and count_tokens(head + ELLIPSIS) > remaining:
                head = head[:-1].rstrip()
            if head:
                fitted[entry.id] = replace(entry, content=head + ELLIPSIS)
        break
    return [fitted[e.id] for e in entries if e.id in fitted]


def _entry(
    item: Scored, content: str, was_redacted: bool, config: RetrievalConfig, collection: str
) -> MemoryEntry:
    record = item.record
    message_id = record.metadata.get("message_id")
    return MemoryEntry(
        id=record.id,
        content=content,
        score=item.score,
        timestamp=record.created_at.isoformat(),
        session_id=record.session_id,
        message_id=message_id if isinstance(message_id, str) else None,
        type=record.kind,
        role=record.role,
        collection=collection,
        search_type=config.search_type,
        original_length=len(record.content),
        was_redacted=was_redacted,
        signals=item.signals,
        weights=item.weights,
        reasons=item.reasons,
        record=record,
        metadata=record.metadata,
        agent_id=record.agent_id,
    )


#: The selection pool, and the scored pool (:func:`engram.retrieve.candidates.ranked_limit`), are as
#: deep for any ``top_k`` up to this one: a memory's score does not depend on how many results were
#: asked for (ranking reads some evidence among the scored, such as the best keyword match), and a
#: smaller ``top_k`` returns the first results of a larger one. With the pools of each ``top_k`` (60
#: scored at 5, 66 at the default 8, 70 at 10), 3% of the probe questions' first five at ``top_k=5``
#: were not the first five at ``top_k=10``; with these, none, and no figure moved with diversification
#: picking among 30 instead of ``top_k * overfetch``. A deeper scored pool reaches what only the full
#: score finds in large histories. Probe files written blind to the code, recall@5/10: three pairs
#: of friends, ~420 messages each, 0.504/0.611 -> 0.533/0.638; one chat of 1,237 messages among five
#: friends 0.417/0.593 -> 0.452/0.593, one of 1,219 between two 0.535/0.611 -> 0.545/0.605; the
#: smaller users one question each (plans that keep changing 0.633 -> 0.623 at 5, an ML and devops
#: chat 0.807 -> 0.799 at 10); LoCoMo 0.736/0.815 -> 0.734/0.813, LongMemEval unchanged; the second
#: hop's common ground read as before (:data:`engram.retrieve.hop.COMMON_AMONG`). It costs 0.6 ms at
#: 100k memories (p50 7.8 -> 8.4 ms); 25 (100 scored) measured the same for 0.55 ms more.
POOL_TOP_K = 15


def selection_pool(config: RetrievalConfig) -> int:
    """How many of the best candidates diversification picks ``top_k`` from: ``overfetch`` times
    ``top_k`` or :data:`POOL_TOP_K`, whichever is larger (30 by default)."""
    return max(config.top_k, POOL_TOP_K) * config.overfetch


def select(
    scored: Sequence[Scored], config: RetrievalConfig, *, collection: str,
    similarity_range: tuple[float, float] = DEFAULT_SIMILARITY_RANGE,
    explain: Callable[[list[Scored]], list[Scored]] = list,
) -> Selection:
    """Turn ranked candidates into the entries of a payload, following the retrieval policy's stages in order.

    dedup -> MMR (over the best :func:`selection_pool`, down to ``top_k``) -> redaction -> clip ->
    token budget; ``applied_filters`` lists the stages that ran, in that
    order. ``was_redacted`` says a pattern matched the memory's content, even where clipping later
    removed that part. ``min_score`` is expected to be applied before this.
    ``explain`` adds the signals, weights and reasons of the items picked (a ranking leaves them
    out of the rest).
    """
    filters: list[str] = []
    items = list(scored)
    removed = 0
    if config.dedup:
        items, removed = dedup(items)
        filters.append("deduplication")

    pool = _by_score(items)[: selection_pool(config)]
    picked = mmr(pool, config.top_k, config.mmr_lambda, similarity_range)
    filters.append("mmr")
    # Diversity's own drops: memories that score order alone would have returned.
    mmr_removed = len({s.record.id for s in pool[: len(picked)]} - {s.record.id for s in picked})
    beyond_top_k = len(items) - len(picked) - mmr_removed
    items = explain(picked)

    # Entries stay in rank order (entries[0] is the best match); interleaving by recency is how the
    # prompt presents them (engram.retrieve.render), not a re-ranking.

    contents = [item.record.content for item in items]
    # Redaction runs before clipping and before the budget's truncation on purpose: both cut text,
    # and a cut through an e-mail address (clipping splits "bob@example.com" at its dots) or a card
    # number leaves a fragment the patterns no longer match, so that partial value would leak.
    flags = [False] * len(items)
    if config.redaction.enabled:
        redacted = [redact(c, config.redaction) for c in contents]
        contents = [c for c, _ in redacted]
        flags = [f for _, f in redacted]
        filters.append("redaction")

    if config.clip_sentences is not None:
        contents = [clip_content(c, config.clip_sentences) for c in contents]
        filters.append("sentence_clip")

    entries = [
        _entry(item, content, flag, config, collection)
        for item, content, flag in zip(items, contents, flags, strict=True)
    ]
    budget_removed = 0
    counted: dict[str, int] = {}  # tokens by text, counted once for the budget and the total
    if config.max_tokens is not None:
        fitted = fit_budget(entries, config.max_tokens, config.budget_rules, counted)
        budget_removed = len(entries) - len(fitted)
        entries = fitted
        filters.append("token_budget")

    total_tokens = sum(counted[e.content] if e.content in counted else count_tokens(e.content) for e in entries)
    return Selection(
        entries=entries, dedup_removed=removed, total_tokens=total_tokens, applied_filters=filters,
        mmr_removed=mmr_removed, beyond_top_k=beyond_top_k, budget_removed=budget_removed,
    )
