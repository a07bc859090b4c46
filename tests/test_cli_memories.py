"""The everyday commands of issue 16: list, get, update, delete, search's filters, and output that
reads well both at a terminal and in a pipe."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from engram import Memory
from engram.cli import LAZY_COMMANDS, cli
from engram.cli.common import local_time
from engram.errors import ValidationError

FACT = {"subject": "acme", "predicate": "payment terms", "kind": "fact"}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


@pytest.fixture
def ids(db: str) -> dict[str, str]:
    """Seven memories of u over five days (one superseded), and one of someone else."""
    rows = [
        {"content": "Kickoff call with Acme", "session_id": "s1", "created_at": "2024-01-01T09:00:00Z"},
        {"content": "Acme pays NET30", "tags": ["billing"], "created_at": "2024-01-02T09:00:00Z", **FACT},
        {"content": "Acme asked for a discount\nand a call", "tags": ["billing", "sales"], "session_id": "s1",
         "created_at": "2024-01-03T09:00:00Z"},
        {"content": "Acme pays NET45", "tags": ["billing"], "created_at": "2024-01-04T09:00:00Z", **FACT},
        {"content": "Send the contract", "kind": "procedure", "created_at": "2024-01-05T09:00:00Z"},
        {"content": "Ship the order", "session_id": "s2", "created_at": "2024-01-05T18:00:00Z"},
    ]
    with Memory(db) as memory:
        added = memory.add_many([{"user_id": "u", "kind": "message", **row} for row in rows])
        memory.add("Acme is someone else's customer too", user_id="other")
    names = ["kickoff", "net30", "discount", "net45", "contract", "ship"]
    return dict(zip(names, (record.id for record in added), strict=True))


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def listed(*args: str) -> list[list[str]]:
    result = run("list", "--user", "u", *args)
    assert result.exit_code == 0, result.output
    return [line.split("\t") for line in result.stdout.splitlines()]


@pytest.fixture
def utc_clock() -> Iterator[None]:
    # Dates typed without an offset are local time: pin the zone so the test means one instant.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "UTC")
        time.tzset()
        yield
    time.tzset()


# -- list -------------------------------------------------------------------------------------------


def test_list_is_newest_first_one_tab_separated_line_per_memory(db: str, ids: dict[str, str]) -> None:
    rows = listed("--db", db)
    assert [row[0] for row in rows] == [ids[n] for n in ("ship", "contract", "net45", "discount", "kickoff")]
    assert all(len(row) == 6 for row in rows)  # id, created_at, kind, status, tags, content
    discount = rows[3]
    assert discount[1:] == ["2024-01-03T09:00:00+00:00", "message", "active", "billing,sales",
                            "Acme asked for a discount\\nand a call"]  # the newline escaped: still one line


def test_list_filters(db: str, ids: dict[str, str], utc_clock: None) -> None:
    def names(*args: str) -> list[str]:
        by_id = {v: k for k, v in ids.items()}
        return [by_id[row[0]] for row in listed("--db", db, *args)]

    assert names("--kind", "fact") == ["net45"]
    assert names("--kind", "fact", "--kind", "procedure") == ["contract", "net45"]
    assert names("--tag", "billing") == ["net45", "discount"]
    assert names("--tag", "billing", "--tag", "sales") == ["discount"]
    assert names("--session", "s1") == ["discount", "kickoff"]
    assert names("--status", "superseded") == ["net30"]
    assert names("--status", "all") == ["ship", "contract", "net45", "discount", "net30", "kickoff"]
    assert names("--since", "2024-01-03", "--until", "2024-01-04T12:00") == ["net45", "discount"]
    assert names("--until", "2024-01-05") == ["ship", "contract", "net45", "discount", "kickoff"]  # the whole day
    assert names("--since", "2024-01-05T11:00:00+01:00") == ["ship"]  # 10:00 UTC


def test_list_pages_and_json(db: str, ids: dict[str, str]) -> None:
    assert [row[0] for row in listed("--db", db, "--limit", "2", "--offset", "2")] == [ids["net45"], ids["discount"]]
    assert listed("--db", db, "--offset", "99") == []
    result = run("list", "--user", "u", "--db", db, "--json", "--limit", "3")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in records] == [ids["ship"], ids["contract"], ids["net45"]]
    assert records[2]["subject"] == "acme" and records[2]["tags"] == ["billing"]
    others = run("list", "--user", "other", "--db", db, "--json").stdout.splitlines()
    assert [json.loads(line)["user_id"] for line in others] == ["other"]


def test_list_at_a_terminal_is_a_table_with_a_paging_hint(
    db: str, ids: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engram.cli.output.at_terminal", lambda: True)
    monkeypatch.setattr("engram.cli.memories.at_terminal", lambda: True)
    result = CliRunner(env={"COLUMNS": "160"}).invoke(cli, ["list", "--user", "u", "--db", db, "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "┃ id" in result.stdout and "Ship the order" in result.stdout
    assert "2 memories from 1; more with --offset 2" in result.stderr


def test_piped_rows_are_never_wrapped(db: str) -> None:
    long = "Acme" + " and more detail" * 40
    assert run("add", long, "--user", "u", "--db", db).exit_code == 0
    rows = listed("--db", db)
    assert len(rows) == 1 and rows[0][5] == long


def test_list_refuses_a_bad_filter_by_name(db: str, ids: dict[str, str]) -> None:
    bad = run("list", "--user", "u", "--db", db, "--since", "last tuesday")
    assert bad.exit_code != 0 and "created_after" in str(bad.exception)
    assert run("list", "--user", "u", "--db", db, "--status", "gone").exit_code == 2


# -- get, update, delete ----------------------------------------------------------------------------


def test_get_shows_fields_and_links(db: str, ids: dict[str, str]) -> None:
    result = run("get", ids["net45"], "--user", "u", "--db", db)
    assert result.exit_code == 0, result.output
    fields = dict(line.split("\t", 1) for line in result.stdout.splitlines() if not line.startswith("link\t"))
    assert fields["content"] == "Acme pays NET45" and fields["tags"] == "billing" and fields["kind"] == "fact"
    assert f"link\tsupersedes -> {ids['net30']}" in result.stdout.splitlines()
    as_json = json.loads(run("get", ids["net45"], "--user", "u", "--db", db, "--json").stdout)
    assert as_json["id"] == ids["net45"] and as_json["predicate"] == "payment terms"


def test_get_an_unknown_or_someone_elses_memory_is_a_clear_error(db: str, ids: dict[str, str]) -> None:
    for user in ("other", "nobody"):
        result = run("get", ids["net45"], "--user", user, "--db", db)
        assert result.exit_code == 1 and f"no memory {ids['net45']} for user {user}" in result.output


def test_history_lists_each_change_oldest_first(db: str, ids: dict[str, str]) -> None:
    edit = "Acme wants 5% off\nby Friday"
    assert run("update", ids["discount"], "--user", "u", "--db", db, "--content", edit).exit_code == 0
    result = run("history", ids["discount"], "--user", "u", "--db", db)
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[1] for row in rows] == ["add", "update"]
    # The edit erased the replaced text (history keeps what changed, not what was removed); newlines escaped.
    assert rows[1][3:] == ["", "Acme wants 5% off\\nby Friday"]
    events = [json.loads(line) for line in run("history", ids["discount"], "--user", "u", "--db", db,
                                                "--json").stdout.splitlines()]
    assert [(e["event"], e["after"]) for e in events] == [("add", None), ("update", edit)]
    assert "content" in events[1]["fields"] and events[0]["at"] <= events[1]["at"]
    unknown = run("history", ids["discount"], "--user", "other", "--db", db)
    assert unknown.exit_code == 1 and f"no memory {ids['discount']} for user other" in unknown.output


def test_update_changes_only_what_is_given(db: str, ids: dict[str, str]) -> None:
    result = run("update", ids["discount"], "--user", "u", "--db", db, "--content", "Acme wants 5% off",
                 "--tag", "sales", "--importance", "0.9", "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert (record["content"], record["tags"], record["importance"]) == ("Acme wants 5% off", ["sales"], 0.9)
    assert record["session_id"] == "s1" and record["created_at"] == "2024-01-03T09:00:00+00:00"
    cleared = json.loads(run("update", ids["discount"], "--user", "u", "--db", db, "--no-tags", "--json").stdout)
    assert cleared["tags"] == [] and cleared["content"] == "Acme wants 5% off"
    with Memory(db) as memory:
        assert memory.get(ids["discount"], user_id="u").content == "Acme wants 5% off"


def test_update_refuses_nothing_to_change_and_bad_values(db: str, ids: dict[str, str]) -> None:
    nothing = run("update", ids["ship"], "--user", "u", "--db", db)
    assert nothing.exit_code == 2 and "nothing to change" in nothing.output
    both = run("update", ids["ship"], "--user", "u", "--db", db, "--tag", "x", "--no-tags")
    assert both.exit_code == 2
    bad = run("update", ids["ship"], "--user", "u", "--db", db, "--importance", "7")
    assert bad.exit_code != 0 and "importance" in str(bad.exception)
    assert run("update", ids["ship"], "--user", "other", "--db", db, "--content", "x").exit_code == 1


def test_update_created_at_without_an_offset_is_local_time(db: str, ids: dict[str, str]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "America/New_York")
        time.tzset()
        result = run("update", ids["ship"], "--user", "u", "--db", db, "--created-at", "2026-11-10", "--json")
    time.tzset()
    assert json.loads(result.stdout)["created_at"] == "2026-11-10T05:00:00+00:00"


def test_delete_asks_first(db: str, ids: dict[str, str]) -> None:
    kept = run("delete", ids["ship"], "--user", "u", "--db", db, input="n\n")
    assert kept.exit_code == 0 and "Ship the order" in kept.output and "nothing deleted" in kept.output
    assert run("get", ids["ship"], "--user", "u", "--db", db).exit_code == 0
    gone = run("delete", ids["ship"], "--user", "u", "--db", db, input="y\n")
    assert gone.exit_code == 0 and f"deleted {ids['ship']}" in gone.output
    assert run("get", ids["ship"], "--user", "u", "--db", db).exit_code == 1
    again = run("delete", ids["ship"], "--user", "u", "--db", db, "--yes")
    assert again.exit_code == 1 and "no memory" in again.output


def test_deleting_the_newest_fact_makes_the_older_current(db: str, ids: dict[str, str]) -> None:
    assert run("delete", ids["net45"], "--user", "u", "--db", db, "--yes").exit_code == 0
    assert [row[0] for row in listed("--db", db, "--kind", "fact")] == [ids["net30"]]


# -- search's filters -------------------------------------------------------------------------------


def search(db: str, *args: str) -> list[dict[str, object]]:
    result = run("search", "What did Acme say about payment and the contract?", "--user", "u", "--db", db,
                 "--format", "json", "--now", "2024-01-06T00:00:00Z", *args)
    assert result.exit_code == 0, result.output
    memories: list[dict[str, object]] = json.loads(result.stdout)["memories"]
    return memories


def test_search_filters(db: str, ids: dict[str, str]) -> None:
    everything = {m["id"] for m in search(db, "--min-score", "0")}
    assert ids["net45"] in everything and ids["net30"] not in everything  # superseded: not current
    assert {m["id"] for m in search(db, "--min-score", "0", "--kind", "fact")} == {ids["net45"]}
    assert {m["id"] for m in search(db, "--min-score", "0", "--tag", "sales")} == {ids["discount"]}
    assert {m["id"] for m in search(db, "--min-score", "0", "--session", "s1")} <= {ids["discount"], ids["kickoff"]}
    assert len(search(db, "--min-score", "0", "--top-k", "1")) == 1
    assert search(db, "--min-score", "1") == []


def test_search_as_of_answers_from_the_past(db: str, ids: dict[str, str], utc_clock: None) -> None:
    then = {m["id"] for m in search(db, "--min-score", "0", "--kind", "fact", "--as-of", "2024-01-03")}
    assert then == {ids["net30"]}


# -- help, examples, start-up -----------------------------------------------------------------------

EVERYDAY = ["add", "list", "get", "update", "delete", "search", "import", "stats", "forget-user"]


@pytest.mark.parametrize("name", EVERYDAY)
def test_every_everyday_command_has_an_example(name: str) -> None:
    result = run(name, "--help")
    assert result.exit_code == 0 and "Example" in result.output and f"engram {name} " in result.output


def test_options_that_take_a_time_say_local_time() -> None:
    context = click.Context(cli)
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        groups = command.commands.values() if isinstance(command, click.Group) else [command]
        for sub in groups:
            for param in sub.params:
                if param.name in ("created_at", "since", "until", "as_of", "now"):
                    assert "local time" in (getattr(param, "help", "") or ""), (name, sub.name, param.name)


def test_local_time_reads_dates_as_people_type_them(utc_clock: None) -> None:
    assert local_time("2026-11-10") == "2026-11-10T00:00:00+00:00"
    assert local_time("2026-11-10", end_of_day=True) == "2026-11-10T23:59:59.999999+00:00"
    assert local_time("2026-11-10T08:00:00Z", end_of_day=True) == "2026-11-10T08:00:00+00:00"
    assert local_time("2026-11-10T08:00:00+02:00") == "2026-11-10T08:00:00+02:00"
    assert local_time("soon") == "soon"  # left for the typed error that names the field
    assert local_time(None) is None


def test_lazily_loaded_commands_are_listed_as_they_describe_themselves() -> None:
    # `engram --help` shows LAZY_COMMANDS' summaries without importing the commands; they must not drift.
    context = click.Context(cli)
    for name, (_, summary) in LAZY_COMMANDS.items():
        command = cli.get_command(context, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(300) == click.Command(name, help=summary).get_short_help_str(300)


HEAVY = ("numpy", "onnxruntime", "fastapi", "uvicorn", "starlette", "pydantic", "rich", "engram.memory",
         "engram.retrieve", "engram.documents", "engram.tune", "engram.stores")


def test_help_imports_neither_numpy_nor_the_web_stack_nor_the_engine() -> None:
    # `engram --help` took ~0.8 s importing FastAPI and numpy it never used (issue 16): -X importtime
    # lists every module the run imported.
    run_help = subprocess.run([sys.executable, "-X", "importtime", "-m", "engram.cli", "--help"],
                              capture_output=True, text=True, check=True)
    assert "Commands:" in run_help.stdout and "serve" in run_help.stdout
    imported = {line.split("|")[-1].strip() for line in run_help.stderr.splitlines() if line.startswith("import time:")}
    assert "engram.cli" in imported and "click" in imported  # the check sees what it should
    assert sorted(m for m in imported if any(m == h or m.startswith(h + ".") for h in HEAVY)) == []


def test_get_at_a_terminal_is_a_readable_grid(db: str, ids: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engram.cli.output.at_terminal", lambda: True)
    result = CliRunner(env={"COLUMNS": "160"}).invoke(cli, ["get", ids["net45"], "--user", "u", "--db", db])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(line.split() == ["content", "Acme", "pays", "NET45"] for line in lines), lines
    assert "\t" not in result.stdout


# -- sentences that read right ----------------------------------------------------------------------


def test_counts_read_as_sentences() -> None:
    from engram.cli.output import plural

    assert (plural(1, "version"), plural(2, "version"), plural(0, "memory", "memories")) == (
        "1 version", "2 versions", "0 memories")


def test_tune_says_what_it_saved_and_never_contradicts_itself() -> None:
    from engram.tune import StrategyFit, TuneReport
    from engram.tune_cli import render

    weights = {"importance": 1.0}
    kept = StrategyFit("procedural", weights, weights, 40, 10, kept=True, reason="better", evaluated=True)
    lost = StrategyFit("exploratory", weights, weights, 40, 10, reason="not better", evaluated=True)
    scant = StrategyFit("factual_entity_focused", weights, weights, 3, 1, reason="too few")
    assert render(TuneReport("u", 1, (kept, lost))).splitlines()[0] == "1 retrieval with feedback for u"
    assert render(TuneReport("u", 50, (kept, lost), saved=True)).endswith(
        "saved tuned weights for procedural and the defaults for exploratory")
    assert render(TuneReport("u", 4, (scant,), saved=True)).endswith("nothing saved: weights stay as they were")
    assert render(TuneReport("u", 50, (kept,), saved=False)).endswith("dry run: nothing saved")
    nothing = render(TuneReport("u", 0, (), saved=True))
    assert "nothing to tune, nothing saved" in nothing and "\nsaved" not in nothing


def test_list_json_lines_import_into_another_store(db: str, ids: dict[str, str], tmp_path: Path) -> None:
    runner = CliRunner()
    exported = runner.invoke(cli, ["list", "--user", "u", "--json", "--status", "all", "--db", db])
    assert exported.exit_code == 0, exported.output
    path = tmp_path / "export.jsonl"
    path.write_text(exported.output, encoding="utf-8")
    other = str(tmp_path / "other.db")
    imported = runner.invoke(cli, ["import", str(path), "--db", other])
    assert imported.exit_code == 0, imported.output
    again = runner.invoke(cli, ["list", "--user", "u", "--json", "--status", "all", "--db", other])

    def key(line: str) -> tuple[str, str, str, str]:
        item = json.loads(line)
        return item["id"], item["content"], item["created_at"], item["status"]

    assert len(exported.output.splitlines()) == len(ids)
    assert sorted(map(key, again.output.splitlines())) == sorted(map(key, exported.output.splitlines()))


def test_a_time_at_the_ends_of_the_calendar_is_a_typed_error_not_a_traceback(db: str) -> None:
    # A naive "0001-01-01" taken as local time fell off the calendar inside astimezone (ValueError).
    for args in (("add", "x", "--user", "u", "--created-at", "0001-01-01"), ("list", "--user", "u", "--since",
                 "0001-01-01"), ("search", "x", "--user", "u", "--as-of", "0001-01-01")):
        result = run(*args, "--db", db)
        assert result.exit_code != 0 and isinstance(result.exception, ValidationError), result.exception
        assert result.exception.field in ("created_at", "filters.created_after", "as_of")  # what main() prints
