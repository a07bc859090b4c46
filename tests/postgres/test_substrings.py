"""PostgreSQL's substring index (migration 10, engram.stores.postgres.substrings): keyword search is
exact on both backends for keywords of three characters or more, whatever a memory's age; letters
fold alike; a store from before the index gets it on open; many matches walked and few read through
the index give the same answer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest

from engram.ext import Store
from engram.ingest.normalize import content_hash
from engram.keyword_search import SCAN_LIMIT, search_keywords
from engram.memory import Memory
from engram.model import Filters, MemoryRecord, new_id
from engram.stores.postgres import candidates, substrings
from engram.stores.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _record(content: str, user: str = "u1", minutes: int = 0, **fields: Any) -> MemoryRecord:
    return MemoryRecord(id=new_id(), user_id=user, kind="message", content=content, content_hash=content_hash(content),
                        created_at=T0 + timedelta(minutes=minutes), recorded_at=T0, **fields)


def _put(store: Store, *records: MemoryRecord) -> None:
    store.put_many(list(records), np.eye(len(records), 4, dtype=np.float32))


def test_an_old_substring_match_past_the_newest_scan_limit_is_found(each_backend: Memory) -> None:
    """The old PostgreSQL path (whole tokens, plus substrings in the newest SCAN_LIMIT) missed it."""
    old = each_backend.add("the zebrafish escaped", user_id="u1", created_at=T0, metadata={"tank": "Reef"})
    each_backend.add_many(
        {"content": f"note {i}", "user_id": "u1", "created_at": T0 + timedelta(minutes=1 + i)}
        for i in range(SCAN_LIMIT + 100)
    )
    assert each_backend.store.substring_indexed
    for keyword in ("ebrafi", "ZEBRA", "ree"):  # a substring of a word, in the content or a metadata value
        assert [r.record.id for r in search_keywords(each_backend, [keyword], user_id="u1")] == [old.id]
    assert len(search_keywords(each_backend, ["not"], user_id="u1", limit=5)) == 5


def test_keywords_fold_alike_on_both_backends(each_backend: Memory) -> None:
    """As the keyword_search docstring says: "école" finds "ÉCOLE"; a keyword casefolds "ß" to
    "ss" where the indexes keep it, so "Straße" is found by neither spelling, on either backend."""
    ecole = each_backend.add("ÉCOLE du Nord", user_id="u1")
    each_backend.add("Hauptstraße 5", user_id="u1")

    def found(keyword: str) -> list[str]:
        return [r.record.id for r in search_keywords(each_backend, [keyword], user_id="u1")]

    assert found("école") == found("ÉCOLE") == found("cole du") == [ecole.id]
    assert found("straße") == found("strasse") == []


def test_letters_fold_alike_on_both_backends(store: Store) -> None:
    """As the keyword_search docstring says of SQLite: each letter folds alone, non-ASCII ones too
    (the test server's database is in the C locale, where ILIKE folds ASCII only)."""
    ecole, strasse = _record("ÉCOLE du Nord"), _record("Hauptstraße 5", minutes=1)
    _put(store, ecole, strasse)

    def ids(term: str) -> list[str]:
        return [h[0] for h in store.substring_search("u1", [term], 10, Filters())]

    assert ids("école") == [ecole.id] and ids("ÉCO") == [ecole.id] and ids("cole du") == [ecole.id]
    assert ids("straße") == [strasse.id] and ids("STRAßE") == [strasse.id]
    assert ids("strasse") == []  # "ß" folds to itself, not to "ss"


def test_many_matches_walked_and_few_read_answer_alike(
    postgres_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [_record(f"acme note {i}", minutes=i) for i in range(6)]
    _put(postgres_store, *records, _record("acme of another user", user="u2", minutes=60))
    newest = [r.id for r in reversed(records)]
    few = [h[0] for h in postgres_store.substring_search("u1", ["acm"], 4, Filters())]
    monkeypatch.setattr(candidates, "FEW_SUBSTRING_MATCHES", 0)  # every search of more than 2n matches walks
    walked = [h[0] for h in postgres_store.substring_search("u1", ["acm"], 2, Filters())]  # 7 matches > 4
    read = [h[0] for h in postgres_store.substring_search("u1", ["acm"], 4, Filters())]  # 7 matches <= 8
    assert walked == newest[:2] and read == few == newest[:4]


@pytest.fixture
def before_the_index(postgres_url: str) -> Iterator[None]:
    """The database as migration 9 left it (what a store opened with the code before this one has)."""
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {substrings.INDEX}")
        conn.execute("DROP FUNCTION engram_searched_grams, engram_trigrams, engram_metadata_strings, engram_fold")
        conn.execute("DELETE FROM engram_schema_migrations WHERE version >= 10")
    yield
    PostgresStore(postgres_url, min_size=1, max_size=1).close()  # back for the other tests, whatever happened


def test_a_store_from_before_the_index_gets_it_on_open(
    postgres_store: PostgresStore, postgres_url: str, request: pytest.FixtureRequest
) -> None:
    acme = _record("Invoice for ACME Corp")
    tagged = _record("a note", minutes=1, tags=("billing",), metadata={"via": {"who": ["Initech"]}})
    _put(postgres_store, acme, tagged)
    request.getfixturevalue("before_the_index")
    store = PostgresStore(postgres_url, min_size=1, max_size=1)
    try:
        assert [h[0] for h in store.substring_search("u1", ["cme c"], 10, Filters())] == [acme.id]
        assert [h[0] for h in store.substring_search("u1", ["illin", "nitec"], 10, Filters())] == [tagged.id]
        with store._tx() as conn:
            [[grams]] = conn.execute(
                "SELECT engram_searched_grams(content, subject, predicate, object, trigger_text, action_text, "
                "tags, metadata) FROM engram_memories WHERE id = %s", (tagged.id,),
            ).fetchall()
        assert {"bil", "ing", "ini", "ech"} <= set(grams) and "via" not in grams  # metadata keys are not searched
    finally:
        store.close()


@pytest.mark.parametrize("text", ["", "ab", "abc", "abcdefgh", "a\nbcé", "ab\x01cd\x01", "ÉCOLE\x1fßtraße 42 " * 3])
def test_trigrams_are_every_three_character_substring(postgres_store: PostgresStore, text: str) -> None:
    with postgres_store._tx() as conn:
        [[grams]] = conn.execute("SELECT engram_trigrams(%s)", (text,)).fetchall()
    assert sorted(grams) == sorted(text[i : i + 3] for i in range(len(text) - 2))
