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
