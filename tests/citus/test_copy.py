"""`engram copy` SQLite -> Citus -> SQLite keeps everything: tests/postgres/test_copy.py, unchanged."""

from __future__ import annotations

import pytest

from tests.postgres.test_copy import *  # noqa: F403  (the suite's tests)

pytestmark = pytest.mark.citus
