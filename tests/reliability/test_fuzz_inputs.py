"""Fuzzing: 10,000+ generated inputs through query understanding, time parsing, config validation,
normalize and Memory.retrieve; nothing escapes but a typed ``engram.errors`` error.

Every case is counted (cases, typed rejections, untyped failures) and the totals are printed and
reported by the last test. Inputs that once hit a bug (lone surrogates, huge integers, non-mapping
configs) are part of the properties, and each bug also has its own test at the end.
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram import Memory
from engram.config import AdminMemorySettings, Limits, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import ConfigError, EngramError, ValidationError
from engram.ingest.normalize import FIELDS, normalize
from engram.model import KINDS, STATUSES, Entity, Filters, MemoryRecord, QueryPlan, TimeRange
from engram.retrieve.types import Retrieval
from engram.retrieve.understand import understand
from engram.timeparse import parse_time_scope
from tests.reliability._workers import LONG, report

T = TypeVar("T")
STATS: dict[str, Counter[str]] = {}
SAMPLES: list[str] = []
FACTOR = 3 if LONG else 1


def fuzz(n: int) -> settings:
    return settings(max_examples=n * FACTOR, deadline=None, suppress_health_check=list(HealthCheck),
                    database=None)


def attempt(name: str, call: Callable[[], T]) -> T | None:
    """Run one case: typed EngramError is a rejection; anything else is a failure (and re-raised)."""
    counts = STATS.setdefault(name, Counter())
    counts["cases"] += 1
    try:
        return call()
    except EngramError:
        counts["rejected"] += 1
        return None
    except Exception as exc:
        counts["failures"] += 1
        if len(SAMPLES) < 20:
            SAMPLES.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
        raise


# -- strategies ---------------------------------------------------------------------------------------

offsets = st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-23 * 60 - 59, 23 * 60 + 59))
aware = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=offsets)
NASTY_NUMBERS = [0, -1, 1, 2**31, 2**63 - 1, -(2**63), 10**18, 1e308, -1e308, 1e-308, 0.5, 1.0000001,
                 float("nan"), float("inf"), -float("inf"), True, False]
scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(), st.sampled_from(NASTY_NUMBERS),
    st.text(max_size=40), st.binary(max_size=8), aware, st.datetimes(), st.dates(),
)
junk = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.frozensets(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
    ),
    max_leaves=8,
)
TIME_PHRASES = [
    "yesterday", "today", "tomorrow", "last week", "this month", "next year", "last 3 days", "past 10 weeks",
    "past 999999999 years", "9999 years ago", "3 months ago", "since March 2021", "before 2020", "after Q3 2024",
    "between 1/2/2020 and 3/4/2021", "in Q5", "Q0 2024", "February 30", "Feb 29 2023", "on 31/12/9999",
    "0000-00-00", "9999-12-31", "0001-01-01", "12/31/0000", "in December", "last Friday", "this weekend",
    "the weekend", "recently", "lately", "in 2024", "in 10000", "during the month of May 9999",
    "since yesterday", "before tomorrow", "between today and yesterday", "last 0 days", "past -3 weeks",
]
ADVERSARIAL = [
    "A " * 600, "of the " * 300, "1/" * 800, "past " * 300, "Q" * 1500, "9" * 1900, "'s " * 500,
    "Mr. O'Brien-Smith of the Coca-Cola & Co " * 40, "\n" * 1500, "how to " * 250, "\u200b" * 1500,
    "Ｅｎｔｉｔｙ " * 300, "İ" * 1000, "ǅ" * 1000, "\x00" * 50,
]
queries = st.one_of(
    st.text(max_size=300),
    st.sampled_from(TIME_PHRASES + ADVERSARIAL),
    st.builds(lambda a, b, c: f"{a} {b} {c}", st.text(max_size=40), st.sampled_from(TIME_PHRASES),
              st.text(max_size=40)),
    st.text(alphabet=string.ascii_letters + string.digits + " /-:'&.,Q", max_size=200),
)
entities = st.lists(
    st.builds(Entity, id=st.text(max_size=30), type=st.text(max_size=15), name=st.text(max_size=30),
              aliases=st.lists(st.text(max_size=20), max_size=3).map(tuple)),
    max_size=5,
)


# -- understand and timeparse ---------------------------------------------------------------------------


@fuzz(3000)
@given(query=queries, now=aware, known=entities)
def test_understand_takes_any_query(query: str, now: datetime, known: list[Entity]) -> None:
    plan = attempt("understand", lambda: understand(query, now=now, known_entities=known))
    assert isinstance(plan, QueryPlan)  # only a naive now is refused
    assert plan.category in ("factual", "procedural", "exploratory", "analytical")
    assert all(0.0 <= w <= 1.0 for w in plan.weights.values())
    if plan.time_range is not None:
        assert plan.time_range.start <= plan.time_range.end


@fuzz(3000)
@given(text=queries, now=aware)
def test_parse_time_scope_takes_any_text(text: str, now: datetime) -> None:
    scope = attempt("parse_time_scope", lambda: parse_time_scope(text, now))
    assert scope is None or isinstance(scope, TimeRange)
    if scope is not None:
        assert scope.start <= scope.end and scope.start.tzinfo is not None and scope.end.tzinfo is not None


@fuzz(200)
@given(text=queries, now=st.one_of(st.datetimes(), junk))
def test_naive_or_junk_now_is_a_typed_rejection(text: str, now: Any) -> None:
    attempt("parse_time_scope", lambda: parse_time_scope(text, now))
    attempt("understand", lambda: understand(text, now=now))


# -- configs --------------------------------------------------------------------------------------------

CHOICES = ["hybrid", "semantic", "keyword", "alternate", "score_first", "recency_first", "signals", "rrf", ""]
config_value = st.one_of(st.sampled_from(NASTY_NUMBERS + CHOICES), st.integers(-5, 200_000),
                         st.floats(-2, 2), scalar)
retrieval_kwargs = st.dictionaries(
    st.sampled_from([n for n in RetrievalConfig.field_names() if n != "weights"]), config_value, max_size=6,
)
weights = st.dictionaries(st.one_of(st.sampled_from(["semantic_similarity", "importance", "entity_overlap"]),
                                    st.text(max_size=10)), config_value, max_size=3)


@fuzz(800)
@given(kwargs=retrieval_kwargs, w=st.one_of(st.none(), weights, junk))
def test_retrieval_config_validates_any_value(kwargs: dict[str, Any], w: dict[str, Any] | None) -> None:
    attempt("RetrievalConfig", lambda: RetrievalConfig(**kwargs, weights=w))


@fuzz(600)
@given(kwargs=st.dictionaries(
    st.sampled_from(["top_k", "clip_sentences", "max_tokens", "search_type", "min_score", "enable_redaction",
                     "interleaving_strategy", "interleaving_ratio"]), config_value, max_size=6),
    patterns=st.lists(st.one_of(st.text(max_size=10), st.sampled_from(["(", "[a-", "*", "(?P<x>", r"\d+"])),
                      max_size=3).map(tuple) | junk)
def test_admin_settings_validate_any_value(kwargs: dict[str, Any], patterns: tuple[str, ...]) -> None:
    settings_ = attempt("AdminMemorySettings",
                        lambda: AdminMemorySettings(**kwargs, custom_redaction_patterns=patterns))
    if settings_ is not None:
        assert isinstance(attempt("AdminMemorySettings", settings_.to_config), RetrievalConfig)


@fuzz(500)
@given(kwargs=st.dictionaries(
    st.sampled_from(["max_content_chars", "max_tags", "max_tag_chars", "max_metadata_bytes", "max_metadata_depth",
                     "max_id_chars", "max_batch"]), config_value, max_size=6))
def test_limits_validate_any_value(kwargs: dict[str, Any]) -> None:
    attempt("Limits", lambda: Limits(**kwargs))


# -- normalize ------------------------------------------------------------------------------------------

TEXTY = st.one_of(st.text(max_size=60), st.sampled_from(["%", "_", "'", "\x00", "x" * 300, " ", ""]))
# st.text never generates lone surrogates (not encodable as UTF-8); json.loads makes them of "\\ud800".
SURROGATES = st.sampled_from(["caf\ud800e", "\udfff", "\ud83d\ude00"])
NASTY_TEXT = st.one_of(TEXTY, SURROGATES)
HUGE_INTS = st.sampled_from([2**31, 2**63, 2**64, 10**400, -(10**400)])
field_value: dict[str, st.SearchStrategy[Any]] = {
    "content": st.one_of(NASTY_TEXT, junk), "user_id": st.one_of(NASTY_TEXT, junk),
    "kind": st.one_of(st.sampled_from(KINDS), junk),
    "status": st.one_of(st.sampled_from(STATUSES), junk), "tags": st.one_of(st.lists(NASTY_TEXT, max_size=5), junk),
    "entities": st.one_of(st.lists(NASTY_TEXT, max_size=5), junk), "metadata": st.one_of(
        st.dictionaries(NASTY_TEXT, st.one_of(junk, NASTY_TEXT, HUGE_INTS), max_size=4), junk),
    "importance": st.one_of(st.floats(), st.sampled_from(NASTY_NUMBERS), HUGE_INTS, junk),
    "created_at": st.one_of(aware, st.datetimes(), aware.map(datetime.isoformat), junk),
    "valid_from": st.one_of(aware, aware.map(datetime.isoformat), junk),
    "valid_to": st.one_of(aware, junk), "version": st.one_of(st.integers(-5, 10**6), HUGE_INTS, junk),
}
items: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"content": NASTY_TEXT, "user_id": NASTY_TEXT},
    optional={name: field_value.get(name, st.one_of(NASTY_TEXT, junk)) for name in sorted(FIELDS)
              if name not in ("content", "user_id")} | {"bogus_field": junk},
)


@fuzz(2000)
@given(item=st.one_of(items, st.dictionaries(st.text(max_size=12), junk, max_size=6)))
def test_normalize_takes_any_dict(item: dict[str, Any]) -> None:
    now = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)
    record = attempt("normalize", lambda: normalize(item, limits=Limits(), now=now))
    assert record is None or isinstance(record, MemoryRecord)


# -- Memory.retrieve ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path: Path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    with Memory(path, embedder=FakeEmbedder()) as m:
        m.add_many([
            {"user_id": user, "content": f"{word} invoice for Acme Corp, paid NET30 on 2024-01-{day:02d}",
             "kind": kind, "tags": ["billing", "%"], "entities": ["customer:acme"], "metadata": {"k": "v"},
             "created_at": datetime(2024, 1, day, tzinfo=UTC)}
            for user in ("u1", "u%")
            for day, (word, kind) in enumerate(zip(["late", "early", "partial", "disputed"], KINDS, strict=False),
                                               start=1)
        ])
        m.add_entity("customer:acme", user_id="u1", name="Acme Corp", aliases=["Acme"])
        yield m


config_for_retrieve = st.builds(
    lambda kwargs: _or_none(lambda: RetrievalConfig(**kwargs)),
    st.dictionaries(st.sampled_from(["top_k", "clip_sentences", "max_tokens", "search_type", "min_score",
                                     "interleave", "mmr_lambda", "fusion", "overfetch", "candidate_limit",
                                     "query_max_chars", "cache_ttl", "dedup", "include_superseded", "track_access"]),
                    config_value, max_size=5),
)
filters_ = st.fixed_dictionaries({}, optional={
    "kinds": st.lists(st.one_of(st.sampled_from(KINDS), TEXTY), max_size=3).map(tuple),
    "tags_all": st.lists(NASTY_TEXT, max_size=3).map(tuple), "tags_any": st.lists(NASTY_TEXT, max_size=3),
    "session_id": NASTY_TEXT, "project_id": NASTY_TEXT, "agent_id": NASTY_TEXT,
    "statuses": st.lists(st.sampled_from(STATUSES), max_size=3).map(tuple),
    "metadata": st.dictionaries(st.one_of(st.just("k"), st.text(max_size=8), SURROGATES),
                                st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), NASTY_TEXT,
                                          st.floats(allow_nan=False), HUGE_INTS), max_size=2),
    "created_after": aware, "created_before": aware,
})


def _or_none(build: Callable[[], RetrievalConfig]) -> RetrievalConfig | None:
    try:
        return build()
    except EngramError:
        return None


@fuzz(1200)
@given(query=st.one_of(queries, st.text(min_size=1990, max_size=2100)), user=st.one_of(st.sampled_from(
    ["u1", "u%", "u_", "nobody"]), NASTY_TEXT), config=config_for_retrieve,
    now=st.one_of(st.none(), aware, aware.map(datetime.isoformat), st.sampled_from(["", "yesterday", "2024-13-01"])),
    session=st.one_of(st.none(), NASTY_TEXT), kinds=st.one_of(st.none(), st.lists(st.sampled_from(KINDS), max_size=2)),
    tags=st.one_of(st.none(), st.lists(TEXTY, max_size=3)), filters=st.one_of(st.none(), filters_))
def test_memory_retrieve_takes_any_input(memory: Memory, query: str, user: str, config: RetrievalConfig | None,
                                         now: Any, session: str | None, kinds: list[str] | None,
                                         tags: list[str] | None, filters: dict[str, Any] | None) -> None:
    result = attempt("Memory.retrieve", lambda: memory.retrieve(
        query, user_id=user, config=config, now=now, session_id=session, kinds=kinds, tags=tags, filters=filters))
    if result is None:
        return
    assert isinstance(result, Retrieval)
    limit = (config or memory.config).query_max_chars
    if not query.strip() or len(query) > limit:
        assert result.metadata.error is not None and result.metadata.error["code"] == "INVALID_QUERY"
    error = result.metadata.error
    assert error is None or error["code"] in ("INVALID_QUERY", "COLLECTION_NOT_FOUND"), error
    for entry in result.memories:
        assert entry.record is not None and entry.record.user_id == user


def test_fuzz_figures() -> None:
    """Runs last in the module: the totals over every property above."""
    total = Counter[str]()
    for counts in STATS.values():
        total.update(counts)
    figures = {
        "cases": total["cases"], "typed_rejections": total["rejected"], "failures": total["failures"],
        "by_target": {name: dict(counts) for name, counts in sorted(STATS.items())}, "failure_samples": SAMPLES,
    }
    report("fuzz_inputs", figures)
    assert total["failures"] == 0, SAMPLES
    assert total["cases"] >= 10_000 * FACTOR or total["cases"] == 0


# -- fixed bugs: once untyped exceptions, now typed rejections ------------------------------------------

LONE_SURROGATE = "caf\ud800e"


@pytest.mark.parametrize("where", [
    "content", "user_id", "tags", "metadata",
    "query",
])
def test_lone_surrogate_is_a_typed_rejection(memory: Memory, where: str) -> None:
    """A lone surrogate (what json.loads makes of '\\ud800') cannot be encoded as UTF-8: a write refuses it
    naming the field; a query gets seed 001's INVALID_QUERY fallback."""
    if where == "query":
        result = memory.retrieve(LONE_SURROGATE, user_id="u1")
        assert result.memories == ()
        assert result.metadata.error is not None and result.metadata.error["code"] == "INVALID_QUERY"
        return
    fields: dict[str, Any] = {
        "content": {"content": LONE_SURROGATE}, "user_id": {"user_id": LONE_SURROGATE},
        "tags": {"tags": ["ok", LONE_SURROGATE]}, "metadata": {"metadata": {"k": [LONE_SURROGATE]}},
    }[where]
    with pytest.raises(ValidationError) as info:
        memory.add_many([{"content": "fine", "user_id": "u1", **fields}])
    assert info.value.field == f"memories[0].{where}"


