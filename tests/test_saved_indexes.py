"""A large user's vectors are saved beside the database so that a new process loads them from one
file: used only while the user's version is the one saved, never kept past a delete, replace or
forget, and the index loaded from it answers as one read from SQL does."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from engram.model import Filters, MemoryRecord
from engram.stores.sqlite import keyword, saved, snapshot
from engram.stores.sqlite.resaves import Resaves
from engram.stores.sqlite.store import SQLiteStore
from tests.waiting import until

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIMS = 16
ROWS = 120


def _vector(seed: int) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def _put(store: SQLiteStore, start: int, count: int) -> None:
    records = [
        MemoryRecord(id=f"m{i:04d}", user_id="u", content=f"note {i}", kind="message", content_hash=f"h{i}",
                     created_at=NOW - timedelta(minutes=i), recorded_at=NOW, importance=0.5)
        for i in range(start, start + count)
    ]
    store.put_many(records, np.stack([_vector(zlib.crc32(r.id.encode())) for r in records]))


def _top(store: SQLiteStore, memory_id: str, n: int = 1) -> list[str]:
    return [m for m, _ in store.vector_search("u", _vector(zlib.crc32(memory_id.encode())), n, Filters())]


def _saved(path: Path, kind: str = "vectors") -> list[Path]:
    directory = Path(f"{path}.{kind}")
    return [p for p in directory.iterdir() if p.suffix == ".bin"] if directory.is_dir() else []


def _settle(store: SQLiteStore) -> None:
    """Wait for the saves under way (the store's own pool)."""
    store._saves.get().submit(lambda: None).result()


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(saved, "SAVE_ABOVE", 100)
    db = tmp_path / "v.db"
    store = SQLiteStore(db)
    _put(store, 0, ROWS)
    assert _top(store, "m0007") == ["m0007"]  # the first load reads SQL and saves the file
    assert store.keyword_search("u", "note 42", 5, Filters())  # the keyword postings too
    _settle(store)
    store.close()
    yield db


def test_a_new_process_loads_the_saved_vectors(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(_saved(path)) == 1
    store = SQLiteStore(path)
    try:
        def no_sql(*_args: object) -> None:
            raise AssertionError("read from SQL although the saved vectors are current")

        monkeypatch.setattr(store._loader, "read", no_sql)
        assert _top(store, "m0042") == ["m0042"]
        # Writes reach an index mapped from the file (copy-on-write: the file is left as it was),
        # into the saved matrix's spare rows while they last: not a copy of the whole matrix.
        before = _saved(path)[0].read_bytes()
        mapped = store._indexes.get("u")._matrix  # type: ignore[union-attr]
        assert len(mapped) >= ROWS + 64
        _put(store, ROWS, 64)
        assert store._indexes.get("u")._matrix is mapped  # type: ignore[union-attr]
        _put(store, ROWS + 64, 16)
        assert _top(store, "m0150") == ["m0150"] and _top(store, "m0003") == ["m0003"]
        assert len(store.vector_search("u", _vector(1), ROWS + 80, Filters())) == ROWS + 80
        assert _saved(path)[0].read_bytes() == before
    finally:
        store.close()


def _reads(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the store reads to load or catch up its indexes from now on: each whole read's SQL (the
    vector and keyword loads), and ``"changes"`` for each read of the changes since an index's rows
    were read."""
    sent: list[str] = []
    for loader in (store._loader, store._postings_loader):
        def read(user_id: str, sql: str, params: object, real: Any = loader.read) -> Any:
            sent.append(sql)
            return real(user_id, sql, params)

        monkeypatch.setattr(loader, "read", read)
    real_changes = store._changes_reader.changed_since

    def changed_since(*args: Any, **kwargs: Any) -> Any:
        sent.append("changes")
        return real_changes(*args, **kwargs)

    monkeypatch.setattr(store._changes_reader, "changed_since", changed_since)
    return sent


Answers = tuple[list[list[str]], list[list[tuple[str, float]]]]


def _answers(store: SQLiteStore) -> Answers:
    vectors = [_top(store, m, 5) for m in ("m0003", "m0042", "m0121", "m0124")]
    vectors.append([m for m, _ in store.vector_search("u", _vector(1), 1000, Filters())])
    words = [store.keyword_search("u", q, 10, Filters()) for q in ("note 42", "note 122", "note", "note 7 124")]
    return vectors, words


def _fresh_answers(path: Path, monkeypatch: pytest.MonkeyPatch) -> Answers:
    """What a process answers that reads every row from SQL (saved files ignored)."""
    with monkeypatch.context() as patch:
        patch.setattr(saved, "load", lambda *_args: None)
        patch.setattr(saved, "SAVE_ABOVE", 10**9)
        store = SQLiteStore(path)
        try:
            return _answers(store)
        finally:
            store.close()


def _new_process_reads(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What a new process reads (:func:`_reads`) to answer as a process that read every row does."""
    want = _fresh_answers(path, monkeypatch)
    reader = SQLiteStore(path)
    try:
        sent = _reads(reader, monkeypatch)
        assert _answers(reader) == want
        return sent
    finally:
        reader.close()


def test_inserts_since_the_save_are_read_alone_and_added(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process adds rows: the file is behind by inserts only, so a new process maps it and
    reads the rows after its last one, and answers as a process that read every row does."""
    writer = SQLiteStore(path)
    _put(writer, ROWS, 5)  # the user's version moves; their removals do not
    writer.close()
    sent = _new_process_reads(path, monkeypatch)
    assert sent and all(sql == "changes" for sql in sent), sent  # never every row


_CHANGES = {
    "delete": "DELETE FROM memories WHERE id = 'm0042'",
    "status": "UPDATE memories SET status = 'archived' WHERE id = 'm0042'",
    "content": "UPDATE memories SET content = 'kettle' WHERE id = 'm0042'",
}


@pytest.mark.parametrize("lost", [False, True])
@pytest.mark.parametrize("change", ["delete", "status", "content"])
def test_a_removal_since_the_save_is_caught_up(
    path: Path, monkeypatch: pytest.MonkeyPatch, change: str, lost: bool,
) -> None:
    """A delete or a change in place that left the files behind (another process's, before it
    erased them; a crash in between): the load removes the row the removal counted and reads it
    again, never every row, unless the record of which row it was is gone."""
    writer = SQLiteStore(path)
    _put(writer, ROWS, 5)
    writer._write(lambda c: c.execute(_CHANGES[change]))  # the files are not erased
    if lost:
        writer._write(lambda c: c.execute("DELETE FROM memory_removals"))
    writer.close()
    assert _saved(path) and _saved(path, "keywords")
    want = _fresh_answers(path, monkeypatch)
    reader = SQLiteStore(path)
    try:
        sent = _reads(reader, monkeypatch)
        got = _answers(reader)
        assert got == want
        assert all(m != "m0042" for m, _ in got[1][0])  # "note 42" no longer finds it
        assert change == "content" or "m0042" not in got[0][1]  # its vector stays only if it stays
        assert any(sql != "changes" for sql in sent) == lost  # every row read again only then
        _settle(reader)
        if change == "delete":  # the files are saved again, without the row
            assert all(data and b"m0042" not in data for data in _files(path).values())
    finally:
        reader.close()


def test_changes_the_indexes_do_not_hold_leave_the_file_usable(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = SQLiteStore(path)
    writer._write(lambda c: c.execute("UPDATE memories SET importance = 0.9, access_count = 3 WHERE id = 'm0042'"))
    writer.close()
    reader = SQLiteStore(path)
    try:
        sent = _reads(reader, monkeypatch)
        assert _top(reader, "m0042") == ["m0042"]
        assert reader.keyword_search("u", "note 42", 1, Filters())[0][0] == "m0042"
        assert all(sql == "changes" for sql in sent), sent
    finally:
        reader.close()


@pytest.mark.parametrize("erase", ["delete", "forget", "replace"])
def test_erasing_writes_erase_the_file_in_any_process(path: Path, erase: str) -> None:
    store = SQLiteStore(path)  # has not loaded the user: the file is still erased
    try:
        if erase == "delete":
            assert store.delete("u", "m0009")
        elif erase == "forget":
            assert store.forget_user("u") == ROWS
        else:
            record = store.get("u", "m0009")
            assert record is not None
            store.replace(record, _vector(5))
        assert _saved(path) == [] and _saved(path, "keywords") == []
    finally:
        store.close()


@pytest.mark.parametrize("large", [False, True])
def test_keyword_postings_load_from_their_file(path: Path, monkeypatch: pytest.MonkeyPatch, large: bool) -> None:
    """Also for a user past the inline build, who would otherwise be answered by an SQL scan while
    the postings build on a thread."""
    assert len(_saved(path, "keywords")) == 1
    reference = SQLiteStore(path)
    reference.keyword_build_inline = 10**9
    monkeypatch.setattr(saved, "SAVE_ABOVE", 10**9)  # the reference neither reads nor writes files
    monkeypatch.setattr(reference, "_saved_postings", lambda _user: None)
    want = {q: reference.keyword_search("u", q, 10, Filters()) for q in ("note 42", "note", "note 7 99")}
    reference.close()
    store = SQLiteStore(path)
    try:
        if large:
            store.keyword_build_inline = 0
        def no_sql(*_args: object) -> None:
            raise AssertionError("read from SQL although the saved postings are current")

        monkeypatch.setattr(store._postings_loader, "read", no_sql)
        monkeypatch.setattr(keyword, "scan_hits", no_sql)
        assert {q: store.keyword_search("u", q, 10, Filters()) for q in want} == want
        _put(store, ROWS, 3)  # writes reach postings loaded from the file
        assert [m for m, _ in store.keyword_search("u", "note 121", 1, Filters())] == ["m0121"]
    finally:
        store.close()


def test_a_save_overtaken_by_an_erasure_is_not_kept(path: Path) -> None:
    store = SQLiteStore(path)
    gate = threading.Event()
    try:
        store._erase_saved("u")
        store._saves.get().submit(gate.wait)  # the save queues behind this
        index = store._cached_index("u")  # loads from SQL and queues a save
        store._erase_saved("u")  # before the save runs
        gate.set()
        _settle(store)
        assert _saved(path) == []
        assert len(index) == ROWS
    finally:
        gate.set()
        store.close()


def test_files_that_outlived_a_forget_are_not_used_for_the_user_written_again(path: Path) -> None:
    """Forgetting a user starts their counters anew, at random: files left behind (a crash between
    the forget and their erasure) cannot pass for the new user's, who reuses the freed rowids."""
    backup = {kind: [(p, p.read_bytes()) for p in _saved(path, kind)] for kind in ("vectors", "keywords")}
    store = SQLiteStore(path)
    try:
        assert store.forget_user("u") == ROWS
    finally:
        store.close()
    for files in backup.values():
        for file, data in files:
            file.parent.mkdir(exist_ok=True)
            file.write_bytes(data)  # as if the erasure had not happened
    writer = SQLiteStore(path)
    _put(writer, 0, 5)  # the same ids again, new vectors' rows
    writer.close()
    reader = SQLiteStore(path)
    try:
        assert len(reader.vector_search("u", _vector(1), 50, Filters())) == 5
        assert len(reader.keyword_search("u", "note", 50, Filters())) == 5
    finally:
        reader.close()


def test_a_write_during_a_load_from_the_file_is_not_lost(path: Path) -> None:
    """A large user's postings mapped from their file are a load the cache knows of: a delete this
    process commits meanwhile makes that load stale instead of missing from the index for good."""
    writer = SQLiteStore(path)
    _put(writer, ROWS, 3)  # the file is behind by inserts: the load catches it up
    writer.close()
    store = SQLiteStore(path)
    store.keyword_build_inline = 50  # a user past the inline build, whose postings come from the file
    real = store._saved_postings

    def deleting_meanwhile(user_id: str) -> Any:
        found = real(user_id)
        assert store.delete("u", "m0121")
        return found

    try:
        store._saved_postings = deleting_meanwhile  # type: ignore[method-assign]
        store.keyword_search("u", "note 121", 5, Filters())
        store._saved_postings = real  # type: ignore[method-assign]
        assert "m0121" not in [m for m, _ in store.keyword_search("u", "note 121", 5, Filters())]
    finally:
        store.close()


def test_a_held_index_takes_another_processs_inserts_in_place(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes on one file: one inserts, the other's held indexes take the new rows in place
    (no load again); its own writes meanwhile are kept."""
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    try:
        reader.keyword_build_inline = 10**9
        _answers(reader)  # both indexes held
        vectors, postings = reader._indexes.get("u"), reader._postings.get("u")
        _put(writer, ROWS, 3)
        _put(reader, ROWS + 3, 2)  # a write of its own, applied to the held indexes at once
        _put(writer, ROWS + 5, 2)
        want = _fresh_answers(path, monkeypatch)
        sent = _reads(reader, monkeypatch)
        assert _answers(reader) == want
        assert sent and all(sql == "changes" for sql in sent), sent
        assert reader._indexes.get("u") is vectors and reader._postings.get("u") is postings
        assert len(reader.vector_search("u", _vector(1), 1000, Filters())) == ROWS + 7
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("change", ["delete", "replace", "status", "content", "own delete"])
def test_a_held_index_takes_another_processs_removals_in_place(
    path: Path, monkeypatch: pytest.MonkeyPatch, change: str,
) -> None:
    """Another process deletes or changes a row in place: the held indexes remove that row and read
    it again (at a million memories a load again took 25-40 s), and answer as a fresh process."""
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    try:
        reader.keyword_build_inline = 10**9
        _answers(reader)
        vectors, postings = reader._indexes.get("u"), reader._postings.get("u")
        _put(writer, ROWS, 2)
        if change == "delete":
            assert writer.delete("u", "m0121")
        elif change == "own delete":  # this process's, applied at once; another's insert after it
            assert reader.delete("u", "m0121")
            _put(writer, ROWS + 2, 1)
        elif change == "replace":
            record = writer.get("u", "m0121")
            assert record is not None
            writer.replace(replace(record, content="kettle"), _vector(7))
        else:
            writer._write(lambda c: c.execute(_CHANGES[change].replace("m0042", "m0121")))
        _put(writer, ROWS + 3, 1)
        want = _fresh_answers(path, monkeypatch)
        sent = _reads(reader, monkeypatch)
        got = _answers(reader)
        assert got == want
        assert sent and all(sql == "changes" for sql in sent), sent
        assert reader._indexes.get("u") is vectors and reader._postings.get("u") is postings
        assert all(m != "m0121" for m, _ in got[1][1])  # "note 122" ranks no deleted or changed row
        assert ("m0121" in got[0][2]) == (change == "content")  # its vector stays only then
    finally:
        reader.close()
        writer.close()


def test_an_index_behind_by_more_removals_than_are_kept_loads_again(
    path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(snapshot, "REMOVALS_KEPT", 3)
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    try:
        _answers(reader)
        vectors = reader._indexes.get("u")
        assert writer.delete_many("u", ["m0001", "m0002", "m0003", "m0004"]) == 4
        want = _fresh_answers(path, monkeypatch)
        sent = _reads(reader, monkeypatch)
        assert _answers(reader) == want
        assert any(sql != "changes" for sql in sent)
        assert reader._indexes.get("u") is not vectors
    finally:
        reader.close()
        writer.close()


def test_the_record_of_removals_is_pruned_and_forgotten_with_the_user(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "p.db")
    try:
        for user in ("u", "w"):
            records = [MemoryRecord(id=f"{user}{i}", user_id=user, content="x", kind="message", content_hash=f"h{i}",
                                    created_at=NOW, recorded_at=NOW, importance=0.5) for i in range(600)]
            store.put_many(records, np.stack([_vector(i) for i in range(600)]))
        assert store.delete_many("u", [f"u{i}" for i in range(600)]) == 600

        def rows(user: str) -> int:
            return int(store._read("SELECT count(*) FROM memory_removals WHERE user_id = ?", (user,))[0][0])

        assert rows("u") == 600  # all within the newest REMOVALS_KEPT
        # As if 5,000 more removals had happened since: their rows are past the newest kept.
        store._write(lambda c: c.execute("UPDATE user_versions SET removed = removed + 5000 WHERE user_id = 'u'"))
        records = [MemoryRecord(id=f"v{i}", user_id="u", content="x", kind="message", content_hash=f"v{i}",
                                created_at=NOW, recorded_at=NOW, importance=0.5) for i in range(300)]
        store.put_many(records, np.stack([_vector(i) for i in range(300)]))
        assert store.delete_many("u", [f"v{i}" for i in range(300)]) == 300
        assert rows("u") <= 300 + 255  # those 5,000 counts back are pruned at a 256th removal
        assert store.delete("w", "w0")
        assert rows("w") == 1
        store.forget_user("u")
        assert rows("u") == 0 and rows("w") == 1
    finally:
        store.close()


def test_a_write_of_this_process_during_a_refresh_is_held_once(tmp_path: Path) -> None:
    """This process commits a row while its held postings take another process's rows in place: the
    row is held once, so a later delete of it leaves no copy behind."""
    here, there = SQLiteStore(tmp_path / "r.db"), SQLiteStore(tmp_path / "r.db")
    for store in (here, there):
        store.bind_embedder("m", DIMS)
        store.keyword_build_inline = 10**9

    def put(store: SQLiteStore, memory_id: str, text: str) -> None:
        record = MemoryRecord(id=memory_id, user_id="u", content=text, kind="message", content_hash=memory_id,
                              created_at=NOW, recorded_at=NOW, importance=0.5)
        store.put_many([record], np.stack([_vector(zlib.crc32(memory_id.encode()))]))

    try:
        for i in range(5):
            put(here, f"m{i}", "alpha")
        assert len(here.keyword_search("u", "alpha", 50, Filters())) == 5  # held
        put(here, "local0", "alpha")
        put(there, "foreign1", "alpha")
        real, fired = here._changes_reader.changed_since, []

        def changed_since(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            if not fired:  # right after the refresh's snapshot, a write of this process commits
                fired.append(1)
                put(here, "local2", "zebra")
            return out

        here._changes_reader.changed_since = changed_since  # type: ignore[method-assign]
        here.keyword_search("u", "alpha", 50, Filters())
        put(there, "foreign3", "alpha")  # the next search refreshes again
        assert [m for m, _ in here.keyword_search("u", "zebra", 50, Filters())] == ["local2"]
        assert fired
        assert here.delete("u", "local2")
        assert here.keyword_search("u", "zebra", 50, Filters()) == []
    finally:
        here.close()
        there.close()


def _files(path: Path) -> dict[str, bytes]:
    return {kind: b"".join(p.read_bytes() for p in _saved(path, kind)) for kind in ("vectors", "keywords")}


@pytest.mark.parametrize("who", ["this process", "another process"])
def test_files_a_removal_erased_are_saved_again_from_the_held_indexes(
    path: Path, monkeypatch: pytest.MonkeyPatch, who: str,
) -> None:
    """A delete erases the files; the process holding the user's indexes saves them again once the
    user's removals pause, without the deleted rows, and a new process maps them instead of reading
    every row (at a million memories, 25-70 s)."""
    holder, other = SQLiteStore(path), SQLiteStore(path)
    saves: list[str] = []
    real = holder._save

    def counted(user_id: str, kind: str, *args: Any, **kwargs: Any) -> None:
        saves.append(kind)
        real(user_id, kind, *args, **kwargs)

    try:
        holder.keyword_build_inline = 10**9
        holder._save = counted  # type: ignore[method-assign]
        holder._resaves.quiet = 0.2
        _answers(holder)  # both indexes held
        deleter = holder if who == "this process" else other
        for memory_id in ("m0042", "m0043", "m0044"):
            assert deleter.delete("u", memory_id)
        assert _saved(path) == [] and _saved(path, "keywords") == []
        if who == "another process":
            _answers(holder)  # takes the deletes, and learns the files are gone
        assert until(lambda: len(set(saves)) == 2)
        _settle(holder)
        assert "keywords" in saves and "vectors" in saves
        # A save is counted as it starts; the pool's other worker may run _settle's marker first.
        assert until(lambda: all(_files(path).values()))
        files = _files(path)
        assert all(b"m0042" not in data and b"m0044" not in data for data in files.values())
    finally:
        holder.close()
        other.close()
    assert _new_process_reads(path, monkeypatch) == []  # mapped, nothing read


def test_close_saves_what_waits_to_be_saved_again(path: Path) -> None:
    store = SQLiteStore(path)
    try:
        store._resaves.quiet = 3600
        _answers(store)
        assert store.delete("u", "m0042")
        assert store._resaves.pending() == ["u"] and _saved(path) == []
    finally:
        store.close()
    assert _saved(path) and _saved(path, "keywords")
    assert all(b"m0042" not in data for data in _files(path).values())


def test_a_gathered_matrix_is_written_as_its_rows_and_not_kept_past_a_compaction(tmp_path: Path) -> None:
    """The saved matrix is gathered from the index as it is written (no copy of the whole): the file
    holds exactly the live rows then the spare zero rows, and a compaction meanwhile (rows moved)
    cancels it."""
    from engram.stores.sqlite.vectors import ExactIndex

    rows = 40_000  # more than one chunk of rows
    matrix = np.random.default_rng(3).standard_normal((rows, DIMS)).astype(np.float32)
    index = ExactIndex.load(DIMS, list(range(1, rows + 1)), [f"m{i}" for i in range(rows)],
                            [v.tobytes() for v in matrix], ["message"] * rows, ["active"] * rows)
    for rowid in range(10_001, rows + 1, 7):
        index.remove(rowid)  # holes, fewer than a compaction waits for
    db = str(tmp_path / "g.db")
    lock = threading.Lock()
    rowids, _, gathered, _, _ = index.arrays(spare=5)
    saved.save(db, "vectors", "u", 1, [gathered, rowids], removed=0, last_rowid=rows, publish=lambda: True, lock=lock)
    found = saved.load(db, "vectors", "u")
    assert found is not None
    live = rowids - 1
    assert np.array_equal(found.parts[0][: len(live)], matrix[live]) and not found.parts[0][len(live):].any()
    assert found.parts[0].shape == (len(live) + 5, DIMS)
    saved.drop(db, "vectors", "u")
    rowids, _, gathered, _, _ = index.arrays(spare=5)
    for rowid in range(1, 10_001):
        index.remove(rowid)  # past a quarter of the rows: the index compacts
    assert index._compactions == 1 and not gathered.current()
    saved.save(db, "vectors", "u", 1, [gathered, rowids], removed=0, last_rowid=rows, publish=lambda: True, lock=lock)
    assert saved.load(db, "vectors", "u") is None


def test_a_burst_of_removals_saves_once_after_the_last() -> None:
    saved_users: list[str] = []
    resaves = Resaves(saved_users.append, quiet=0.3)
    try:
        for _ in range(5):
            resaves.schedule("u")  # each puts it off again
            time.sleep(0.05)
        resaves.schedule("w")
        assert saved_users == []
        assert until(lambda: len(saved_users) == 2)
        assert sorted(saved_users) == ["u", "w"]
        resaves.schedule("u")
    finally:
        resaves.close()  # saves what still waits
    assert sorted(saved_users) == ["u", "u", "w"]
    resaves.schedule("x")  # after close: nothing
    assert resaves.pending() == []


def test_a_vector_load_from_sql_has_the_postings_built_and_saved_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process whose first retrieval of a large user runs out of time on the vectors never asks
    for keywords: the postings are built and saved all the same, for the next process."""
    monkeypatch.setattr(saved, "SAVE_ABOVE", 100)
    db = tmp_path / "v.db"
    store = SQLiteStore(db)
    store.keyword_build_inline = 50
    _put(store, 0, ROWS)
    try:
        assert _top(store, "m0007") == ["m0007"]  # vectors only
        assert until(lambda: store._postings.holds("u"), timeout=20)
        _settle(store)
    finally:
        store.close()
    assert len(_saved(db, "keywords")) == 1
    again = SQLiteStore(db)
    try:
        def no_sql(*_args: object) -> None:
            raise AssertionError("postings read from SQL although saved")

        monkeypatch.setattr(again._postings_loader, "read", no_sql)
        again.keyword_build_inline = 50
        assert again.keyword_search("u", "note 42", 1, Filters())[0][0] == "m0042"
    finally:
        again.close()
