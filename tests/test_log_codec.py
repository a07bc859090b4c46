"""A logged retrieval's items are written compactly (each signal named once a row) and read back
whole; rows written before in the old form (each item naming its signals) stay readable."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from engram.model import LoggedItem, LoggedRetrieval, new_id
from engram.stores.log_codec import decode_items, encode_items, item_token
from engram.stores.sqlite.store import SQLiteStore
from tests.contract.test_store_contract import T0

SIGNALS = ("semantic_similarity", "entity_overlap", "temporal_relevance", "importance", "reinforcement",
           "keyword_relevance", "relevance", "conversation_context", "entity_bridge", "asked", "voice")


def items(n: int = 8) -> tuple[LoggedItem, ...]:
    return tuple(
        LoggedItem(new_id(), "message", {s: round(0.123456 * (i + 1) * (j % 3), 6) for j, s in enumerate(SIGNALS)})
        for i in range(n)
    )


def old_form(logged: tuple[LoggedItem, ...]) -> str:
    return json.dumps([{"id": i.id, "kind": i.kind, "signals": dict(i.signals)} for i in logged],
                      separators=(",", ":"), ensure_ascii=False)


def test_items_round_trip_and_take_about_half_the_old_bytes() -> None:
    logged = items()
    text = encode_items(logged)
    assert decode_items(text) == logged
    assert len(text) < 0.6 * len(old_form(logged))


def test_an_item_without_a_signal_reads_back_without_it() -> None:
    logged = (LoggedItem("a", "fact", {"semantic_similarity": 0.5, "rrf": 0.25}),
              LoggedItem("b", "message", {"semantic_similarity": 1 / 3}),
              LoggedItem("c", "procedure", {}))
    assert decode_items(encode_items(logged)) == (
        LoggedItem("a", "fact", {"semantic_similarity": 0.5, "rrf": 0.25}),
        LoggedItem("b", "message", {"semantic_similarity": 0.333333}),
        LoggedItem("c", "procedure", {}),
    )
    assert decode_items(encode_items(())) == ()


def test_each_id_is_found_by_its_token_even_beyond_ascii() -> None:
    logged = (LoggedItem("mémoire-1", "fact", {"importance": 0.5}), LoggedItem('say "hi"', "fact", {}))
    text = encode_items(logged)
    assert all(item_token(i.id) in text for i in logged)
    assert item_token("mémoire") not in text


def test_rows_of_the_old_form_are_still_read(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "m.db"))
    entry = LoggedRetrieval(id=new_id(), query="q", category="factual", strategy="exploratory", created_at=T0,
                            items=items(2), settings={"searchType": "hybrid"})
    store.log_retrieval("u1", entry)
    store.close()
    with sqlite3.connect(tmp_path / "m.db") as conn:  # as a store written before the compact form left it
        conn.execute("UPDATE retrieval_log SET items = ? WHERE id = ?", (old_form(entry.items), entry.id))
    store = SQLiteStore(str(tmp_path / "m.db"))
    try:
        assert store.get_retrieval("u1", entry.id) == entry
    finally:
        store.close()


def test_values_are_kept_to_six_places_and_odd_ones_as_they_are() -> None:
    odd = (1 / 3, 2 / 3, 0.1234565e-3, -0.7777777, 123.4567894, 0.0, float("inf"), 1e20)
    logged = (LoggedItem("a", "fact", {f"s{n}": value for n, value in enumerate(odd)}),)
    read = decode_items(encode_items(logged))[0].signals
    assert [read[f"s{n}"] for n in range(len(odd))] == [0.333333, 0.666667, 0.000123, -0.777778, 123.456789, 0.0,
                                                          float("inf"), 1e20]
