"""Candidate primitives answered by plain SQL on either backend: time, links, sessions, the ordered lists.

Each returns (id, raw score) pairs, best first, ties broken by id; ranking happens in Python above.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

from engram.days import MAX_READ_SPAN
from engram.errors import ValidationError
from engram.ext import SUBSTRING_MIN
from engram.model import Filters, Hit
from engram.stores.sql.base import SQLBase, chunks
from engram.stores.sql.rows import filter_sql
from engram.text import ASIDE_ROLES

__all__ = ["CandidateMixin", "substring_terms"]


def substring_terms(terms: Sequence[str]) -> builtins.list[str]:
    """``terms`` once each, in order; a term under :data:`~engram.ext.SUBSTRING_MIN` characters is
    refused (ValidationError): a trigram index cannot answer it, and a scan would not be bounded."""
    wanted = list(dict.fromkeys(terms))
    short = [t for t in wanted if len(t) < SUBSTRING_MIN]
    if short:
        raise ValidationError("terms", f"substrings of at least {SUBSTRING_MIN} characters, got {short!r}")
    return wanted


class CandidateMixin(SQLBase):
    """Store methods; each is one read."""

    substring_indexed = False

    def entity_shares(self, user_id: str, entity_ids: Sequence[str], newest: int) -> tuple[dict[str, int], int]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or newest <= 0:
            return {e: 0 for e in ids}, 0
        rows = self._entity_share_rows(user_id, ids, newest)
        named = {str(r[0]): int(r[1]) for r in rows if r[0] is not None}
        return {e: named.get(e, 0) for e in ids}, next((int(r[1]) for r in rows if r[0] is None), 0)

    def _entity_share_rows(self, user_id: str, ids: Sequence[str], newest: int) -> builtins.list[Any]:
        """``(None, memories in the window)`` and ``(entity, memories of the window naming it)`` rows.
        The window is every memory said after the ``newest + 1``-th newest was (all of them when there
        are no more): at most ``newest`` memories, the same ones on every backend, since it never
        splits the memories said at one moment."""
        raise NotImplementedError

    def _ordered(self, user_id: str, filters: Filters, extra: str, extra_params: Sequence[Any],
                 score: str, order: str, n: int, *, by_user: bool = True, index: str = "") -> builtins.list[Hit]:
        """``by_user=False`` keeps the planner off the user's index: ``extra`` selects few rows;
        ``index`` names the one to read through."""
        d = self.dialect
        where, params = filter_sql(d, filters)
        user = "m.user_id" if by_user else d.unindexed("m.user_id")
        table = d.through(f"{d.memories} m", d.memories + index) if index else f"{d.memories} m"
        rows = self._query(
            f"SELECT m.id, {score} FROM {table} WHERE {user} = ? AND {where} {extra} "
            f"ORDER BY {order}, m.id LIMIT ?",
            (user_id, *params, *extra_params, n),
        )
        return [(r[0], float(r[1] or 0)) for r in rows]

    def by_time_range(
        self, user_id: str, start: datetime, end: datetime, n: int, filters: Filters
    ) -> builtins.list[Hit]:
        d = self.dialect
        return self._ordered(
            user_id, filters, "AND m.created_at BETWEEN ? AND ?", (d.time(start), d.time(end)),
            d.epoch("m.created_at"), "m.created_at DESC", n,
        )

    def by_named_days(self, user_id: str, first: date, last: date, n: int, filters: Filters, *,
                      told: bool = False) -> builtins.list[Hit]:
        """Memories that name a day from ``first`` to ``last`` (:func:`engram.days.indexed_days`),
        or with ``told`` also tell of one in relative words ("yesterday"), newest first; score the
        POSIX time. A span longer than :data:`~engram.days.MAX_READ_SPAN` reads nothing."""
        if n <= 0 or last < first or last - first > MAX_READ_SPAN:
            return []
        d, lo, hi = self.dialect, first.toordinal(), last.toordinal()
        said = (None if filters.created_after is None else d.time(filters.created_after),
                None if filters.created_before is None else d.time(filters.created_before))
        clause, params = d.names_days("m", user_id, [(lo, hi), (-hi, -lo)] if told else [(lo, hi)], said)
        return self._ordered(user_id, filters, f"AND {clause}", params, d.epoch("m.created_at"),
                             "m.created_at DESC", n, by_user=False)

    def by_standing(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        """The newest ``n`` memories whose standing sentences have vectors of their own (``facets``:
        an instruction said in passing inside a longer message), newest first; score the POSIX time."""
        return self._ordered(user_id, filters, "AND m.facets IS NOT NULL", (), self.dialect.epoch("m.created_at"),
                             "m.created_at DESC", n, index="_user_standing")

    def most_recent(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(user_id, filters, "", (), self.dialect.epoch("m.created_at"), "m.created_at DESC", n)

    def substring_search(
        self, user_id: str, terms: Sequence[str], n: int, filters: Filters
    ) -> builtins.list[Hit]:
        """Memories whose searched text (content, subject, predicate, object, trigger, action, tags,
        metadata string values) contains any of ``terms`` ignoring case, newest first; score the POSIX time.

        A term must have at least :data:`~engram.ext.SUBSTRING_MIN` characters: a trigram index cannot
        answer a shorter one, so it is refused (ValidationError) rather than answered by a scan.
        """
        wanted = substring_terms(terms)
        if not wanted or n <= 0:
            return []
        clause, params = self.dialect.contains_any("m", wanted)
        return self._ordered(
            user_id, filters, f"AND {clause}", params, self.dialect.epoch("m.created_at"), "m.created_at DESC", n,
            by_user=not self._few_substring_matches(params, n),
        )

    def _few_substring_matches(self, params: Sequence[Any], n: int) -> bool:
        """Whether the memories matching ``contains_any``'s parameters are few enough, over every
        user, to read each (then sort them) rather than walk the user's memories newest first
        until ``n`` match. Without an index there is nothing to count: walk."""
        return False

    def most_recently_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        d = self.dialect
        return self._ordered(
            user_id, filters, "", (), f"COALESCE({d.epoch('m.last_accessed_at')}, 0)",
            f"COALESCE({d.sortable('m.last_accessed_at')}, 0) DESC, m.created_at DESC", n,
        )

    def most_important(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(user_id, filters, "", (), "m.importance", "m.importance DESC, m.created_at DESC", n)

    def most_accessed(self, user_id: str, n: int, filters: Filters) -> builtins.list[Hit]:
        return self._ordered(
            user_id, filters, "", (), "m.access_count", "m.access_count DESC, m.created_at DESC", n
        )

    def session_neighbors(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The messages said by someone (a role given) just before and after each such message: in
        its session, or, for one stored without a session, among the user's session-less messages
        of the same agent (its stream). Archived and superseded messages are not turns, nor are a
        system notice and a tool's output (by role). Every id given is answered; a memory that is
        no such message gets no entry."""
        d = self.dialect
        out: dict[str, tuple[str, ...]] = {}
        asides = ", ".join(f"'{role}'" for role in sorted(ASIDE_ROLES))  # fixed words, no parameters
        said = f"m.kind = 'message' AND m.role IS NOT NULL AND LOWER(m.role) NOT IN ({asides}) AND m.status = 'active'"
        stream = f"COALESCE(m.agent_id, '') = COALESCE(c.agent_id, '') AND m.session_id IS NULL AND {said}"
        session = f"m.session_id = c.session_id AND {said}"

        def step(same: str, before: bool) -> str:
            # The nearest turn at the same instant (a batch is often stamped with one time) by id, else
            # the nearest earlier or later: each an index seek, where one row-value bound had SQLite
            # read every turn sharing the instant.
            side, order = ("<", " DESC") if before else (">", "")
            tie = (f"(SELECT m.id FROM {d.memories} m WHERE m.user_id = ? AND {same} AND m.created_at = c.created_at "
                   f"AND m.id {side} c.id ORDER BY m.id{order} LIMIT 1)")
            near = (f"(SELECT m.id FROM {d.memories} m WHERE m.user_id = ? AND {same} AND m.created_at {side} "
                    f"c.created_at ORDER BY m.created_at{order}, m.id{order} LIMIT 1)")
            return f"COALESCE({tie}, {near})"

        # CASE reads only the subqueries of the memory's own kind of conversation. The subqueries name
        # the user rather than c.user_id so that Citus routes them to one shard; on SQLite the
        # unindexed c.user_id keeps the candidates on the id index instead of walking the sessions.
        columns = ", ".join(f"CASE WHEN c.session_id IS NULL THEN {step(stream, before)} "
                            f"ELSE {step(session, before)} END" for before in (True, False))
        for chunk in chunks(list(dict.fromkeys(memory_ids)), d.chunk):
            named, params = d.in_("c.id", chunk)
            rows = self._query(
                f"SELECT c.id, {columns} FROM {d.memories} c WHERE {d.unindexed('c.user_id')} = ? "
                f"AND c.kind = 'message' AND c.role IS NOT NULL AND {named}",
                (*[user_id] * 9, *params),
            )
            out.update((r[0], tuple(x for x in (r[1], r[2]) if x is not None)) for r in rows)
        return out

    def by_links(self, user_id: str, memory_ids: Sequence[str], n: int,
                 link_types: Iterable[str] | None) -> builtins.list[Hit]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return []
        d = self.dialect
        types = list(link_types) if link_types is not None else None
        type_sql, type_params = d.in_("l.type", types) if types else ("", [])
        type_sql = f"AND {type_sql}" if types else ""
        sides = []
        for near, far in (("from_id", "to_id"), ("to_id", "from_id")):
            named, params = d.in_(f"l.{near}", ids)
            sides.append((f" SELECT l.{far} AS other, l.strength FROM {d.links} l"
                          f" WHERE l.user_id = ? AND {named} {type_sql}", [user_id, *params, *type_params]))
        rows = self._query(
            f"SELECT x.other, MAX(x.strength) AS s FROM ({sides[0][0]} UNION ALL {sides[1][0]}"
            f") x JOIN {d.memories} m ON m.user_id = ? AND m.id = x.other "
            "GROUP BY x.other ORDER BY s DESC, x.other LIMIT ?",
            (*sides[0][1], *sides[1][1], user_id, n),
        )
        return [(r[0], float(r[1])) for r in rows if r[0] not in ids]
