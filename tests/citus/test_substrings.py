"""PostgreSQL-on-Citus substring search: tests/postgres/test_substrings.py, unchanged (the index's
functions reach the workers, and a distributed store from before migration 10 gets it on open)."""

from __future__ import annotations

import pytest

from tests.postgres.test_substrings import *  # noqa: F403  (the suite's tests and fixtures)

pytestmark = pytest.mark.citus
