"""SQLite's full-text indexes under erasure: no deleted text can be read back from their pages, and no
number of deletes leaves the file unwritable (engram.stores.sqlite.text_indexes).

The pages are read as FTS5 lays them out: each leaf page lists terms (prefix-compressed) and, per
term, the rows holding it with their positions. Text deleted but still posted there reads back from
the substring index whole, trigram by trigram (an outsider's attack found exactly that).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.stores.sqlite import text_indexes
from engram.stores.sqlite.text_indexes import RESET_LEVELS, levels

SECRET = "qzxvorplethium"


def _varint(page: bytes, at: int) -> tuple[int, int]:
    value = 0
    for k in range(9):
        byte = page[at]
        at += 1
        if k == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at
    return value, at


def _postings(page: bytes, out: dict[int, list[tuple[int, str]]]) -> None:
    """Add each (position, term) the leaf ``page`` posts to ``out`` by rowid."""
    if len(page) < 4:
        return
    footer = int.from_bytes(page[2:4], "big")
    if footer == 0 or footer > len(page):
        return
    starts, at, offset = [], footer, 0
    while at < len(page):
        delta, at = _varint(page, at)
        offset = delta if not starts else offset + delta
        starts.append(offset)
    term = b""
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else footer
        at = start
        try:
            if n == 0:
                size, at = _varint(page, at)
            else:
                kept, at = _varint(page, at)
                size, at = _varint(page, at)
                term = term[:kept]
            term, at = term + page[at:at + size], at + size
            rowid = None
            while at < end:
                delta, at = _varint(page, at)
                rowid = delta if rowid is None else rowid + delta
                header, at = _varint(page, at)
                last, position = at + (header >> 1), 0
                while at < last:
                    value, at = _varint(page, at)
                    if value == 1:  # a column number follows
                        _, at = _varint(page, at)
                        position = 0
                        continue
                    position += value - 2
                    out[rowid].append((position, term.decode("utf-8", "replace")))
                at = last
        except IndexError:
            pass


def _read_back(path: Path, table: str) -> dict[int, str]:
    """Per rowid posted in ``table``'s pages, its text rebuilt from the positions of its terms."""
    out: dict[int, list[tuple[int, str]]] = defaultdict(list)
    with sqlite3.connect(path) as conn:
        for (block,) in conn.execute(f"SELECT block FROM {table}_data WHERE id > 10"):
            if block:
                _postings(bytes(block), out)
    texts = {}
    for rowid, items in out.items():
        if table != "substring_fts":  # words: each posted at its own position
            texts[rowid] = " ".join(term for _, term in sorted(items))
            continue
        chars: dict[int, str] = {}  # trigrams: each overlaps the next two
        for position, term in sorted(items):
            for k, char in enumerate(term):
                chars.setdefault(position + k, char)
        texts[rowid] = "".join(chars.get(p, "?") for p in range(max(chars) + 1)) if chars else ""
    return texts


def test_deleted_edited_and_forgotten_text_cannot_be_read_back_from_either_index(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Memory(path, embedder=FakeEmbedder()) as memory:
        memory.add_many([{"content": f"bob's note {i} about green tea", "user_id": "bob"} for i in range(30)])
        deleted = memory.add(f"my bank pin is 4417, codeword {SECRET}", user_id="alice")
        edited = memory.add("alice's plain note", user_id="alice", metadata={"diagnosis": f"{SECRET} syndrome"})
        memory.add(f"alice second secret: {SECRET} lawyer", user_id="carol")
        for table in ("substring_fts", "keyword_fts"):  # the reading works
            assert any(SECRET in text for text in _read_back(path, table).values()), table

        memory.delete(deleted.id, user_id="alice")
        memory.update(edited.id, user_id="alice", metadata={"diagnosis": "none"})
        memory.forget_user("carol")
        with sqlite3.connect(path) as conn:
            live = {rowid for (rowid,) in conn.execute("SELECT rowid FROM memories")}
        for table in ("substring_fts", "keyword_fts"):
            texts = _read_back(path, table)
            assert set(texts) <= live, table
            assert not any(SECRET in text or "4417" in text for text in texts.values()), table
        assert memory.retrieve("green tea", user_id="bob", config=RetrievalConfig(top_k=5)).memories


def test_erasures_never_deepen_an_index_past_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_indexes, "RESET_LEVELS", 6)  # older SQLite adds two levels an erasure
    path = tmp_path / "s.db"
    with Memory(path, embedder=FakeEmbedder()) as memory:
        records = memory.add_many([{"content": f"shipment {i} for depot {i % 11}", "user_id": "u"} for i in range(300)])
        with sqlite3.connect(path) as conn:
            for record in records[:25]:
                memory.delete(record.id, user_id="u")
                assert levels(conn, "keyword_fts") <= 6 + 2
                assert levels(conn, "substring_fts") <= 6 + 2
        found = memory.retrieve("shipment 299", user_id="u", config=RetrievalConfig(top_k=3)).ids()
        assert records[299].id in found
        gone = {r.id for r in records[:25]}
        assert not gone & {r.id for r in memory.list(user_id="u", limit=1000)}


