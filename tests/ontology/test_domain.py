"""The domain database seam: asked when a query needs live data, never fatal, rendered in the prompt."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engram import Memory, RetrievalConfig
from engram.domain import DomainSource, RelatedEntities, SQLiteDomainSource
from engram.ext import Embedder
from engram.metrics import InMemoryMetrics
from engram.model import EntityRelation, QueryPlan, TimeRange

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
USER = "maya"
CONFIG = RetrievalConfig(top_k=5, cache_ttl=0)


def make_domain_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE orders (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, item TEXT NOT NULL,
                             kg REAL NOT NULL, ordered_at TEXT NOT NULL);
        INSERT INTO customers VALUES ('acme', 'Acme Corporation'), ('bluebird', 'Bluebird Bakery');
        INSERT INTO orders VALUES
            ('A-1042', 'acme', 'Huila single origin', 40, '2026-02-24T10:00:00'),
            ('A-1043', 'acme', 'house espresso', 20, '2026-02-24T10:05:00'),
            ('A-0990', 'acme', 'house espresso', 15, '2026-01-12T09:00:00'),
            ('B-2001', 'bluebird', 'house espresso', 12, '2026-02-23T08:00:00');
        """
    )
    conn.commit()
    conn.close()
    return path


class Recording:
    def __init__(self, rows: Sequence[Mapping[str, Any]] = (), error: Exception | None = None) -> None:
        self.calls: list[tuple[QueryPlan, tuple[str, ...], TimeRange | None]] = []
        self.rows, self.error = rows, error

    def query(
        self, query_type: QueryPlan, entities: Sequence[str], time_range: TimeRange | None
    ) -> Sequence[Mapping[str, Any]]:
        self.calls.append((query_type, tuple(entities), time_range))
        if self.error is not None:
            raise self.error
        return self.rows


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", embedder=embedder) as m:
        m.add_entity("customer:acme", user_id=USER, name="Acme Corporation", aliases=["Acme"])
        m.add("Acme ordered 40 kg of the Huila single origin for their office relaunch.", user_id=USER,
              kind="episode", entities=["customer:acme"], created_at="2026-02-24T11:00:00+00:00")
        m.add("Acme usually pays late.", user_id=USER, kind="fact", entities=["customer:acme"])
        yield m


def test_sqlite_source_answers_orders_of_the_customer_in_range(tmp_path: Path) -> None:
    source = SQLiteDomainSource(make_domain_db(tmp_path / "domain.db"))
    assert isinstance(source, DomainSource)
    plan = QueryPlan("q", "factual", True, True, False, True, ("customer:acme",), None, {}, "exploratory")
    feb = TimeRange(datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 2, 28, 23, 59, 59, tzinfo=UTC), "last month")
    rows = source.query(plan, ["customer:acme", "mention:x"], feb)
    assert [r["order"] for r in rows] == ["A-1043", "A-1042"]
    assert rows[0] == {"customer": "Acme Corporation", "order": "A-1043", "item": "house espresso", "kg": 20.0,
                       "ordered_at": "2026-02-24T10:05:00"}
    assert len(source.query(plan, ["customer:acme"], None)) == 3
    assert source.query(plan, ["supplier:finca"], feb) == []


def test_retrieve_adds_domain_rows_and_prompt_section(memory: Memory, tmp_path: Path) -> None:
    memory.set_domain_source(SQLiteDomainSource(make_domain_db(tmp_path / "domain.db")))
    result = memory.retrieve("What did Acme order last month?", user_id=USER, now=NOW, config=CONFIG)
    assert [r["order"] for r in result.domain_rows] == ["A-1043", "A-1042"]
    assert result.metadata.error is None and result.memories
    prompt = result.to_prompt(style="augmentation")
    assert "# Domain Database Query Results" in prompt and "order: A-1042" in prompt


