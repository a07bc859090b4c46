"""Frozen configs, validated at construction with the ranges their specs give.

``RetrievalConfig`` is what one retrieval runs with; its own ranges are wide enough for evaluation
(raw rankings, large k). ``AdminMemorySettings`` is the retrieval policy's admin override, with its
narrower ranges, and turns into a ``RetrievalConfig``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from engram.errors import ConfigError
from engram.validate import choice, integer, number, time_zone

__all__ = [
    "ANN_ABOVE",
    "DEFAULT_REDACTION_PATTERNS",
    "MAX_WARM_USERS",
    "SIGNALS",
    "STRATEGY_WEIGHTS",
    "VECTOR_CACHE_BYTES",
    "AdminMemorySettings",
    "Limits",
    "RedactionConfig",
    "RetrievalConfig",
    "ann_above",
    "cache_dir",
    "check_settings",
    "vector_cache_bytes",
]

#: The retrieval policy's default redaction patterns: SSN, 16-digit card, e-mail.
DEFAULT_REDACTION_PATTERNS: tuple[str, ...] = (
    r"\b\d{3}-\d{2}-\d{4}\b",
    r"\b\d{16}\b",
    r"(?i)\b[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}\b",
)

#: How many bytes of users' vectors an embedded (SQLite) store keeps in memory, the least recently
#: searched user dropped first: 1 GiB holds ~600k vectors of 384 dimensions. A user dropped pays a
#: load at their next search (tens of ms per 10k vectors). Set per process with ENGRAM_VECTOR_CACHE_MB
#: (each service worker holds its own cache) or per store (``SQLiteStore(vector_cache_bytes=...)``).
VECTOR_CACHE_BYTES = 1 << 30


#: The most users ``engram serve --warm-users`` may name: more than a cache budget holds at any
#: realistic size; a bound so a typo is an error, not a scan.
MAX_WARM_USERS = 100_000


def vector_cache_bytes() -> int:
    """The vector cache's budget: ENGRAM_VECTOR_CACHE_MB when set, else :data:`VECTOR_CACHE_BYTES`."""
    megabytes = _env_number("ENGRAM_VECTOR_CACHE_MB", "a number of megabytes", 1e9)
    return VECTOR_CACHE_BYTES if megabytes is None else int(megabytes * (1 << 20))


def _env_number(name: str, what: str, high: float) -> float | None:
    """The number in environment variable ``name`` (0 to ``high``), None when unset or blank."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(name, f"must be {what}, got {raw!r}") from None
    _check_range(name, value, 0, high)
    return value


#: Above this many vectors a user's SQLite searches take candidates from an approximate (faiss IVF)
#: index, rescored exactly in float32; at or below it they scan every vector. Set per process with
#: ENGRAM_ANN_ABOVE (0 turns the approximate index off). Needs faiss-cpu; without it every user is
#: searched exactly.
ANN_ABOVE = 200_000


def cache_dir() -> Path:
    """Where files Engram derives and could make again are kept (the evaluation's embedding cache,
    the ``minilm-int8`` model): ``$ENGRAM_CACHE_DIR``, else ``~/.cache/engram``."""
    base = os.environ.get("ENGRAM_CACHE_DIR")
    return Path(base) if base else Path.home() / ".cache" / "engram"


def ann_above() -> int:
    """The approximate index's threshold: ENGRAM_ANN_ABOVE when set, else :data:`ANN_ABOVE`."""
    rows = _env_number("ENGRAM_ANN_ABOVE", "a number of vectors", 1e12)
    return ANN_ABOVE if rows is None else int(rows)


SIGNALS = ("semantic_similarity", "entity_overlap", "temporal_relevance", "importance", "reinforcement")

#: Default strategy weights, one set per query strategy.
STRATEGY_WEIGHTS: Mapping[str, Mapping[str, float]] = {
    "factual_entity_focused": {
        "semantic_similarity": 0.25,
        "entity_overlap": 0.40,
        "temporal_relevance": 0.20,
        "importance": 0.10,
        "reinforcement": 0.05,
    },
    "procedural": {
        "semantic_similarity": 0.45,
        "entity_overlap": 0.05,
        "temporal_relevance": 0.05,
        "importance": 0.15,
        "reinforcement": 0.30,
    },
    "exploratory": {
        "semantic_similarity": 0.35,
        "entity_overlap": 0.25,
        "temporal_relevance": 0.15,
        "importance": 0.20,
        "reinforcement": 0.05,
    },
    "analytical": {
        "semantic_similarity": 0.30,
        "entity_overlap": 0.15,
        "temporal_relevance": 0.25,
        "importance": 0.25,
        "reinforcement": 0.05,
    },
}


