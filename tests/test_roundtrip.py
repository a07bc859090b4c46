"""Any text, tags and metadata survive add and get unchanged (Hypothesis)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram import Memory
from engram.embedders.fake import FakeEmbedder

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=300)
content = text.filter(lambda s: bool(s.strip()))
tag = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=30)
tags = st.lists(tag.filter(lambda s: bool(s.strip())), max_size=6, unique=True)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False,
                      allow_infinity=False), st.text(max_size=40))
metadata = st.dictionaries(st.text(max_size=20), st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)), max_leaves=8), max_size=5)


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    with Memory(tmp_path_factory.mktemp("rt") / "rt.db", embedder=FakeEmbedder()) as m:
        yield m


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=content, tags=tags, metadata=metadata)
def test_add_get_round_trip(memory: Memory, content: str, tags: list[str], metadata: dict[str, object]) -> None:
    record = memory.add(content, user_id="u", tags=tags, metadata=metadata)
    got = memory.get(record.id, user_id="u")
    assert got == record
    assert got.content == content.strip()
    assert list(got.tags) == tags
    assert dict(got.metadata) == metadata


def test_reopened_store_returns_the_same(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Memory(db, embedder=FakeEmbedder()) as m:
        record = m.add("  café ☕ 東京  ", user_id="ü", tags=["ß", "x y"], metadata={"k": [1, {"a": None}]})
    with Memory(db, embedder=FakeEmbedder()) as m:
        assert m.get(record.id, user_id="ü") == record
