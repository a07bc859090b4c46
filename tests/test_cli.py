"""The CLI mirrors the facade: add, import, search, stats, forget-user."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engram import Memory
from engram.cli import cli


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def test_add_search_stats_forget(db: str) -> None:
    runner = CliRunner()
    added = runner.invoke(cli, ["add", "Acme prefers NET30 payment terms", "--user", "u1", "--kind", "fact",
                                "--tag", "billing", "--db", db])
    assert added.exit_code == 0, added.output
    assert len(added.output.strip()) == 26  # a ULID
    found = runner.invoke(cli, ["search", "How does Acme pay?", "--user", "u1", "--db", db, "--now",
                                "2030-01-01T00:00:00+00:00"])
    assert found.exit_code == 0, found.output
    assert "NET30" in found.output and "why:" in found.output
    as_json = runner.invoke(cli, ["search", "Acme", "--user", "u1", "--db", db, "--format", "json"])
    payload = json.loads(as_json.output)
    assert payload["memories"][0]["provenance"]["collection"] == "user:u1"
    stats = json.loads(runner.invoke(cli, ["stats", "--db", db]).output)
    assert stats["memories"] == 1
    refused = runner.invoke(cli, ["forget-user", "u1", "--db", db], input="n\n")
    assert "nothing deleted" in refused.output
    forgot = runner.invoke(cli, ["forget-user", "u1", "--yes", "--db", db])
    assert "deleted 1 memory of u1" in forgot.output


def test_import_jsonl(db: str, tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps({"content": f"note number {i}", "kind": "message"}) for i in range(5)))
    result = CliRunner().invoke(cli, ["import", str(path), "--user", "u2", "--db", db])
    assert result.exit_code == 0, result.output
    assert "imported 5 memories" in result.output


def test_bad_input_is_a_clear_error(db: str) -> None:
    result = CliRunner().invoke(cli, ["add", "x", "--user", "u", "--importance", "7", "--db", db])
    assert result.exit_code != 0
    assert "importance" in str(result.exception) or "importance" in result.output


# -- a mistyped database path: read commands fail, only write commands create a database ------------

READ_COMMANDS = [
    ["search", "Acme", "--user", "u1"],
    ["list", "--user", "u1"],
    ["get", "01JC3Z8W6Q2M4T5V7X9Y0A1B2C", "--user", "u1"],
    ["update", "01JC3Z8W6Q2M4T5V7X9Y0A1B2C", "--user", "u1", "--content", "x"],
    ["delete", "01JC3Z8W6Q2M4T5V7X9Y0A1B2C", "--user", "u1", "--yes"],
    ["tune", "--user", "u1"],
    ["stats"],
    ["forget-user", "u1", "--yes"],
    ["doc", "get", "--user", "u1", "--filename", "a.md"],
    ["doc", "versions", "a.md", "--user", "u1"],
    ["keys", "list"],
    ["keys", "revoke", "0123456789abcdef"],
    ["serve"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_read_commands_on_a_missing_database_fail_without_creating_it(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    started: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(a))  # serve must stop before this
    monkeypatch.chdir(tmp_path)
    typo = tmp_path / "enrgam.db"
    result = CliRunner().invoke(cli, [*args, "--db", str(typo)])
    assert result.exit_code != 0, result.output
    assert "no Engram database" in result.output and str(typo) in result.output, result.output
    assert not typo.exists() and not started
    assert list(tmp_path.iterdir()) == []
    # The same through $ENGRAM_DB.
    result = CliRunner().invoke(cli, args, env={"ENGRAM_DB": str(typo)})
    assert result.exit_code != 0 and not typo.exists(), result.output


def test_write_commands_create_a_missing_database(tmp_path: Path) -> None:
    runner = CliRunner()
    made = tmp_path / "new.db"
    assert runner.invoke(cli, ["add", "Acme prefers NET30", "--user", "u1", "--db", str(made)]).exit_code == 0
    assert made.exists()
    keys = tmp_path / "keys.db"
    created = runner.invoke(cli, ["keys", "create", "--user", "u1", "--db", str(keys)])
    assert created.exit_code == 0, created.output
    assert keys.exists()
    lines = tmp_path / "m.jsonl"
    lines.write_text(json.dumps({"content": "note", "kind": "message"}))
    imported = tmp_path / "imported.db"
    assert runner.invoke(cli, ["import", str(lines), "--user", "u1", "--db", str(imported)]).exit_code == 0
    assert imported.exists()
    # And the read commands work on a database that exists.
    stats = runner.invoke(cli, ["stats", "--db", str(made)])
    assert stats.exit_code == 0 and json.loads(stats.output)["memories"] == 1


@pytest.mark.parametrize("args", [["stats"], ["keys", "list"], ["search", "Acme", "--user", "u1"]],
                         ids=lambda a: a[0] + (" " + a[1] if a[0] == "keys" else ""))
def test_a_file_that_is_not_a_database_is_a_clear_error_not_a_raw_sqlite3_traceback(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    notes = tmp_path / "notes.txt"
    notes.write_text("these are notes, not a SQLite database " * 40)
    monkeypatch.setattr("sys.argv", ["engram", *args, "--db", str(notes)])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "not a database" in err and "Traceback" not in err, err


# -- import: FILE:LINE: field: problem, nothing written from a bad file, re-runs add nothing ------------


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def _dated(i: int, user: str = "u") -> dict[str, object]:
    return {"user_id": user, "content": f"note number {i}", "created_at": f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"}


def _count(db: str, user: str = "u") -> int:
    from engram.stores.sqlite.store import SQLiteStore

    store = SQLiteStore(db)
    try:
        return store.count(user)
    finally:
        store.close()


def test_import_bad_late_line_names_file_line_and_field_and_imports_nothing(db: str, tmp_path: Path) -> None:
    rows: list[object] = [_dated(i) for i in range(600)]
    rows.insert(10, "")  # a blank line still counts in the numbering
    rows[550] = {**_dated(549), "importance": 7}  # line 551
    path = _jsonl(tmp_path / "bad.jsonl", rows)
    result = CliRunner().invoke(cli, ["import", str(path), "--db", db])
    assert result.exit_code != 0
    assert f"{path}:551: importance: must be in [0, 1]" in result.output, result.output
    assert "nothing imported" in result.output
    assert not Path(db).exists()  # not even an empty database


def test_import_reports_every_bad_line_not_just_the_first(db: str, tmp_path: Path) -> None:
    rows: list[object] = [_dated(i) for i in range(5)]
    rows[1] = "{not json"
    rows[2] = "[1, 2]"
    rows[3] = {"content": "no owner"}
    rows[4] = '{"content": "x", "user_id": "u", "metadata": ' + '{"a": ' * 3000 + "1" + "}" * 3001
    rows.append({**_dated(9), "id": "dup-1"})
    rows.append({**_dated(10), "id": "dup-1"})
    path = _jsonl(tmp_path / "bad.jsonl", rows)
    result = CliRunner().invoke(cli, ["import", str(path), "--db", db])
    assert result.exit_code != 0
    for expected in (f"{path}:2: not JSON", f"{path}:3: must be a JSON object", f"{path}:5: nested too deeply",
                     f"{path}:4: user_id: must be a non-empty string (give --user, or a user_id on the line)",
                     f"{path}:7: id: repeats the id of line 6"):
        assert expected in result.output, result.output
    assert not Path(db).exists()


def test_import_rerun_is_idempotent(db: str, tmp_path: Path) -> None:
    rows = [*(_dated(i) for i in range(300)), *({"content": f"keyed {i}", "id": f"key-{i}"} for i in range(5)),
            *(_dated(i, user="other") for i in range(3))]
    path = _jsonl(tmp_path / "m.jsonl", rows)
    runner = CliRunner()
    first = runner.invoke(cli, ["import", str(path), "--user", "u", "--db", db])
    assert first.exit_code == 0, first.output
    assert "imported 308 memories, skipped 0" in first.output
    again = runner.invoke(cli, ["import", str(path), "--user", "u", "--db", db])
    assert again.exit_code == 0, again.output
    assert "imported 0 memories, skipped 308" in again.output
    assert _count(db, "u") == 305 and _count(db, "other") == 3
    # The same rows for another user are that user's own: not skipped.
    moved = _jsonl(tmp_path / "n.jsonl", [_dated(i, user="x") for i in range(3)])
    assert "imported 3 memories" in runner.invoke(cli, ["import", str(moved), "--db", db]).output


def test_import_failure_while_writing_resumes_without_duplicates(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram.errors import StoreUnavailable
    from engram.memory import Memory

    path = _jsonl(tmp_path / "m.jsonl", [_dated(i) for i in range(100)])
    original = Memory.add_many
    calls = []

    def flaky(self: Memory, items: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise StoreUnavailable("disk went away")
        return original(self, items)

    monkeypatch.setattr(Memory, "add_many", flaky)
    failed = CliRunner().invoke(cli, ["import", str(path), "--user", "u", "--batch", "30", "--db", db])
    assert failed.exit_code != 0
    assert f"{path}:61-90: disk went away" in failed.output and "60 rows before line 61" in failed.output
    monkeypatch.setattr(Memory, "add_many", original)
    resumed = CliRunner().invoke(cli, ["import", str(path), "--user", "u", "--batch", "30", "--db", db])
    assert "imported 40 memories, skipped 60" in resumed.output, resumed.output
    assert _count(db) == 100


def test_dates_and_times_without_an_offset_are_local_time(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # People type "--created-at 2026-11-10"; it was refused for lacking a time zone (issue 16).
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        added = CliRunner().invoke(cli, ["add", "Acme called", "--user", "u", "--created-at", "2026-11-10", "--db", db])
        assert added.exit_code == 0, added.output
        with Memory(db) as memory:
            stored = memory.get(added.output.strip(), user_id="u")
        assert stored is not None and stored.created_at == datetime(2026, 11, 10, 5, 0, tzinfo=UTC)
        bad = CliRunner().invoke(cli, ["add", "x", "--user", "u", "--created-at", "yesterday", "--db", db])
        assert bad.exit_code != 0 and "created_at" in str(bad.exception or bad.output)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_the_embedder_is_a_documented_setting_not_a_hidden_flag(tmp_path: Path) -> None:
    from engram.embedders import named_embedder
    from engram.embedders.fake import FakeEmbedder
    from engram.errors import ValidationError

    assert named_embedder(None) is None and named_embedder("minilm") is None
    hashed = named_embedder("hash-16")
    assert isinstance(hashed, FakeEmbedder) and hashed.dimensions == 16
    for bad in ("hash-0", "hash-x", "bogus"):
        with pytest.raises(ValidationError):
            named_embedder(bad)
    db = str(tmp_path / "e.db")
    Memory(db).close()
    refused = CliRunner().invoke(cli, ["serve", "--db", db, "--embedder", "bogus"])
    assert refused.exit_code == 2 and "--embedder" in refused.output and "hash-N" in refused.output
    assert "--fake-embedder" not in CliRunner().invoke(cli, ["serve", "--help"]).output


def test_explain_says_the_time_range_and_what_was_left_out(db: str) -> None:
    runner = CliRunner()
    for i, when in enumerate(["2026-11-10T09:00:00+00:00", "2026-11-11T09:00:00+00:00", "2026-10-01T09:00:00+00:00"]):
        added = runner.invoke(cli, ["add", f"Bob asked about invoice {i}", "--user", "u1", "--created-at", when,
                                    "--db", db])
        assert added.exit_code == 0, added.output
    found = runner.invoke(cli, ["search", "What did Bob ask last week?", "--user", "u1", "--top-k", "1",
                                "--now", "2026-11-18T12:00:00+00:00", "--db", db])
    assert found.exit_code == 0, found.output
    assert "time range ('last week'): 2026-11-09" in found.output
    assert "left out: " in found.output and "beyond top k" in found.output


def test_explain_says_which_names_the_meaning_was_read_half_without(db: str) -> None:
    runner = CliRunner()
    for i, text in enumerate(["Bob asked for the invoice totals", "Bob is away on Friday", "Bob likes tea"]):
        added = runner.invoke(cli, ["add", text, "--user", "u1", "--created-at", f"2026-11-1{i}T09:00:00+00:00",
                                    "--db", db])
        assert added.exit_code == 0, added.output
    found = runner.invoke(cli, ["search", "What did Bob say about the invoice totals?", "--user", "u1",
                                "--now", "2026-11-18T12:00:00+00:00", "--db", db])
    assert found.exit_code == 0, found.output
    assert "meaning read half without: Bob" in found.output