def _check_range(name: str, value: float | int, low: float, high: float) -> None:
    number(name, value, low, high, ConfigError)


def _check_int(name: str, value: Any, low: int, high: int) -> None:
    integer(name, value, low, high, ConfigError)


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    choice(name, value, allowed, ConfigError)


def _check_patterns(name: str, value: Any) -> tuple[str, ...]:
    """A list or tuple of regex strings, as a tuple; anything else is a ConfigError naming ``name``."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ConfigError(name, f"must be a list of regex strings, got {type(value).__name__}")
    for i, pattern in enumerate(value):
        if not isinstance(pattern, str):
            raise ConfigError(f"{name}[{i}]", f"must be a regex string, got {type(pattern).__name__}")
    return tuple(value)


@dataclass(frozen=True)
class RedactionConfig:
    """Redaction of retrieved text (the retrieval policy): off by default; the defaults plus any custom patterns."""

    enabled: bool = False
    patterns: tuple[str, ...] = DEFAULT_REDACTION_PATTERNS
    replacement: str = "[REDACTED]"

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", _check_patterns("redaction.patterns", self.patterns))
        if not isinstance(self.replacement, str):
            raise ConfigError("redaction.replacement", f"must be a string, got {type(self.replacement).__name__}")
        for i, pattern in enumerate(self.patterns):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"redaction.patterns[{i}]", f"not a valid regex: {exc}") from exc


@dataclass(frozen=True)
class RetrievalConfig:
    """How one retrieval runs. ``None`` for clip_sentences or max_tokens switches that stage off."""

    top_k: int = 8
    clip_sentences: int | None = 2
    max_tokens: int | None = 1500
    search_type: str = "hybrid"
    min_score: float = 0.1
    interleave: str = "alternate"
    interleave_ratio: float | None = None
    mmr_lambda: float = 0.7
    dedup: bool = True
    redaction: RedactionConfig = field(default_factory=RedactionConfig)
    fusion: str = "signals"
    weights: Mapping[str, float] | None = None
    overfetch: int = 2
    candidate_limit: int = 50
    keyword_weight: float = 0.5
    track_access: bool = False
    include_superseded: bool = False
    query_max_chars: int = 2000
    cache_ttl: float = 60.0
    rrf_k: int = 60
    timeout_ms: float | None = 5000.0
    budget_rules: str = "merged"
    min_similarity: float | None = None
    timezone: str | None = None

    def __post_init__(self) -> None:
        _check_int("top_k", self.top_k, 1, 1000)
        if self.timezone is not None:
            time_zone(self.timezone, "timezone", ConfigError)
        _check_choice("budget_rules", self.budget_rules, ("merged", "policy", "pipeline"))
        if self.min_similarity is not None:
            _check_range("min_similarity", self.min_similarity, -1.0, 1.0)
        if self.clip_sentences is not None:
            _check_int("clip_sentences", self.clip_sentences, 1, 50)
        if self.max_tokens is not None:
            _check_int("max_tokens", self.max_tokens, 1, 1_000_000)
        _check_choice("search_type", self.search_type, ("hybrid", "semantic", "keyword"))
        _check_range("min_score", self.min_score, 0.0, 1.0)
        _check_choice("interleave", self.interleave, ("alternate", "score_first", "recency_first"))
        if self.interleave_ratio is not None:
            _check_range("interleave_ratio", self.interleave_ratio, 0.0, 1.0)
        _check_range("mmr_lambda", self.mmr_lambda, 0.0, 1.0)
        _check_choice("fusion", self.fusion, ("signals", "rrf"))
        _check_int("overfetch", self.overfetch, 1, 20)
        _check_int("candidate_limit", self.candidate_limit, 1, 10_000)
        _check_range("keyword_weight", self.keyword_weight, 0.0, 1.0)
        _check_int("query_max_chars", self.query_max_chars, 1, 100_000)
        _check_range("cache_ttl", self.cache_ttl, 0.0, 86_400.0)
        _check_int("rrf_k", self.rrf_k, 1, 10_000)
        if self.timeout_ms is not None:
            _check_range("timeout_ms", self.timeout_ms, 1.0, 600_000.0)
        if not isinstance(self.redaction, RedactionConfig):
            raise ConfigError("redaction", f"must be a RedactionConfig, got {type(self.redaction).__name__}")
        if self.weights is not None:
            if not isinstance(self.weights, Mapping):
                kind = type(self.weights).__name__
                raise ConfigError("weights", f"must be a mapping of signal to weight, got {kind}")
            unknown = {str(name) for name in self.weights} - set(SIGNALS)
            if unknown:
                raise ConfigError("weights", f"unknown signals {sorted(unknown)}; allowed: {SIGNALS}")
            for name, value in self.weights.items():
                _check_range(f"weights.{name}", value, 0.0, 1.0)

    def with_(self, **changes: Any) -> RetrievalConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The retrieval policy's camelCase shape of the core settings, plus Engram's own."""
        return {
            "topK": self.top_k,
            "clipSentences": self.clip_sentences,
            "maxTokens": self.max_tokens,
            "searchType": self.search_type,
            "minScore": self.min_score,
            "interleave": self.interleave,
            "interleaveRatio": self.interleave_ratio,
            "mmrLambda": self.mmr_lambda,
            "dedup": self.dedup,
            "redaction": self.redaction.enabled,
            "fusion": self.fusion,
        }

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@dataclass(frozen=True)
class AdminMemorySettings:
    """The retrieval policy's ``AdminMemorySettings`` with its ranges; ``to_config`` applies them."""

    top_k: int = 8
    clip_sentences: int = 2
    max_tokens: int = 1500
    search_type: str = "hybrid"
    min_score: float = 0.1
    enable_redaction: bool = False
    custom_redaction_patterns: tuple[str, ...] = ()
    interleaving_strategy: str = "alternate"
    interleaving_ratio: float | None = None

    def __post_init__(self) -> None:
        _check_int("retrieval.topK", self.top_k, 1, 20)
        _check_int("retrieval.clipSentences", self.clip_sentences, 1, 5)
        _check_int("retrieval.maxTokens", self.max_tokens, 100, 3000)
        _check_choice("retrieval.searchType", self.search_type, ("hybrid", "semantic", "keyword"))
        _check_range("retrieval.minScore", self.min_score, 0.0, 1.0)
        _check_choice(
            "interleaving.strategy",
            self.interleaving_strategy,
            ("alternate", "score_first", "recency_first"),
        )
        if self.interleaving_ratio is not None:
            _check_range("interleaving.ratio", self.interleaving_ratio, 0.0, 1.0)
        patterns = _check_patterns("custom_redaction_patterns", self.custom_redaction_patterns)
        object.__setattr__(self, "custom_redaction_patterns", patterns)
        RedactionConfig(patterns=patterns)  # validates the regexes

    def to_config(self, base: RetrievalConfig | None = None) -> RetrievalConfig:
        base = base or RetrievalConfig()
        return replace(
            base,
            top_k=self.top_k,
            clip_sentences=self.clip_sentences,
            max_tokens=self.max_tokens,
            search_type=self.search_type,
            min_score=self.min_score,
            interleave=self.interleaving_strategy,
            interleave_ratio=self.interleaving_ratio,
            redaction=RedactionConfig(
                enabled=self.enable_redaction,
                patterns=DEFAULT_REDACTION_PATTERNS + tuple(self.custom_redaction_patterns),
            ),
        )


