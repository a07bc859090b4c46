"""docs/from-zep.md's example runs as written and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "from-zep.md"


def test_the_from_zep_example_runs_and_answers_current_and_past_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = GUIDE.read_text().split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(GUIDE), "exec"), {"__name__": "from_zep"})
    printed = out.getvalue()
    assert "Jane: I just moved to Lisbon" in printed
    assert "['Jane lives in Lisbon']" in printed and "['Jane lives in Porto']" in printed
    assert os.path.exists(tmp_path / "agent.db")