def test_source_asked_only_when_the_plan_needs_live_data(memory: Memory) -> None:
    source = Recording(rows=[{"order": "X"}])
    memory.set_domain_source(source)
    memory.retrieve("What does Acme usually order?", user_id=USER, now=NOW, config=CONFIG)  # a habit: memory
    memory.retrieve("What did we order last month?", user_id=USER, now=NOW, config=CONFIG)  # no entity
    assert source.calls == []
    result = memory.retrieve("What did Acme order last month?", user_id=USER, now=NOW, config=CONFIG)
    (plan, entities, time_range), = source.calls
    assert plan.requires_domain_db and entities == ("customer:acme",)
    assert time_range is not None and time_range.start.month == 2
    assert result.domain_rows == ({"order": "X"},)


def test_failing_source_is_skipped_and_recorded(memory: Memory) -> None:
    memory.set_domain_source(Recording(error=RuntimeError("connection refused")))
    result = memory.retrieve("What did Acme order last month?", user_id=USER, now=NOW, config=CONFIG)
    assert result.memories and result.domain_rows == ()
    assert result.metadata.error == {
        "code": "DOMAIN_UNAVAILABLE", "message": "Domain database query failed", "fallback": "skip",
    }
    assert isinstance(memory.metrics, InMemoryMetrics)
    assert memory.metrics.counter("retrieval.domain_errors") == 1


def test_memory_constructor_takes_a_source(tmp_path: Path, embedder: Embedder) -> None:
    source = Recording(rows=[{"order": "Y"}])
    with Memory(tmp_path / "c.db", embedder=embedder, domain_source=source) as m:
        m.add_entity("customer:acme", user_id=USER, name="Acme")
        m.add("Acme ordered coffee.", user_id=USER, entities=["customer:acme"])
        result = m.retrieve("What did Acme order?", user_id=USER, now=NOW, config=CONFIG)
    assert result.domain_rows == ({"order": "Y"},)


def test_a_domain_source_relates_a_customer_to_its_orders(tmp_path: Path, embedder: Embedder) -> None:
    # The pipeline's ontology expansion from the domain database: "What happened with Acme?" also
    # reads the memories of Acme's orders, with no relation registered by hand.
    source = SQLiteDomainSource(make_domain_db(tmp_path / "domain.db"))
    assert isinstance(source, RelatedEntities)
    relations = source.related_entities(["customer:acme", "mention:x"], 2)
    assert [(r.from_id, r.relation, r.to_id) for r in relations] == [
        ("customer:acme", "HAS_MANY", "order:A-1043"), ("customer:acme", "HAS_MANY", "order:A-1042")]
    assert source.related_entities(["supplier:finca"], 10) == [] and source.related_entities(["customer:acme"], 0) == []

    delayed = "The courier missed the Friday pickup, so the first 20 kg went over a day late."

    def found(domain: DomainSource | None) -> list[tuple[str, tuple[str, ...]]]:
        with Memory(tmp_path / f"m-{domain is None}.db", embedder=embedder, domain_source=domain) as m:
            m.add_entity("customer:acme", user_id=USER, name="Acme Corporation", aliases=["Acme"])
            m.add(delayed, user_id=USER, kind="episode", entities=["order:A-1042"], created_at=NOW)
            m.add("The roaster's afterburner was serviced.", user_id=USER, kind="episode", created_at=NOW)
            result = m.retrieve("What happened with Acme?", user_id=USER, config=CONFIG, now=NOW)
            return [(e.content, e.reasons) for e in result.memories]

    related = "related to customer:acme via HAS_MANY"
    assert not any(related in reasons for _, reasons in found(None))
    first, reasons = found(source)[0]
    assert first == delayed and related in reasons


def test_a_failing_related_entities_costs_only_its_relations(tmp_path: Path, embedder: Embedder) -> None:
    class Broken(Recording):
        def related_entities(self, entities: Sequence[str], limit: int) -> Sequence[EntityRelation]:
            raise sqlite3.OperationalError("database is locked")

    with Memory(tmp_path / "m.db", embedder=embedder, domain_source=Broken()) as m:
        m.add_entity("customer:acme", user_id=USER, name="Acme Corporation", aliases=["Acme"])
        m.add("Acme usually pays late.", user_id=USER, kind="fact", entities=["customer:acme"])
        result = m.retrieve("How does Acme pay?", user_id=USER, config=CONFIG, now=NOW)
        assert [e.content for e in result.memories] == ["Acme usually pays late."]
