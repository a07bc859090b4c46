"""Attacks on the files kept beside a SQLite database (issue 41): deleted words written back by a
later save, side folders readable by anyone, a save cut short by ``kill -9``, a damaged file, a
file truncated under a process that maps it. Each checks the promise the attack broke."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from engram.model import Filters, MemoryRecord
from engram.stores.sqlite import saved
from engram.stores.sqlite.store import SQLiteStore
from tests.reliability._workers import report, scale
from tests.waiting import until

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIMS = 16
ROWS = 130
SECRET = "my bank quetzalpin is 4471983 and my password is hunterzz2secret"
SECRET_WORDS = (b"quetzalpin", b"4471983", b"hunterzz2secret")
REPO = Path(__file__).resolve().parents[2]


def _vector(seed: int) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def _record(i: int, content: str | None = None) -> MemoryRecord:
    return MemoryRecord(id=f"m{i:04d}", user_id="u", content=content or f"note {i} about shipment {i % 7}",
                        kind="message", content_hash=f"h{i}", created_at=NOW - timedelta(minutes=i),
                        recorded_at=NOW, importance=0.5)


def _fill(store: SQLiteStore, secret_at: int | None = None) -> None:
    records = [_record(i, SECRET if i == secret_at else None) for i in range(ROWS)]
    store.put_many(records, np.stack([_vector(zlib.crc32(r.id.encode())) for r in records]))


def _settle(store: SQLiteStore) -> None:
    store._saves.get().submit(lambda: None).result()


def _load_both(store: SQLiteStore) -> None:
    assert store.vector_search("u", _vector(zlib.crc32(b"m0007")), 1, Filters())[0][0] == "m0007"
    assert store.keyword_search("u", "note shipment", 5, Filters())
    _settle(store)


def user_files(db: str, user_id: str) -> list[Path]:
    """Every file named for the user in every folder beside the database."""
    digest = saved.user_digest(user_id)
    return sorted(p for side in Path(db).parent.glob(Path(db).name + ".*") if side.is_dir()
                  for p in side.glob(digest + ".*"))


def secret_bytes(folder: Path, words: tuple[bytes, ...] = SECRET_WORDS) -> dict[str, int]:
    """Occurrences of each word in every file under ``folder`` (database, WAL, side folders)."""
    found: dict[str, int] = {}
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for word in words:
                if (count := data.count(word)):
                    found[f"{path.relative_to(folder)}:{word.decode()}"] = count
    return found


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(saved, "SAVE_ABOVE", 100)
    yield tmp_path / "side.db"


def _saved_again(store: SQLiteStore, db: Path) -> None:
    """Wait for the resave that follows a removal (the files were erased by it)."""
    until(lambda: Path(f"{db}.keywords", saved.user_digest("u") + ".bin").exists()
          and Path(f"{db}.vectors", saved.user_digest("u") + ".bin").exists(), timeout=20)
    _settle(store)


@pytest.mark.parametrize("erase", ["delete", "update"])
def test_deleted_words_never_return_to_disk(db: Path, erase: str) -> None:
    store = SQLiteStore(db)
    store._resaves.quiet = 0.05
    try:
        _fill(store, secret_at=5)
        _load_both(store)
        assert store.keyword_search("u", "quetzalpin", 1, Filters())[0][0] == "m0005"
        assert secret_bytes(db.parent)  # the secret is on disk before the erasure, side files included
        if erase == "delete":
            assert store.delete_many("u", ["m0005"]) == 1
        else:
            store.replace(replace(_record(5), content="note five, nothing secret"), None)
        _saved_again(store, db)  # the process holding the user's postings saved them again
        assert store.keyword_search("u", "quetzalpin", 1, Filters()) == []
        found = secret_bytes(db.parent)
        report(f"side_resave_after_{erase}", {"deleted_text_bytes_found": sum(len(w.split(":")[-1]) * n
                                                                               for w, n in found.items()),
                                              "where": sorted(found)})
        assert found == {}
        # A fresh process loads the saved postings and still finds the other words.
        store.close()
        store = SQLiteStore(db)
        assert store.keyword_search("u", "note shipment", 3, Filters())
        assert store.keyword_search("u", "quetzalpin", 1, Filters()) == []
    finally:
        store.close()
    assert secret_bytes(db.parent) == {}


def test_forget_user_leaves_no_file_and_no_byte(db: Path) -> None:
    store = SQLiteStore(db)
    try:
        _fill(store, secret_at=3)
        _load_both(store)
        assert user_files(str(db), "u")
        store.forget_user("u")
        left = user_files(str(db), "u")
    finally:
        store.close()
    found = secret_bytes(db.parent)
    report("side_forget", {"files_left": len(left), "deleted_text_bytes_found": sum(
        len(w.split(":")[-1]) * n for w, n in found.items())})
    assert left == [] and found == {}


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_side_files_are_no_more_readable_than_the_database(db: Path, mode: int) -> None:
    store = SQLiteStore(db)
    try:
        os.chmod(db, mode)
        _fill(store)
        _load_both(store)
    finally:
        store.close()
    folder_mode = mode | ((mode & 0o444) >> 2)
    sides = [p for p in db.parent.iterdir() if p.is_dir() and p.name.startswith(db.name + ".")]
    assert {p.name for p in sides} >= {"side.db.keywords", "side.db.vectors"}
    modes = {str(p.relative_to(db.parent)): stat.S_IMODE(p.stat().st_mode)
             for side in sides for p in (side, *side.iterdir())}
    wider = sorted(name for name, m in modes.items() if m & ~(folder_mode if "/" not in name else mode))
    report(f"side_modes_{mode:o}", {"database_mode": oct(mode), "modes": {k: oct(m) for k, m in modes.items()},
                                    "wider_than_database": wider})
    for side in sides:
        assert stat.S_IMODE(side.stat().st_mode) == folder_mode, side
        for file in side.iterdir():
            assert stat.S_IMODE(file.stat().st_mode) == mode, file


def test_an_older_open_folder_is_narrowed_when_a_store_opens(db: Path) -> None:
    SQLiteStore(db).close()
    os.chmod(db, 0o600)
    loose = Path(f"{db}.keywords")
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    (loose / "x.bin").write_bytes(b"x")
    os.chmod(loose / "x.bin", 0o644)
    SQLiteStore(db).close()
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700
    assert stat.S_IMODE((loose / "x.bin").stat().st_mode) == 0o600


_KILLED_MID_SAVE = """
import os, signal, sys, zlib
import numpy as np
sys.path.insert(0, {repo!r})
from engram.stores import packing
from engram.stores.sqlite import saved
from engram.stores.sqlite.store import SQLiteStore
from engram.model import Filters
from tests.reliability.test_side_files import _fill, _vector
saved.SAVE_ABOVE = 100
real = packing.write_part
def dying(out, part):
    real(out, part)
    out.file.flush() if hasattr(out, "file") else out.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # kill -9 in the middle of the save
