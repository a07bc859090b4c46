"""A user never sees another's memories, whatever the ids, tags, metadata or query contain."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram import Filters, Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import ValidationError

HOSTILE = ["%", "_", "'", '"', "' OR '1'='1", "%' --", "u1%", "u_", "\\", "*", "NEAR(", "ｕ1", "u1\u200b"]
ids = st.one_of(st.sampled_from(HOSTILE), st.text(min_size=1, max_size=40))
queries = st.one_of(st.sampled_from([*HOSTILE, "secret", "zebra secret"]), st.text(max_size=200))


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    db = tmp_path_factory.mktemp("iso") / "iso.db"
    with Memory(db, embedder=FakeEmbedder()) as m:
        m.add_many([
            {"user_id": "u1", "content": "zebra secret of u1", "tags": ["%", "_"], "metadata": {"k": "%"}},
            {"user_id": "u1%", "content": "zebra secret of u1 percent"},
            {"user_id": "u_", "content": "zebra secret of u underscore"},
        ])
        yield m


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=ids, query=queries)
def test_retrieve_never_crosses_users(memory: Memory, user: str, query: str) -> None:
    try:
        result = memory.retrieve(query, user_id=user, config=RetrievalConfig(min_score=0.0))
    except ValidationError as exc:
        assert exc.field == "user_id"
        return
    for entry in result.memories:
        assert entry.record is not None and entry.record.user_id == user


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=ids, tag=ids)
def test_list_and_search_never_cross_users(memory: Memory, user: str, tag: str) -> None:
    try:
        listed = memory.list(user_id=user, filters={"tags_any": (tag,)})
        found = memory.store.keyword_search(user, "zebra secret", 10, Filters())
    except ValidationError:
        return
    assert all(r.user_id == user for r in listed)
    for memory_id, _ in found:
        record = memory.store.get(user, memory_id)
        assert record is not None and record.user_id == user


def test_like_wildcards_are_literal(tmp_path: Path) -> None:
    with Memory(tmp_path / "w.db", embedder=FakeEmbedder()) as m:
        m.add("alpha", user_id="a%")
        m.add("alpha", user_id="ab")
        assert len(m.retrieve("alpha", user_id="a%", config=RetrievalConfig(min_score=0)).memories) == 1
        assert len(m.list(user_id="a_")) == 0
