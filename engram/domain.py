"""The domain database seam (live rows from the caller's own database).

Memory holds what was learned; the domain database holds current transactional state ("What did
Acme order?" is answered by the orders table). When stage 1 says a query ``requires_domain_db`` and
names entities, retrieval asks the configured :class:`DomainSource` and puts the rows it returns in
``Retrieval.domain_rows``, which the augmentation prompt renders as "Domain Database Query Results".
A failing source never fails retrieval: the error is recorded in the metadata with fallback "skip".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from engram.model import QueryPlan, TimeRange

__all__ = ["DomainSource", "SQLiteDomainSource"]


@runtime_checkable
class DomainSource(Protocol):
    """Answers a query from live data; ``query_type`` is the stage 1 plan (category, strategy, keywords)."""

    def query(
        self, query_type: QueryPlan, entities: Sequence[str], time_range: TimeRange | None
    ) -> Sequence[Mapping[str, Any]]: ...


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
        customers = [e.split(":", 1)[1] for e in entities if e.startswith("customer:")]
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
        # A connection per query: retrieval may call from a worker thread, and the file is opened
        # read-only so the source can never write to the business's data.
        conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute(sql, params).fetchall()
        finally:
            conn.close()
        return [
            {"customer": name, "order": order_id, "item": item, "kg": kg, "ordered_at": ordered_at}
            for name, order_id, item, kg, ordered_at in rows
        ]


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