def test_a_store_whose_index_older_sqlite_read_as_corrupt_opens_repaired(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Memory(path, embedder=FakeEmbedder()) as memory:
        kept = memory.add_many([{"content": f"note {i} about invoice {i % 13}", "user_id": "u"} for i in range(300)])
    with sqlite3.connect(path, isolation_level=None) as conn:
        # What about a thousand deletes did to an index on SQLite 3.40 (two levels each), made quickly.
        for _ in range(1200):
            if levels(conn, "keyword_fts") > 2000:
                break
            conn.execute("BEGIN")
            conn.execute("INSERT INTO keyword_fts (rowid, terms) VALUES (999999, 'zz')")
            conn.execute("DELETE FROM keyword_fts WHERE rowid = 999999")
            conn.execute("INSERT INTO keyword_fts (keyword_fts) VALUES ('optimize')")
            conn.execute("COMMIT")
        if levels(conn, "keyword_fts") <= 2000:
            pytest.skip("this SQLite stops an index's levels short of corruption")
    with Memory(path, embedder=FakeEmbedder()) as memory:
        added = memory.add("the pallet for invoice 7 is damaged", user_id="u")
        memory.delete(kept[0].id, user_id="u")
        found = memory.retrieve("damaged pallet", user_id="u", config=RetrievalConfig(top_k=3)).ids()
        assert added.id in found
        assert kept[5].id in memory.retrieve("note 5 invoice 5", user_id="u", config=RetrievalConfig(top_k=5)).ids()
    with sqlite3.connect(path) as conn:
        assert levels(conn, "keyword_fts") <= RESET_LEVELS
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.parametrize("structure", [b"\x00\x00\x00\x00\xff\xff\xff\xff\xff", b"\x01", None])
def test_an_index_whose_structure_is_no_structure_is_built_afresh_at_opening(
    tmp_path: Path, structure: bytes | None,
) -> None:
    """FTS5 refuses to open an index whose structure record is missing or malformed, and then every
    write to the file fails; opening the store writes the index again instead."""
    path = tmp_path / "s.db"
    with Memory(path, embedder=FakeEmbedder()) as memory:
        kept = memory.add_many([{"content": f"row {i} about the harbour", "user_id": "u"} for i in range(40)])
    with sqlite3.connect(path) as conn:
        if structure is None:
            conn.execute("DELETE FROM keyword_fts_data WHERE id = 10")
        else:
            conn.execute("UPDATE keyword_fts_data SET block = ? WHERE id = 10", (structure,))
    with Memory(path, embedder=FakeEmbedder()) as memory:
        added = memory.add("the lighthouse keeper's row", user_id="u")
        assert added.id in memory.retrieve("lighthouse keeper", user_id="u", config=RetrievalConfig(top_k=3)).ids()
        assert kept[3].id in memory.retrieve("row 3 harbour", user_id="u", config=RetrievalConfig(top_k=5)).ids()
    with sqlite3.connect(path) as conn:
        assert 0 < levels(conn, "keyword_fts") <= RESET_LEVELS
