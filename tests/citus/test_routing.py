"""Every per-user statement the store sends is routed to one shard on Citus.

The statements are recorded as psycopg sends them (``Cursor.execute`` and ``executemany`` wrapped,
the store untouched) while a Memory adds, retrieves, logs and takes feedback, and while every
per-user store call runs. Each recorded read or write is then EXPLAINed as SQL text (parameters
inlined by psycopg's client-side binding: Citus cannot show the remote plan of a statement with
a vector parameter), and its plan must be a Citus router plan: ``Task Count: 1``. One form is
let through: an ``INSERT ... SELECT`` whose SELECT reads no table (``unnest`` of a parameter, in
``record_feedback``), which Citus evaluates on the coordinator ("pull to coordinator") and whose
rows, all of one user, then go to that user's shard.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.model import Entity, EntityRelation, Filters, Link, LoggedItem, LoggedRetrieval, RelationType
from engram.stores.postgres.distributed import DISTRIBUTED_TABLES
from engram.stores.postgres.store import PostgresStore

pytestmark = pytest.mark.citus

T0 = datetime(2024, 3, 1, tzinfo=UTC)
_DML = re.compile(r"^\s*(SELECT|WITH|INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_TABLE = re.compile(r"\b(" + "|".join(DISTRIBUTED_TABLES) + r")\b")

Recorded = list[tuple[str, Any]]


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    """(SQL, parameters) of every statement executed from here on, in any connection."""
    seen: Recorded = []
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def text(cur: psycopg.Cursor[Any], query: Any) -> str:
        return query if isinstance(query, str) else (
            query.decode() if isinstance(query, bytes) else query.as_string(cur.connection)
        )

    def recording_execute(self: psycopg.Cursor[Any], query: Any, params: Any = None, **kw: Any) -> Any:
        seen.append((text(self, query), params))
        return execute(self, query, params, **kw)

    def recording_executemany(self: psycopg.Cursor[Any], query: Any, params_seq: Any, **kw: Any) -> Any:
        rows = list(params_seq)
        if rows:
            seen.append((text(self, query), rows[0]))
        return executemany(self, query, rows, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", recording_execute)
    monkeypatch.setattr(psycopg.Cursor, "executemany", recording_executemany)
    yield seen


def _task_counts(url: str, statements: Recorded) -> dict[str, list[str]]:
    """Per distinct per-user statement (parameters inlined): the Task Count (and INSERT/SELECT) lines of
    its plan."""
    plans: dict[str, list[str]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        inline = psycopg.ClientCursor(conn)
        for query, params in statements:
            if not _DML.match(query) or not _TABLE.search(query) or query in plans:
                continue
            plan = conn.execute("EXPLAIN " + inline.mogrify(query, params)).fetchall()
            plans[query] = [line.strip() for (line,) in plan if "Task Count" in line or "INSERT/SELECT" in line]
    return plans


def _exercise_memory(memory: Memory) -> None:
    memory.add_entity("customer:acme", user_id="u", name="Acme Corporation", aliases=["Acme"])
    memory.add_many([
        {"user_id": "u", "content": text, "session_id": "s1", "created_at": (T0 + timedelta(days=i)).isoformat()}
        for i, text in enumerate([
            "Acme ordered 30 monitors for the new office", "Initech cancelled their printer order",
            "Acme's payment terms are NET45 now", "Bob asked about the monitors order again",
            "We shipped the docks to Globex", "Priya thinks the Ledgerly trial went well",
        ])
    ])
    memory.add("someone else's memory about Acme", user_id="v")
    config = RetrievalConfig(top_k=4, min_score=0.0, cache_ttl=0)
    now = T0 + timedelta(days=8)
    for query in ("What did Acme order?", "what happened last week", "monitors", "payment terms"):
        result = memory.retrieve(query, user_id="u", now=now, config=config)
    assert result.memories
    assert result.metadata.retrieval_id is not None
    memory.feedback(result.metadata.retrieval_id, [result.memories[0].id], user_id="u")


def _exercise_store(store: PostgresStore) -> None:
    user, filters = "u", Filters()
    ids = [r.id for r in store.list(user, filters, limit=10)]
    a, b = ids[0], ids[1]
    store.add_link(user, Link(a, b, "related", 0.5))
    store.upsert_entity(user, Entity("person:bob", "person", "Bob"))
    store.define_relation(user, RelationType("person", "buys_from", "customer"))
    store.relate_entities(user, EntityRelation("person:bob", "buys_from", "customer:acme", "person", "customer"))
    store.get(user, a)
    store.fetch(user, ids)
    store.vectors(user, ids)
    store.count(user)
    store.user_exists(user)
    store.change_token(user)
    store.links(user, a)
    store.entities(user)
    store.count_entities(user)
    store.entity_names(user, max_aliases=10)
    store.ontology(user)
    store.related_entities(user, ["person:bob"], 3)
    store.by_time_range(user, T0, T0 + timedelta(days=3), 5, filters)
    store.by_entities(user, ["customer:acme"], 5, filters)
    store.by_links(user, [a], 5, None)
    store.by_links(user, [a], 5, ["related"])
    store.session_neighbors(user, ids)
    store.most_recent(user, 5, Filters(kinds=("message",), tags_any=("x",), session_id="s1"))
    store.most_recently_accessed(user, 5, filters)
    store.most_important(user, 5, filters)
    store.most_accessed(user, 5, filters)
    query = store.vectors(user, [a])[a]
    store.vector_search(user, query, 5, filters)  # exact path
    store.exact_limit = 0
    store.vector_search(user, query, 5, filters)  # HNSW path
    store.keyword_search(user, "acme monitors", 5, filters)
    store.cached_vectors(user, "fake", [r.content_hash for r in store.fetch(user, ids)])
    store.record_access(user, [a], T0)
    store.save_weights(user, {"analytical": {"importance": 1.0}})
    store.load_weights(user)
    entry = LoggedRetrieval(id="r-x", query="q", category="c", strategy="s", created_at=T0,
                            items=(LoggedItem(a, "message", {"semantic_similarity": 0.5}),), settings={})
    store.log_retrieval(user, entry)
    store.get_retrieval(user, "r-x")
    store.record_feedback(user, "r-x", [a], T0)
    store.feedback_log(user, 10)
    record = store.get(user, b)
    assert record is not None
    store.replace(record, None)
    store.delete(user, a)
    store.forget_user("v")


def test_every_per_user_statement_is_routed_to_one_shard(postgres_url: str, recorded: Recorded) -> None:
    store = PostgresStore(postgres_url, min_size=1, max_size=2)
    with Memory(store=store, embedder=FakeEmbedder()) as memory:  # closes the store
        store.truncate()
        recorded.clear()
        _exercise_memory(memory)
        _exercise_store(store)
        # A retention small enough that the next log write prunes (its DELETE ... USING CTE).
        pruning = PostgresStore(postgres_url, min_size=1, max_size=1, log_retention=1)
        try:
            pruning.log_retrieval("u", LoggedRetrieval(id="r-y", query="q", category="c", strategy="s",
                                                       created_at=T0 + timedelta(days=1), items=(), settings={}))
            assert pruning.get_retrieval("u", "r-x") is None
        finally:
            pruning.close()
    plans = _task_counts(postgres_url, recorded)
    assert len(plans) >= 40, f"only {len(plans)} distinct statements recorded"
    routed = (["Task Count: 1"], ["INSERT/SELECT method: pull to coordinator"])
    scattered = {query: lines for query, lines in plans.items() if lines not in routed}
    assert not scattered, "\n\n".join(f"{lines}\n{query}" for query, lines in scattered.items())


def test_a_cross_user_query_is_not_routed_to_one_shard(postgres_url: str) -> None:
    """The check above can fail: a query without a user reads every shard."""
    PostgresStore(postgres_url, min_size=1, max_size=1).close()  # the distributed tables, if run alone
    plans = _task_counts(postgres_url, [("SELECT count(*) FROM engram_memories", None)])
    assert plans["SELECT count(*) FROM engram_memories"] == ["Task Count: 8"]
