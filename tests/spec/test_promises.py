"""What the specifications promise (issue 43), each test named after the behaviour it checks, on
every backend where the behaviour touches a store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import engram.retrieve as retrieve_module
from engram import Memory
from engram.config import RetrievalConfig


class _Clock:
    """The cache's monotonic clock and the pipeline's wall clock, moved together by a test."""

    def __init__(self, wall: datetime) -> None:
        self.wall = wall
        self.mono = 1000.0

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds

    def __call__(self) -> float:
        return self.mono


@pytest.fixture
def clock(each_backend: Memory, monkeypatch: pytest.MonkeyPatch) -> _Clock:
    made = _Clock(datetime(2026, 3, 9, 23, 59, 50, tzinfo=UTC))

    class _Now(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return made.wall if tz is None else made.wall.astimezone(tz)

    monkeypatch.setattr(retrieve_module, "datetime", _Now)
    monkeypatch.setattr(each_backend.caches.retrievals, "_clock", made)
    return made


# -- 1. fact wording -----------------------------------------------------------------------------------


def test_a_bare_fact_triple_is_worded_with_the_specification_templates(each_backend: Memory) -> None:
    fact = each_backend.add(None, user_id="u", kind="fact", subject="Acme Corporation",
                            predicate="has_property", object="industry: technology")
    assert fact.content == "Acme Corporation has industry: technology"
    other = each_backend.add(None, user_id="u", kind="fact", subject="Acme", predicate="ships_via", object="UPS")
    assert other.content == "Acme ships via UPS"
    assert each_backend.get(fact.id, user_id="u").content == "Acme Corporation has industry: technology"


# -- 2. the retrieval cache lasts its TTL ----------------------------------------------------------------


def test_a_cached_retrieval_lasts_its_ttl_not_the_clock_minute(each_backend: Memory, clock: _Clock) -> None:
    each_backend.add("Acme prefers NET30 payment terms", user_id="u", kind="fact")
    config = RetrievalConfig(cache_ttl=600)
    first = each_backend.retrieve("How does Acme pay?", user_id="u", config=config)
    assert not first.metadata.cached
    clock.advance(15)  # across midnight, and so across a minute boundary
    assert each_backend.retrieve("How does Acme pay?", user_id="u", config=config).metadata.cached
    clock.advance(580)  # 595 s after the first: still within the TTL
    assert each_backend.retrieve("How does Acme pay?", user_id="u", config=config).metadata.cached
    clock.advance(10)
    assert not each_backend.retrieve("How does Acme pay?", user_id="u", config=config).metadata.cached


def test_a_relative_query_is_cached_by_the_range_it_resolves_to(each_backend: Memory, clock: _Clock) -> None:
    each_backend.add("Acme ordered 40 kg of espresso", user_id="u", kind="episode",
                     created_at="2026-03-09T10:00:00+00:00")
    config = RetrievalConfig(cache_ttl=600)
    before = each_backend.retrieve("What did Acme order yesterday?", user_id="u", config=config)
    clock.advance(15)  # now it is the next day: "yesterday" is another range
    after = each_backend.retrieve("What did Acme order yesterday?", user_id="u", config=config)
    assert not after.metadata.cached
    assert before.metadata.time_range is not None and after.metadata.time_range is not None
    assert after.metadata.time_range.start == before.metadata.time_range.start + timedelta(days=1)
    clock.advance(15)  # the same day again: the same range, served from the cache
    assert each_backend.retrieve("What did Acme order yesterday?", user_id="u", config=config).metadata.cached


# -- 10, 11, 3. prompts in rank order; the specified format; the interleaving ratio ----------------------


def _orders(memory: Memory) -> None:
    memory.add("Acme ordered 40 kg of espresso beans for March", user_id="u", kind="episode",
               created_at="2026-01-02T10:00:00+00:00")
    memory.add("Acme's espresso order ships on Fridays", user_id="u", kind="fact",
               created_at="2026-02-02T10:00:00+00:00")
    memory.add("When Acme orders espresso: confirm the roast date", user_id="u", kind="procedure",
               created_at="2026-03-02T10:00:00+00:00")


NOW = datetime(2026, 3, 9, 12, tzinfo=UTC)


@pytest.mark.parametrize("style", ["policy", "augmentation"])
def test_the_prompt_starts_with_the_best_memory(each_backend: Memory, style: str) -> None:
    _orders(each_backend)
    result = each_backend.retrieve("How much espresso did Acme order?", user_id="u", now=NOW,
                                   config=RetrievalConfig(min_score=0.0))
    assert len(result.memories) == 3
    prompt = result.to_prompt(style=style)
    first_line = next(line for line in prompt.splitlines() if line.startswith(("- ", "[")))
    assert result.memories[0].content in first_line


def test_the_policy_spec_style_has_the_specified_footer_and_confidence(each_backend: Memory) -> None:
    each_backend.add("Acme prefers NET30 payment terms", user_id="u", kind="fact")
    result = each_backend.retrieve("How does Acme pay?", user_id="u", now=NOW)
    prompt = result.to_prompt(style="policy_spec")
    assert f"- Acme prefers NET30 payment terms (confidence: {result.memories[0].score:.2f})" in prompt
    assert prompt.endswith(f"_Retrieved 1 memories in {round(result.metadata.query_time_ms)}ms_\n")


def test_the_admin_interleaving_ratio_orders_what_is_presented(each_backend: Memory) -> None:
    from engram.config import AdminMemorySettings

    _orders(each_backend)
    query = "How much espresso did Acme order?"
    orders = {}
    for ratio in (None, 1.0, 0.0):
        config = AdminMemorySettings(interleaving_ratio=ratio, min_score=0.0).to_config(RetrievalConfig(cache_ttl=0))
        result = each_backend.retrieve(query, user_id="u", now=NOW, config=config)
        assert result.metadata.config["interleaveRatio"] == ratio
        orders[ratio] = [m.id for m in result.presented()]
        assert result.to_dict()["presentationOrder"] == orders[ratio]
        ranked = result.ids()
    newest = max(each_backend.list(user_id="u"), key=lambda r: r.created_at).id
    assert orders[1.0] == ranked  # every pick from the best
    assert orders[0.0][0] == newest  # every pick from the newest
    assert orders[0.0] != orders[1.0]
    assert orders[None][0] == ranked[0]


# -- 5. keyword search without keywords ------------------------------------------------------------------


def test_keyword_search_without_keywords_filters_by_type_importance_and_limit_only(each_backend: Memory) -> None:
    each_backend.add("Acme pays NET30", user_id="u", kind="fact", importance=0.9,
                     created_at="2026-03-01T10:00:00+00:00")
    each_backend.add("Bluebird pays on time", user_id="u", kind="fact", importance=0.2,
                     created_at="2026-03-02T10:00:00+00:00")
    each_backend.add("Harbor Hotel called", user_id="u", kind="episode", importance=0.9,
                     created_at="2026-03-03T10:00:00+00:00")
    found = each_backend.search_keywords([], user_id="u", now=NOW)
    assert len(found) == 3 and all(r.match_reasons == () for r in found)
    assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)
    facts = each_backend.search_keywords([], user_id="u", kind="fact", min_importance=0.5, now=NOW)
    assert [r.record.content for r in facts] == ["Acme pays NET30"]
    assert len(each_backend.search_keywords("", user_id="u", limit=2, now=NOW)) == 2
    # Keywords given still filter: only matches come back.
    assert [r.record.content for r in each_backend.search_keywords(["hotel"], user_id="u", now=NOW)] == [
        "Harbor Hotel called"]


# -- 6, 7, 12. recall: the specifications' kind names, linked memories of any status, feedback's clock -------


@pytest.mark.parametrize(("alias", "kind"), [("semantic", "fact"), ("episodic", "episode"),
                                              ("procedural", "procedure"), ("Semantic", "fact")])
def test_recall_by_kind_accepts_the_specification_type_names(each_backend: Memory, alias: str, kind: str) -> None:
    _orders(each_backend)
    found = each_backend.recall_by_kind(alias, user_id="u")
    assert [m.record.kind for m in found.memories] == [kind]
    assert [m.record.kind for m in each_backend.recall(None, user_id="u", mode="recent", kind=alias).memories] == [
        kind]


def test_recall_by_kind_still_refuses_an_unknown_kind(each_backend: Memory) -> None:
    from engram.errors import ValidationError

    with pytest.raises(ValidationError) as info:
        each_backend.recall_by_kind("semantics", user_id="u")
    assert info.value.field == "kind" and "semantic" in str(info.value)


def test_recall_linked_reaches_the_superseded_fact_once(each_backend: Memory) -> None:
    older = each_backend.add("Acme prefers NET30", user_id="u", kind="fact", subject="Acme",
                             predicate="prefers", object="NET30", created_at="2026-03-01T10:00:00+00:00")
    newer = each_backend.add("Acme prefers NET60", user_id="u", kind="fact", subject="Acme",
                             predicate="prefers", object="NET60", created_at="2026-03-05T10:00:00+00:00")
    assert each_backend.get(older.id, user_id="u").status == "superseded"
    linked = each_backend.recall_linked(newer.id, user_id="u")
    assert [m.record.id for m in linked.memories] == [older.id]
    assert linked.memories[0].record.status == "superseded"
    both = each_backend.recall_linked(older.id, user_id="u", direction="both")
    assert [m.record.id for m in both.memories] == [newer.id]  # once, though two links join them
    types = {link.type for link in each_backend.links(newer.id, user_id="u")}
    for link_type in types:
        assert _link_label(link_type) in both.memories[0].reason


def _link_label(link_type: str) -> str:
    return "".join(part.capitalize() for part in link_type.split("_"))


def test_feedback_records_access_at_the_callers_now(each_backend: Memory) -> None:
    each_backend.add("Acme prefers NET30 payment terms", user_id="u", kind="fact",
                     created_at="2026-03-01T10:00:00+00:00")
    result = each_backend.retrieve("How does Acme pay?", user_id="u", now=NOW)
    used = result.memories[0].id
    each_backend.feedback(result.metadata.retrieval_id or "", [used], user_id="u", now=NOW)
    assert each_backend.get(used, user_id="u").last_accessed_at == NOW


# -- 9. context-window fitting per specification ------------------------------------------------------------


def test_budget_rules_follow_each_specification() -> None:
    from engram.errors import ConfigError
    from engram.retrieve.select import estimate_tokens, fit_budget
    from engram.retrieve.types import MemoryEntry

    def entry(mid: str, tokens: int, kind: str) -> MemoryEntry:
        text = " ".join(["word"] * tokens)  # one token a word
        return MemoryEntry(id=mid, content=text, score=0.5, timestamp=NOW.isoformat(), session_id=None,
                           message_id=None, type=kind, role=None, collection="user:u", search_type="hybrid",
                           original_length=len(text), was_redacted=False)

    ranked = [entry("m1", 60, "message"), entry("big", 200, "summary"), entry("s2", 30, "summary"),
              entry("m2", 60, "message"), entry("m3", 60, "message")]

    def shown(rules: str) -> list[tuple[str, int]]:
        return [(e.id, estimate_tokens(e.content)) for e in fit_budget(ranked, 250, rules)]

    # The retrieval policy: rank order, the first that does not fit is cut, then stop.
    assert shown("policy") == [("m1", 60), ("big", 190)]
    # The pipeline: 100 tokens kept for the query, a summary that does not fit skipped, others stop uncut.
    assert shown("pipeline") == [("m1", 60), ("s2", 30), ("m2", 60)]
    # Engram's merge: summaries fitted first, then the first other that does not fit is cut; rank order kept.
    assert shown("merged") == [("m1", 20), ("big", 200), ("s2", 30)]
    with pytest.raises(ConfigError):
        RetrievalConfig(budget_rules="strict")


def test_retrieval_fits_its_budget_by_the_configured_rules(each_backend: Memory) -> None:
    each_backend.add("Acme summary. " * 60, user_id="u", kind="summary")
    each_backend.add("Acme pays NET30 and orders espresso every week.", user_id="u", kind="fact")
    config = RetrievalConfig(max_tokens=120, clip_sentences=None, min_score=0.0, cache_ttl=0)
    merged = each_backend.retrieve("Acme", user_id="u", now=NOW, config=config)
    pipeline = each_backend.retrieve("Acme", user_id="u", now=NOW, config=config.with_(budget_rules="pipeline"))
    assert [m.type for m in merged.memories] == ["summary"] and merged.memories[0].content.endswith("…")
    assert [m.type for m in pipeline.memories] == ["fact"]  # the summary does not fit in 20 tokens: skipped


# -- 8. the semantic source's similarity floor --------------------------------------------------------------


def test_the_semantic_source_drops_hits_below_min_similarity(each_backend: Memory) -> None:
    each_backend.add("Acme prefers NET30 payment terms", user_id="u", kind="fact")
    each_backend.add("zebra quartz violin", user_id="u", kind="fact")
    config = RetrievalConfig(min_score=0.0, cache_ttl=0, search_type="semantic")
    everything = each_backend.retrieve("Acme payment terms", user_id="u", now=NOW, config=config)
    assert len(everything.memories) == 2
    floored = each_backend.retrieve("Acme payment terms", user_id="u", now=NOW,
                                    config=config.with_(min_similarity=0.99))
    assert [m.content for m in floored.memories if "semantic" in " ".join(m.reasons)] == []
    assert len(floored.memories) < 2


def test_a_question_about_a_type_of_entity_finds_what_is_said_of_each(each_backend: Memory) -> None:
    # The pipeline's "Tell me about my customers": memories naming any customer, none naming it.
    memory = each_backend
    memory.add_entity("customer:acme", user_id="u", type="customer", name="Acme Corporation", aliases=["Acme"])
    memory.add_entity("customer:globex", user_id="u", type="customer", name="Globex")
    memory.add_entity("supplier:northwind", user_id="u", type="supplier", name="Northwind")
    said = ["Acme ordered 30 monitors for their new office.", "Globex pays NET15 since two invoices were late.",
            "Northwind delivers Dell monitors in 5 days.", "The office plants need watering on Fridays."]
    memory.add_many([{"content": text, "user_id": "u", "kind": "fact"} for text in said])
    result = memory.retrieve("Tell me about my customers", user_id="u")
    assert {m.content for m in result.memories} == set(said[:2])
    acme = next(m for m in result.memories if m.content == said[0])
    assert acme.signals["entity_type"] == 1.0 and "names customer:acme, a customer" in acme.reasons
    found = memory.retrieve("Which suppliers do we use?", user_id="u").memories
    assert found and found[0].content == said[2]
