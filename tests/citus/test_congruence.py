"""SQLite and PostgreSQL-on-Citus give the same candidates: tests/postgres/test_congruence.py, unchanged."""

from __future__ import annotations

import pytest

from tests.postgres.test_congruence import *  # noqa: F403  (the suite's tests and its `pair` fixture)

pytestmark = pytest.mark.citus
