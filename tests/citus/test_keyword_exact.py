"""PostgreSQL-on-Citus keyword search is the exhaustive BM25 of each user's texts, through this
store's and another store's writes: tests/postgres/test_keyword_exact.py, unchanged (the terms
version is bumped by triggers on the shards)."""

from __future__ import annotations

import pytest

from tests.postgres.test_keyword_exact import *  # noqa: F403  (the suite's tests and fixtures)

pytestmark = pytest.mark.citus
