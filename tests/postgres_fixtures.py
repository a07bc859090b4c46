"""PostgreSQL fixtures. Filled in by the PostgreSQL backend; until then the backend is skipped."""

from __future__ import annotations

import pytest


@pytest.fixture
def postgres_store() -> None:
    pytest.skip("PostgreSQL backend not built yet")
