"""Input validation: every refusal is a typed engram.errors error naming the field and what is allowed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engram import Memory
from engram.config import AdminMemorySettings, Limits, RedactionConfig, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import ConfigError, ValidationError
from engram.ext import Store, as_filters
from engram.ingest.normalize import MAX_VERSION, normalize, short_repr, validate_id
from engram.model import Filters

NOW = datetime(2024, 2, 15, 10, 30, tzinfo=UTC)
SURROGATE = "caf\ud800e"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "v.db", embedder=FakeEmbedder()) as m:
        m.add("invoice for Acme", user_id="u1", tags=["billing"], metadata={"k": 1})
        yield m


def _field(item: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        normalize({"user_id": "u", "content": "c", **item}, limits=Limits(), now=NOW)
    return info.value.field


# -- lone surrogates ------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", [
    "content", "user_id", "session_id", "agent_id", "project_id", "id", "role", "subject", "predicate", "object",
    "doc_key",
])
def test_lone_surrogate_in_text_fields_names_the_field(field: str) -> None:
    extra = {"kind": "fact"} if field in ("subject", "predicate", "object") else {}
    assert _field({field: SURROGATE, **extra}) == field


@pytest.mark.parametrize(("item", "field"), [
    ({"tags": ["ok", SURROGATE]}, "tags"),
    ({"entities": [SURROGATE]}, "entities"),
    ({"metadata": {"k": SURROGATE}}, "metadata"),
    ({"metadata": {SURROGATE: 1}}, "metadata"),
    ({"metadata": {"k": {"deep": [SURROGATE]}}}, "metadata"),
    ({"kind": "procedure", "trigger": SURROGATE, "action": "a"}, "trigger"),
    # content made from trigger and action is checked first, so the refusal names it
    ({"kind": "procedure", "content": None, "trigger": SURROGATE, "action": "a"}, "content"),
])
def test_lone_surrogate_in_lists_and_metadata(item: dict[str, Any], field: str) -> None:
    assert _field(item) == field


def test_surrogate_pairs_as_two_code_points_are_refused_but_real_astral_text_is_kept() -> None:
    assert _field({"content": "\ud83d\ude00"}) == "content"
    record = normalize({"user_id": "u", "content": "smile \U0001f600 café", "tags": ["ünïcode"]}, limits=Limits(),
                       now=NOW)
    assert record.content == "smile \U0001f600 café" and record.tags == ("ünïcode",)


def test_validate_id_refuses_surrogates() -> None:
    with pytest.raises(ValidationError) as info:
        validate_id(SURROGATE, "agent_id", Limits())
    assert info.value.field == "agent_id" and "surrogate" in str(info.value)


def test_memory_methods_refuse_surrogate_ids(memory: Memory) -> None:
    for call in (lambda: memory.add("x", user_id=SURROGATE), lambda: memory.list(user_id=SURROGATE),
                 lambda: memory.retrieve("invoice", user_id=SURROGATE),
                 lambda: memory.retrieve("invoice", user_id="u1", session_id=SURROGATE)):
        with pytest.raises(ValidationError):
            call()


# -- numbers --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, -1, MAX_VERSION + 1, 2**64, 10**5000, True, 1.0, "1"], ids=short_repr)
def test_version_is_an_integer_in_range(version: Any) -> None:
    assert _field({"version": version}) == "version"


def test_version_bounds_are_inclusive() -> None:
    for version in (1, MAX_VERSION):
        assert normalize({"user_id": "u", "content": "c", "version": version}, limits=Limits(),
                         now=NOW).version == version


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30], ids=short_repr)
def test_metadata_integers_are_within_64_bits(value: Any) -> None:
    """What neither store can compare exactly, so no filter could find it, is refused when written."""
    with pytest.raises(ValidationError) as error:
        normalize({"content": "x", "user_id": "u", "metadata": {"n": [1, {"m": value}]}}, limits=Limits(), now=NOW)
    assert error.value.field == "metadata" and "64-bit" in str(error.value)
    kept = normalize({"content": "x", "user_id": "u", "metadata": {"n": 2**63 - 1, "t": True}}, limits=Limits(),
                     now=NOW)
    assert kept.metadata == {"n": 2**63 - 1, "t": True}


def test_validity_may_not_end_before_it_starts() -> None:
    item = {"content": "x", "user_id": "u", "kind": "fact", "valid_from": "2026-02-01T00:00:00+00:00",
            "valid_to": "2026-01-01T00:00:00+00:00"}
    with pytest.raises(ValidationError) as error:
        normalize(item, limits=Limits(), now=NOW)
    assert error.value.field == "valid_to" and "before valid_from" in str(error.value)
    same = normalize({**item, "valid_to": item["valid_from"]}, limits=Limits(), now=NOW)
    assert same.valid_from == same.valid_to


@pytest.mark.parametrize("importance", [10**400, -(10**400), 10**5000, 2, -1, float("nan"), float("inf"), "0.5",
                                        True, [0.5]], ids=short_repr)
def test_importance_is_a_number_in_unit_range(importance: Any) -> None:
    assert _field({"importance": importance}) == "importance"


def test_importance_accepts_ints_and_floats_in_range() -> None:
    for value, expected in ((0, 0.0), (1, 1.0), (0.25, 0.25)):
        assert normalize({"user_id": "u", "content": "c", "importance": value}, limits=Limits(),
                         now=NOW).importance == expected


@pytest.mark.parametrize("value", [10**400, -(10**400), 10**5000, float("nan"), float("inf")], ids=short_repr)
def test_config_ranges_refuse_huge_and_non_finite_numbers(value: Any) -> None:
    for build, field in ((lambda: RetrievalConfig(min_score=value), "min_score"),
                         (lambda: RetrievalConfig(top_k=value), "top_k"),
                         (lambda: RetrievalConfig(weights={"importance": value}), "weights.importance"),
                         (lambda: Limits(max_tags=value), "max_tags")):
        with pytest.raises(ConfigError) as info:
            build()
        assert info.value.field == field


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"offset": 2**64}, "offset"), ({"offset": 10**9 + 1}, "offset"), ({"offset": -1}, "offset"),
    ({"offset": "0"}, "offset"), ({"offset": 1.0}, "offset"), ({"limit": "5"}, "limit"), ({"limit": 5.0}, "limit"),
    ({"limit": True}, "limit"), ({"limit": 0}, "limit"), ({"limit": 10**400}, "limit"),
])
def test_list_limit_and_offset_are_bounded_integers(memory: Memory, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        memory.list(user_id="u1", **kwargs)
    assert info.value.field == field


def test_list_accepts_the_bounds(memory: Memory) -> None:
    assert memory.list(user_id="u1", offset=10**9) == []
    assert len(memory.list(user_id="u1", limit=10_000, offset=0)) == 1


# -- filters --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "field", "words"), [
    ({"tag": "billing"}, "filters", "unknown filter 'tag'; allowed: kinds"),
    ({"tags_any": 5}, "filters.tags_any", "list of strings"),
    ({"tags_all": [5]}, "filters.tags_all", "string"),
    ({"kinds": "fact"}, "filters.kinds", "bare string"),
    ({"kinds": ["fact", "gossip"]}, "filters.kinds", "allowed: message"),
    ({"statuses": ["active", "bogus"]}, "filters.statuses", "allowed: active"),
    ({"statuses": "active"}, "filters.statuses", "bare string"),
    ({"session_id": 5}, "filters.session_id", "string"),
    ({"agent_id": "a\x00"}, "filters.agent_id", "NUL"),
    ({"project_id": SURROGATE}, "filters.project_id", "surrogate"),
    ({"subject": ["x"]}, "filters.subject", "string"),
    ({"metadata": {"k": 2**70}}, "filters.metadata", "64-bit"),
    ({"metadata": {"k": -(2**63) - 1}}, "filters.metadata", "64-bit"),
    ({"metadata": {"k": float("nan")}}, "filters.metadata", "finite"),
    ({"metadata": {"k": [1]}}, "filters.metadata", "string, number, boolean or null"),
    ({"metadata": {5: 1}}, "filters.metadata", "string"),
    ({"metadata": {"k": SURROGATE}}, "filters.metadata", "surrogate"),
    ({"metadata": ["k"]}, "filters.metadata", "mapping"),
    ({"created_after": "2024-01-01"}, "filters.created_after", "timezone"),
    ({"created_before": 5}, "filters.created_before", "datetime"),
    ({"tags_any": ["t"] * 1001}, "filters.tags_any", "at most 1000"),
    (5, "filters", "mapping"),
    ("kinds", "filters", "mapping"),
])
def test_malformed_filters_name_the_field(value: Any, field: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        as_filters(value)
    assert info.value.field == field
    assert words in str(info.value)


def test_filters_mapping_is_normalized() -> None:
    filters = as_filters({"kinds": ["fact"], "tags_any": ["a", "b"], "statuses": {"archived"},
                          "created_after": "2024-01-01T00:00:00Z", "metadata": {"k": 2**63 - 1, "b": True}})
    assert filters.kinds == ("fact",) and filters.tags_any == ("a", "b") and filters.statuses == ("archived",)
    assert filters.created_after == datetime(2024, 1, 1, tzinfo=UTC)
    assert dict(filters.metadata) == {"k": 2**63 - 1, "b": True}
    assert as_filters(None) == Filters() and as_filters({}) == Filters()
    assert as_filters({"tags_any": None, "kinds": None}) == Filters()
    given = Filters(kinds=("fact",))
    assert as_filters(given) == given


def test_filters_instances_are_validated_too(memory: Memory) -> None:
    with pytest.raises(ValidationError) as info:
        memory.list(user_id="u1", filters=Filters(metadata={"k": 2**70}))
    assert info.value.field == "filters.metadata"


def test_valid_mapping_filters_still_filter(memory: Memory) -> None:
    assert len(memory.list(user_id="u1", filters={"tags_any": ["billing"], "metadata": {"k": 1}})) == 1
    assert memory.list(user_id="u1", filters={"tags_any": ["other"]}) == []
    result = memory.retrieve("invoice Acme", user_id="u1", filters={"kinds": ["message"], "tags_all": ["billing"]})
    assert result.metadata.error is None and len(result.memories) == 1


# -- configs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("build", "field"), [
    (lambda: RetrievalConfig(weights=5), "weights"),
    (lambda: RetrievalConfig(weights=["importance"]), "weights"),
    (lambda: RetrievalConfig(weights={5: 0.1}), "weights"),
    (lambda: RetrievalConfig(weights={"importance": "0.1"}), "weights.importance"),
    (lambda: RetrievalConfig(redaction=5), "redaction"),
    (lambda: RetrievalConfig(search_type=["hybrid"]), "search_type"),
    (lambda: AdminMemorySettings(custom_redaction_patterns=5), "custom_redaction_patterns"),
    (lambda: AdminMemorySettings(custom_redaction_patterns=r"\d+"), "custom_redaction_patterns"),
    (lambda: AdminMemorySettings(custom_redaction_patterns=[5]), "custom_redaction_patterns[0]"),
    (lambda: RedactionConfig(patterns=5), "redaction.patterns"),
    (lambda: RedactionConfig(patterns=[r"\d", None]), "redaction.patterns[1]"),
    (lambda: RedactionConfig(patterns=["("]), "redaction.patterns[0]"),
    (lambda: RedactionConfig(replacement=5), "redaction.replacement"),
])
def test_malformed_configs_are_config_errors(build: Any, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        build()
    assert info.value.field == field


def test_weights_message_says_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match="must be a mapping of signal to weight"):
        RetrievalConfig(weights=5)  # type: ignore[arg-type]


def test_pattern_lists_become_tuples() -> None:
    assert RedactionConfig(patterns=[r"\d+"]).patterns == (r"\d+",)  # type: ignore[arg-type]
    settings = AdminMemorySettings(custom_redaction_patterns=[r"secret-\d+"])  # type: ignore[arg-type]
    assert settings.custom_redaction_patterns == (r"secret-\d+",)
    assert settings.to_config().redaction.patterns[-1] == r"secret-\d+"


# -- tag lists ------------------------------------------------------------------------------------------


def test_tag_list_refusal_stops_at_the_limit() -> None:
    """100,000 distinct tags are refused about as fast as 101: the check runs as items are read."""
    tags = [f"t{i}" for i in range(100_000)]
    started = time.perf_counter()
    assert _field({"tags": tags}) == "tags"
    assert time.perf_counter() - started < 0.5  # 100,000 tags read one by one would take seconds

    def endless() -> Iterator[str]:
        i = 0
        while True:
            yield f"t{i}"
            i += 1

    class Endless(list[str]):
        def __iter__(self) -> Iterator[str]:
            return endless()

    assert _field({"tags": Endless()}) == "tags"


def test_tag_lists_keep_first_occurrence_order() -> None:
    record = normalize({"user_id": "u", "content": "c", "tags": ["b", "a", "b", "c", "a"]}, limits=Limits(),
                       now=NOW)
    assert record.tags == ("b", "a", "c")
    limits = Limits(max_tags=2)
    assert normalize({"user_id": "u", "content": "c", "tags": ["a", "b"] * 50}, limits=limits, now=NOW).tags == (
        "a", "b")
    with pytest.raises(ValidationError, match="at most 2"):
        normalize({"user_id": "u", "content": "c", "tags": ["a", "b", "c"]}, limits=limits, now=NOW)


# -- update: fields the store keeps are refused, never silently ignored -----------------------------


@pytest.mark.parametrize("field", ["access_count", "last_accessed_at", "recorded_at", "content_hash", "id"])
def test_update_refuses_fields_it_would_ignore(memory: Memory, field: str) -> None:
    record = memory.list(user_id="u1")[0]
    value: Any = 5 if field == "access_count" else NOW if field.endswith("_at") else "x"
    with pytest.raises(ValidationError) as info:
        memory.update(record.id, user_id="u1", **{field: value})
    assert info.value.field == field
    assert memory.get(record.id, user_id="u1") == record



# -- extreme datetimes ------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["created_at", "valid_from", "valid_to"])
@pytest.mark.parametrize("value", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_datetime_out_of_range_after_utc_conversion_names_the_field(memory: Memory, field: str, value: str) -> None:
    with pytest.raises(ValidationError) as info:
        memory.add("extreme date", user_id="u1", **{field: value})
    assert info.value.field == field
    assert "range" in str(info.value)


def test_a_user_cannot_register_unbounded_entities(store: Store) -> None:
    memory = Memory(store=store, embedder=FakeEmbedder(), limits=Limits(max_entities_per_user=3))
    for n in range(3):
        memory.add_entity(f"customer:c{n}", user_id="u1", aliases=[f"Customer {n}"])
    with pytest.raises(ValidationError, match="max_entities_per_user") as caught:
        memory.add_entity("customer:c3", user_id="u1")
    assert caught.value.field == "entity_id" and "at most 3" in str(caught.value)
    assert len(store.entities("u1")) == 3
    # A registered entity can still be updated, and another user has their own bound.
    memory.add_entity("customer:c0", user_id="u1", aliases=["Customer Zero"])
    memory.add_entity("customer:c3", user_id="u2")
    assert [e.aliases for e in store.entities("u1") if e.id == "customer:c0"] == [("Customer Zero",)]
    assert Limits().max_entities_per_user == 10_000
    with pytest.raises(ConfigError, match="max_entities_per_user"):
        Limits(max_entities_per_user=0)
