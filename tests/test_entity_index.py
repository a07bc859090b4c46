"""The entity index a retrieval matches queries against: what is read, what is kept (issue 12, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.errors import StoreError
from engram.ext import Store
from engram.ingest.entity_index import (
    MAX_ALIAS_TOKENS,
    MAX_INDEX_NAMES,
    MAX_NAME_CHARS,
    EntityIndex,
    EntityIndexes,
    load_entities,
    name_key,
)
from engram.model import Entity
from engram.stores.sqlite.store import SQLiteStore


def _table(entities: int, aliases: int) -> list[Entity]:
    return [Entity(f"e:{i:05d}", "thing", f"Thing{i}", tuple(f"Alias{i}x{j}" for j in range(aliases)))
            for i in range(entities)]


def test_entity_names_reads_every_name_and_aliases_only_up_to_the_budget(store: Store) -> None:
    table = [*_table(30, 7), Entity("e:none", "thing", "Bare"), Entity("f:last", "place", "Lastplace", ("Lp",))]
    for entity in table:
        store.upsert_entity("u1", entity)
    store.upsert_entity("u2", Entity("e:00000", "thing", "Other", ("Not yours",)))
    bounded = getattr(store, "entity_names")  # noqa: B009 - an optional Store method both bundled stores have
    ordered = sorted(table, key=lambda e: e.id)
    every = [a for e in ordered for a in e.aliases]
    for budget in (0, 1, 7, 8, 50, 10_000):
        got = bounded("u1", max_aliases=budget)
        assert [(e.id, e.type, e.name) for e in got] == [(e.id, e.type, e.name) for e in ordered]
        flat = [a for e in got for a in e.aliases]
        assert flat == every[:budget]  # in id order, each entity's aliases in their order


def test_the_index_of_the_bounded_read_is_the_index_of_the_whole_table(store: Store) -> None:
    table = _table(400, 100)  # 40,000 aliases: more than the index holds
    for entity in table:
        store.upsert_entity("u1", entity)
    loaded = load_entities(store, "u1")
    assert len(loaded) + sum(len(e.aliases) for e in loaded) == MAX_INDEX_NAMES
    bounded, whole = EntityIndex(loaded), EntityIndex(store.entities("u1"))
    assert bounded.by_words == whole.by_words and bounded.types == whole.types
    assert bounded.exact(["alias0x99"]) == "e:00000" and bounded.exact(["alias399x0"]) is None  # past the budget


def test_an_unchanged_table_is_not_indexed_again_after_a_write(store: Store) -> None:
    store.upsert_entity("u1", Entity("c:acme", "customer", "Acme Corporation", ("Acme",)))
    indexes = EntityIndexes()
    first = indexes.get(store, "u1", "v1")
    assert indexes.get(store, "u1", "v1") is first and (indexes.loads, indexes.builds) == (1, 1)
    assert indexes.get(store, "u1", "v2") is first and (indexes.loads, indexes.builds) == (2, 1)
    store.upsert_entity("u1", Entity("c:globex", "customer", "Globex"))
    changed = indexes.get(store, "u1", "v3")
    assert changed is not first and changed.resolve("Globex") == "c:globex" and indexes.builds == 2
    assert indexes.get(store, "u2", "v3").resolve("Acme") is None  # each user their own


def test_the_index_cache_is_bounded_by_users(store: Store) -> None:
    indexes = EntityIndexes(max_users=3)
    for user in ("a", "b", "c", "d"):
        indexes.get(store, user, "v")
    assert indexes.cached("d") is not None and sum(indexes.cached(u) is not None for u in "abcd") <= 3


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=30))
def test_one_word_names_index_as_the_general_rule_would(name: str) -> None:
    """The index's one-word fast path keys a name exactly as name_key does."""
    key = name_key(name[:MAX_NAME_CHARS])
    indexed = 1 <= len(key) <= MAX_ALIAS_TOKENS and not (len(key) == 1 and len(key[0]) < 2)
    assert EntityIndex([Entity("e:1", "thing", name)]).by_words == ({key: "e:1"} if indexed else {})


def test_a_failed_read_is_not_kept(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "closed.db")
    store.upsert_entity("u1", Entity("c:acme", "customer", "Acme"))
    store.close()
    indexes = EntityIndexes()
    with pytest.raises(StoreError):
        indexes.get(store, "u1", "v1")
    assert indexes.cached("u1") is None
    reopened = SQLiteStore(tmp_path / "closed.db")
    try:
        assert indexes.get(reopened, "u1", "v1").resolve("Acme") == "c:acme"  # read again, not the failure
    finally:
        reopened.close()
