"""The integrations sit on top of the core: no core module imports them or their frameworks, so
``pip install engram-retrieval`` works without LangGraph or LangChain."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langgraph", "langchain_core", "langchain", "langsmith")


def test_no_core_module_names_an_integration_or_a_framework() -> None:
    pattern = re.compile(r"^\s*(from|import)\s+(engram\.integrations|langgraph|langchain\w*)\b", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "engram").rglob("*.py")
        if "integrations" not in path.relative_to(ROOT / "engram").parts and pattern.search(path.read_text())
    ]
    assert offenders == []


def test_importing_every_core_module_loads_no_framework() -> None:
    script = """
import importlib, json, pkgutil, sys
import engram
for info in pkgutil.walk_packages(engram.__path__, "engram."):
    if not info.name.startswith("engram.integrations"):
        importlib.import_module(info.name)
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert loaded.isdisjoint(FRAMEWORKS), loaded & set(FRAMEWORKS)
    # And the package itself stays light: naming it loads no framework until a module is chosen.
    out = subprocess.run(
        [sys.executable, "-c", "import sys, engram.integrations; print(sorted(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    assert not any(name.split(".")[0] in FRAMEWORKS for name in json.loads(out.stdout.replace("'", '"')))