@pytest.mark.parametrize(("case", "field"), [
    ("version", "version"), ("offset", "offset"), ("metadata_filter", "filters.metadata"),
    ("importance", "importance"),
])
def test_huge_integers_are_typed_rejections(memory: Memory, case: str, field: str) -> None:
    """Integers beyond SQLite's 64-bit range (or float range) are refused before they reach the store."""
    with pytest.raises(ValidationError) as info:
        if case == "version":
            memory.add("v", user_id="u1", version=2**64)
        elif case == "offset":
            memory.list(user_id="u1", offset=2**64)
        elif case == "metadata_filter":
            memory.list(user_id="u1", filters={"metadata": {"k": 2**70}})
        else:
            memory.add("i", user_id="u1", importance=10**400)
    assert info.value.field == field


@pytest.mark.parametrize(("case", "field"), [
    ("unknown_key", "filters"), ("tags_any_int", "filters.tags_any"), ("limit_str", "limit"),
])
def test_malformed_filters_are_typed_rejections(memory: Memory, case: str, field: str) -> None:
    """Filters given as a mapping are validated field by field; list(limit='5') is refused by name."""
    with pytest.raises(ValidationError) as info:
        if case == "unknown_key":
            memory.list(user_id="u1", filters={"tag": "billing"})
        elif case == "tags_any_int":
            memory.retrieve("invoice", user_id="u1", filters={"tags_any": 5})
        else:
            memory.list(user_id="u1", limit="5")  # type: ignore[arg-type]
    assert info.value.field == field


@pytest.mark.parametrize(("case", "field"), [("weights", "weights"), ("patterns", "custom_redaction_patterns")])
def test_config_non_mappings_are_typed_rejections(case: str, field: str) -> None:
    """RetrievalConfig(weights=<non-mapping>) and non-sequence redaction patterns are ConfigErrors."""
    with pytest.raises(ConfigError) as info:
        if case == "weights":
            RetrievalConfig(weights=5)  # type: ignore[arg-type]
        else:
            AdminMemorySettings(custom_redaction_patterns=5)  # type: ignore[arg-type]
    assert info.value.field == field


def test_fuzz_strategies_cover_what_they_claim() -> None:
    """Cheap guard that the generators stay meaningful as the code evolves."""
    assert "importance" in FIELDS and "metadata" in FIELDS
    assert math.isnan(NASTY_NUMBERS[12]) and date(2024, 2, 29)
    assert Filters(tags_any=("%",)).tags_any == ("%",)
