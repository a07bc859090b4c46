"""The summary source: a time-scoped query reads the summaries written in its range (the summaries
of that period's sessions, as the pipeline specification scopes them to the session); any other
query the most recent."""

from __future__ import annotations

from datetime import UTC, datetime

from engram import Memory
from engram.config import RetrievalConfig
from engram.model import Filters
from engram.retrieve.candidates import gather
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _summaries(memory: Memory) -> dict[str, str]:
    made = memory.add_many([
        {"user_id": "u", "kind": "summary", "content": "Week of 16 November: the Acme renewal was agreed.",
         "created_at": "2026-11-20T17:00:00+00:00"},
        {"user_id": "u", "kind": "summary", "content": "Today: planning the December shipping schedule.",
         "created_at": "2026-11-28T09:00:00+00:00"},
    ])
    return {"last_week": made[0].id, "today": made[1].id}


def _summary_source(memory: Memory, query: str) -> set[str]:
    plan = understand(query, now=NOW)
    found = gather(memory.store, user_id="u", plan=plan, query_vec=None, config=RetrievalConfig(),
                   filters=Filters())
    return {memory_id for memory_id, sources in found.sources.items() if "summary" in sources}


def test_a_time_scoped_query_reads_the_summaries_of_its_range(each_backend: Memory) -> None:
    ids = _summaries(each_backend)
    assert _summary_source(each_backend, "What did we settle last week?") == {ids["last_week"]}
    assert _summary_source(each_backend, "What did we settle?") == {ids["last_week"], ids["today"]}
    assert _summary_source(each_backend, "What did we settle in March?") == set()