saved.write_part = dying
store = SQLiteStore({db!r})
{fill}
store.vector_search("u", _vector(1), 1, Filters())
store._saves.get().submit(lambda: None).result()
"""


def _killed_mid_save(db: Path, fill: bool) -> None:
    script = _KILLED_MID_SAVE.format(repo=str(REPO), db=str(db), fill="_fill(store)" if fill else "")
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO, capture_output=True, timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr.decode()[-2000:]


def test_a_save_killed_midway_leaves_nothing_after_forget_or_reopen(db: Path) -> None:
    store = SQLiteStore(db)  # open before the kill: its opening removed nothing
    try:
        _killed_mid_save(db, fill=True)
        partials = [p for p in user_files(str(db), "u") if p.name.endswith(".partial")]
        assert partials, "the killed save left no temporary file"
        store.forget_user("u")
        after_forget = user_files(str(db), "u")
    finally:
        store.close()
    assert after_forget == []
    # Again, and this time a store opening removes what the dead process left.
    store = SQLiteStore(db)
    _fill(store)
    store.close()
    _killed_mid_save(db, fill=False)
    assert any(p.name.endswith(".partial") for p in user_files(str(db), "u"))
    SQLiteStore(db).close()
    after_open = [p for p in user_files(str(db), "u") if p.name.endswith(".partial")]
    report("side_kill_mid_save", {"partials_made": len(partials), "files_left_after_forget": len(after_forget),
                                  "partials_left_after_reopen": len(after_open)})
    assert after_open == []


def _answers(store: SQLiteStore) -> list[object]:
    out: list[object] = []
    for query in ("note shipment 3", "note 42", "shipment 6"):
        out.append(store.keyword_search("u", query, 5, Filters()))
    for seed in (b"m0007", b"m0100"):
        out.append([m for m, _ in store.vector_search("u", _vector(zlib.crc32(seed)), 3, Filters())])
    return out


def corruption_sweep(db: Path, positions_per_file: int) -> tuple[int, int, int, list[str]]:
    """Change one byte at a time of each saved file, and ask a fresh store each time. Returns the
    cases tried, how many raised, how many answered otherwise than SQL does, and what went wrong."""
    store = SQLiteStore(db)
    _fill(store)
    _load_both(store)
    store.close()
    files = sorted(p for kind in saved.KINDS for p in Path(f"{db}.{kind}").iterdir())
    originals = {p: p.read_bytes() for p in files}
    for p in files:
        p.unlink()
    above, saved.SAVE_ABOVE = saved.SAVE_ABOVE, 10**9  # the answers from SQL, no file saved
    reference = SQLiteStore(db)
    try:
        expected = _answers(reference)
    finally:
        reference.close()
        saved.SAVE_ABOVE = above
    tried = raised = wrong = 0
    problems: list[str] = []
    for path, data in originals.items():
        header = list(range(min(len(data), 256)))
        spread = np.linspace(256, len(data) - 1, max(positions_per_file - len(header) // 4, 1)).astype(int).tolist()
        for at in sorted(set(header[::4] + spread)):
            for p, d in originals.items():
                p.write_bytes(d)
            damaged = bytearray(data)
            damaged[at] ^= 0x5A
            path.write_bytes(bytes(damaged))
            tried += 1
            store = SQLiteStore(db)
            try:
                got = _answers(store)
                _settle(store)
            except Exception as exc:  # counted: none may escape
                raised += 1
                problems.append(f"{path.name}@{at}: {type(exc).__name__}: {exc}")
                continue
            finally:
                store.close()
            if got != expected:
                wrong += 1
                problems.append(f"{path.name}@{at}: answered otherwise")
            elif path.exists() and path.read_bytes() == bytes(damaged):
                problems.append(f"{path.name}@{at}: the damaged file was kept")
    return tried, raised, wrong, problems


def test_a_damaged_side_file_is_ignored_and_rebuilt(db: Path) -> None:
    tried, raised, wrong, problems = corruption_sweep(db, positions_per_file=scale(40, 200))
    report("side_corruption_sweep", {"cases": tried, "raised": raised, "answered_wrongly": wrong,
                                     "problems": problems[:20]})
    assert tried >= 80
    assert (raised, wrong, problems) == (0, 0, [])


def test_a_file_of_the_older_layout_is_rebuilt(db: Path) -> None:
    store = SQLiteStore(db)
    _fill(store)
    _load_both(store)
    store.close()
    path = Path(f"{db}.vectors", saved.user_digest("u") + ".bin")
    data = bytearray(path.read_bytes())
    data[:8] = b"ENGSAVE2"
    path.write_bytes(bytes(data))
    store = SQLiteStore(db)
    try:
        assert store.vector_search("u", _vector(zlib.crc32(b"m0009")), 1, Filters())[0][0] == "m0009"
        _settle(store)
    finally:
        store.close()
    assert path.read_bytes()[:8] == b"ENGSAVE3"


_TRUNCATED_UNDER_A_MAPPING = """
import os, sys, zlib
sys.path.insert(0, {repo!r})
from pathlib import Path
from engram.model import Filters
from engram.stores.sqlite import saved
from engram.stores.sqlite.store import SQLiteStore
from tests.reliability.test_side_files import _vector
saved.SAVE_ABOVE = 100
store = SQLiteStore({db!r})
assert store.vector_search("u", _vector(zlib.crc32(b"m0011")), 1, Filters())[0][0] == "m0011"
assert store.keyword_search("u", "note 11", 1, Filters())[0][0] == "m0011"
for kind in ("vectors", "keywords"):  # as `cp backup/... <db>.<kind>/` or rsync --inplace would
    path = Path({db!r} + "." + kind, saved.user_digest("u") + ".bin")
    with open(path, "r+b") as f:
        f.truncate(4096)
print(store.vector_search("u", _vector(zlib.crc32(b"m0012")), 1, Filters())[0][0])
print(store.keyword_search("u", "note 12", 1, Filters())[0][0])
print(len(store.vectors("u", ["m0013"])))
store.close()
"""


def test_a_side_file_truncated_in_place_does_not_kill_the_process(db: Path) -> None:
    store = SQLiteStore(db)
    _fill(store)
    _load_both(store)
    store.close()
    script = _TRUNCATED_UNDER_A_MAPPING.format(repo=str(REPO), db=str(db))
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, timeout=120)
    report("side_truncation", {"returncode": run.returncode, "answers": run.stdout.decode().split()})
    assert run.returncode == 0, (run.returncode, run.stderr.decode()[-2000:])
    assert run.stdout.decode().split() == ["m0012", "m0012", "1"]
    # A store opened after the truncation ignores the short files.
    store = SQLiteStore(db)
    try:
        assert store.vector_search("u", _vector(zlib.crc32(b"m0014")), 1, Filters())[0][0] == "m0014"
        assert store.keyword_search("u", "note 14", 1, Filters())[0][0] == "m0014"
    finally:
        store.close()
