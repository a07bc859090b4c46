"""The shared SQL's spelling per backend: what each dialect turns a statement and an id list into."""

from __future__ import annotations

from datetime import UTC, datetime

from engram.model import Filters
from engram.stores.postgres.dialect import POSTGRES
from engram.stores.sql.rows import filter_sql
from engram.stores.sqlite.dialect import SQLITE

SHARED = "SELECT id FROM t WHERE a = ? AND b LIKE '10%' AND c = ?"


def test_postgres_spells_parameters_for_psycopg_and_keeps_literal_percent_signs() -> None:
    assert POSTGRES.sql(SHARED) == "SELECT id FROM t WHERE a = %s AND b LIKE '10%%' AND c = %s"
    assert POSTGRES.sql(SHARED) is POSTGRES.sql(SHARED)  # translated once
    assert SQLITE.sql(SHARED) == SHARED


def test_an_id_list_is_one_array_on_postgres_and_one_mark_per_id_on_sqlite() -> None:
    assert POSTGRES.in_("id", ["a", "b", "c"]) == ("id = ANY(?::text[])", [["a", "b", "c"]])
    assert SQLITE.in_("id", ["a", "b", "c"]) == ("id IN (?,?,?)", ["a", "b", "c"])


def test_filters_bind_times_as_each_backend_stores_them() -> None:
    at = datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    filters = Filters(created_after=at, kinds=("fact",))
    sqlite_where, sqlite_params = filter_sql(SQLITE, filters)
    postgres_where, postgres_params = filter_sql(POSTGRES, filters)
    assert sqlite_params[-1] == 1_704_164_645_000_006 and SQLITE.read_time(sqlite_params[-1]) == at
    assert postgres_params[-1] == at
    assert sqlite_where.count("?") == len(sqlite_params) and postgres_where.count("?") == len(postgres_params)
    assert filter_sql(SQLITE, Filters(kinds=())) == ("0", [])
    assert filter_sql(POSTGRES, Filters(kinds=())) == ("FALSE", [])