@dataclass(frozen=True)
class Limits:
    """Bounds on what one write may carry; exceeding one is a ValidationError naming it."""

    max_content_chars: int = 200_000
    max_tags: int = 100
    max_tag_chars: int = 200
    max_metadata_bytes: int = 64_000
    max_metadata_depth: int = 8
    max_id_chars: int = 256
    max_batch: int = 100_000
    # Every write and retrieval matches against all of a user's entities: the bound keeps that cost
    # bounded whoever holds the user's key.
    max_entities_per_user: int = 10_000

    def __post_init__(self) -> None:
        _check_int("max_content_chars", self.max_content_chars, 1, 100_000_000)
        _check_int("max_tags", self.max_tags, 0, 10_000)
        _check_int("max_tag_chars", self.max_tag_chars, 1, 10_000)
        _check_int("max_metadata_bytes", self.max_metadata_bytes, 2, 100_000_000)
        _check_int("max_metadata_depth", self.max_metadata_depth, 1, 100)
        _check_int("max_id_chars", self.max_id_chars, 1, 10_000)
        _check_int("max_batch", self.max_batch, 1, 10_000_000)
        _check_int("max_entities_per_user", self.max_entities_per_user, 1, 10_000_000)


def check_settings(config: object, limits: object) -> None:
    """A settings object of the wrong type fails here, naming it, rather than at the first search."""
    if config is not None and not isinstance(config, RetrievalConfig):
        hint = (" (a Mem0 config dict configures vector-store, LLM and embedder providers Engram does not have:"
                " open Memory(path_or_url) and pass a RetrievalConfig)") if isinstance(config, Mapping) else ""
        raise ConfigError("config", f"must be an engram.RetrievalConfig, got {type(config).__name__}{hint}")
    if limits is not None and not isinstance(limits, Limits):
        raise ConfigError("limits", f"must be an engram.Limits, got {type(limits).__name__}")
