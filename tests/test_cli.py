"""The CLI mirrors the facade: add, import, search, stats, forget-user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

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
    assert "deleted 1 memories" in forgot.output


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
