"""The domain database seam (live rows from the caller's own database).

Memory holds what was learned; the domain database holds current transactional state ("What did
Acme order?" is answered by the orders table). When stage 1 says a query ``requires_domain_db`` and
names entities, retrieval asks the configured :class:`DomainSource` and puts the rows it returns in
``Retrieval.domain_rows``, which the augmentation prompt renders as "Domain Database Query Results".
A failing source never fails retrieval: the error is recorded in the metadata with fallback "skip".
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from engram.ext import Metrics
from engram.model import EntityRelation, QueryPlan, TimeRange

__all__ = [
    "DOMAIN_ROW_LIMIT", "DOMAIN_UNAVAILABLE", "DomainSource", "RelatedEntities", "SQLiteDomainSource",
    "domain_relations", "domain_rows",
]

log = logging.getLogger("engram.retrieve")
DOMAIN_ROW_LIMIT = 50  # rows of a domain source kept for the prompt
#: The retrieval policy's fallback for a failing domain source: (message, fallback).
DOMAIN_UNAVAILABLE = ("Domain database query failed", "skip")


@runtime_checkable
class DomainSource(Protocol):
    """Answers a query from live data; ``query_type`` is the stage 1 plan (category, strategy, keywords)."""

    def query(
        self, query_type: QueryPlan, entities: Sequence[str], time_range: TimeRange | None
    ) -> Sequence[Mapping[str, Any]]: ...


@runtime_checkable
class RelatedEntities(Protocol):
    """A domain source that also knows which entities relate to which (a customer's orders): a
    query naming an entity then also reads the memories of those related to it (the ontology
    expansion), with no relation registered by hand. Optional: a source without it is asked rows only."""

    def related_entities(self, entities: Sequence[str], limit: int) -> Sequence[EntityRelation]:
        """Up to ``limit`` relations from each of ``entities`` (``from_id`` one of them)."""
        ...


def domain_rows(
    source: DomainSource, plan: QueryPlan, metrics: Metrics
) -> tuple[tuple[Mapping[str, Any], ...], Mapping[str, str] | None]:
    """The source's rows, or none and the error: a domain failure must not cost the memories."""
    try:
        rows = source.query(plan, plan.entities, plan.time_range)
        return tuple(dict(row) for row in list(rows)[:DOMAIN_ROW_LIMIT]), None
    except Exception as exc:  # any failure of user code: the "skip" fallback
        log.warning("[MEM:RETRIEVE] domain source failed, continuing without it: %r", exc)
        metrics.increment("retrieval.domain_errors")
        message, fallback = DOMAIN_UNAVAILABLE
        return (), {"code": "DOMAIN_UNAVAILABLE", "message": message, "fallback": fallback}


def domain_relations(
    source: RelatedEntities, metrics: Metrics, entities: Sequence[str], limit: int
) -> list[EntityRelation]:
    """The source's relations, or none: as with its rows, a failure must not cost the memories."""
    try:
        return [r for r in list(source.related_entities(entities, limit)) if isinstance(r, EntityRelation)]
    except Exception as exc:  # any failure of user code: expansion goes on with the store's relations
        log.warning("[MEM:RETRIEVE] domain source's related entities failed, continuing without them: %r", exc)
        metrics.increment("retrieval.domain_errors")
        return []


class SQLiteDomainSource:
    """An example source over a SQLite file with ``customers(id, name)`` and
    ``orders(id, customer_id, item, kg, ordered_at)`` (``ordered_at`` UTC text ``YYYY-MM-DDTHH:MM:SS``,
    so text order is time order).

    It answers with the orders of the ``customer:<id>`` entities of the query, inside the query's
    time range when it has one, newest first, at most ``limit`` rows.
    """

    def __init__(self, path: str | Path, *, limit: int = 50) -> None:
        self.path = Path(path)
        self.limit = limit

    def query(
        self, query_type: QueryPlan, entities: Sequence[str], time_range: TimeRange | None
    ) -> list[dict[str, Any]]:
        customers = _customers(entities)
        if not customers:
            return []
        sql = (
            "SELECT c.name, o.id, o.item, o.kg, o.ordered_at FROM orders o JOIN customers c ON c.id = o.customer_id "
            f"WHERE o.customer_id IN ({','.join('?' * len(customers))})"
        )
        params: list[Any] = list(customers)
        if time_range is not None:
            sql += " AND o.ordered_at BETWEEN ? AND ?"
            params += [_iso(time_range.start), _iso(time_range.end)]
        sql += " ORDER BY o.ordered_at DESC, o.id LIMIT ?"
        params.append(self.limit)
        return [
            {"customer": name, "order": order_id, "item": item, "kg": kg, "ordered_at": ordered_at}
            for name, order_id, item, kg, ordered_at in self._read(sql, params)
        ]

    def related_entities(self, entities: Sequence[str], limit: int) -> list[EntityRelation]:
        """Each ``customer:<id>``'s newest ``limit`` orders, as ``order:<id>`` (relation ``HAS_MANY``)."""
        customers = _customers(entities)
        if not customers or limit < 1:
            return []
        rows = self._read(
            "SELECT customer_id, id FROM (SELECT customer_id, id, ROW_NUMBER() OVER (PARTITION BY customer_id "
            "ORDER BY ordered_at DESC, id) AS n FROM orders "
            f"WHERE customer_id IN ({','.join('?' * len(customers))})) WHERE n <= ? ORDER BY customer_id, n",
            [*customers, limit],
        )
        return [EntityRelation(f"customer:{customer}", "HAS_MANY", f"order:{order}", "customer", "order")
                for customer, order in rows]

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        # A connection per call: retrieval may call from a worker thread, and the file is opened
        # read-only so the source can never write to the business's data.
        conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()


def _customers(entities: Sequence[str]) -> list[str]:
    """The ids of the ``customer:<id>`` entities among ``entities``."""
    return [e.split(":", 1)[1] for e in entities if e.startswith("customer:")]


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
