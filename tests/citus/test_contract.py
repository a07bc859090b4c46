"""The store contract suites (tests/contract), unchanged, against PostgresStore on Citus."""

from __future__ import annotations

import pytest

from tests.contract.test_history_contract import *  # noqa: F403
from tests.contract.test_named_days_contract import *  # noqa: F403
from tests.contract.test_store_contract import *  # noqa: F403  (the suite's tests, collected here too)

pytestmark = pytest.mark.citus
