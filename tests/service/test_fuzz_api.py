"""Property-based fuzzing of every operation in /openapi.json: no input may produce a 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from engram.ext import Embedder
from engram.service import ServiceSettings
from tests.service import Harness, harness

schemathesis = pytest.importorskip("schemathesis")

EXAMPLES = 100


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[tuple[Harness, str]]:
    h = harness(tmp_path_factory.mktemp("fuzz"), embedder, ServiceSettings(rate=0))
    h.memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    # An admin key for every user, so generated requests get past auth into the handlers.
    yield h, h.key("*", admin=True)
    h.close()


def test_no_server_errors(fuzzed: tuple[Harness, str]) -> None:
    h, token = fuzzed
    schema = schemathesis.openapi.from_asgi("/openapi.json", h.app)
    headers = {"Authorization": f"Bearer {token}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:

        # One bounded hypothesis run per operation keeps the whole fuzz under a minute or two.
        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                  phases=[Phase.explicit, Phase.generate])
        def check(case: Any) -> None:
            response = case.call(headers=headers)
            if response.status_code == 501:
                # A facade method not merged yet (recall, ingest...) is a declared gap, not a crash.
                assert response.json()["error"]["code"] == "NOT_IMPLEMENTED"
                return
            assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:500])
            if response.status_code >= 400:
                assert response.json()["error"]["code"], response.text

        check()
