"""The Citus cluster for tests/citus: one per session (a coordinator and two workers, see
engram.testing.citus), and the store fixtures of the other suites pointed at it.

``postgres_url`` is overridden here, so ``postgres_store`` (tests/postgres_fixtures.py) and every
suite imported into this folder run against the coordinator, whose tables PostgresStore
distributes by user_id. Without the vendored Citus source the tests skip; any other failure to
build or start skips locally and fails with ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.postgres_fixtures import _in_ci


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[Any]:
    from engram.testing.citus import find_source, start_citus

    if find_source() is None:
        pytest.skip("no vendored Citus source: ../shared/vendor/citus-*.tar.gz (or ENGRAM_CITUS_SOURCE)")
    try:
        cluster = start_citus()
    except Exception as exc:
        message = f"cannot build or start the Citus cluster (scripts/citus.sh deps installs what it needs): {exc}"
        if _in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_url(citus_cluster: Any) -> str:
    return str(citus_cluster.url)


@pytest.fixture
def store(postgres_store: Any) -> Any:
    """The contract suite's backend: here, only the Citus coordinator."""
    return postgres_store
