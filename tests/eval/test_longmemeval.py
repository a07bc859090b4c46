"""The LongMemEval adapter and the ``engram eval longmemeval`` command, end to end on a tiny dataset."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.eval import longmemeval
from engram.eval.runner import retrieval_config

FILLER = [
    ("sharegpt_cook", [("user", "How long should I roast a chicken at 200 degrees?"),
                       ("assistant", "About 20 minutes per 500 grams plus 20 minutes.")]),
    ("sharegpt_code", [("user", "Why does my Python loop never terminate?"),
                       ("assistant", "Check that the loop variable changes inside the loop.")]),
    ("sharegpt_trip", [("user", "Which museums in Lisbon open on Mondays?"),
                       ("assistant", "The Gulbenkian is closed on Tuesdays, not Mondays."),
                       ("user", "")]),  # an empty turn: skipped, never indexed
]


def _session(turns: list[tuple[str, str]], gold: int | None = None) -> list[dict[str, Any]]:
    return [{"role": role, "content": text, "has_answer": i == gold} for i, (role, text) in enumerate(turns)]


def _item(qid: str, qtype: str, question: str, answer_turns: list[tuple[str, str]], gold: int) -> dict[str, Any]:
    sessions = [_session(turns) for _, turns in FILLER]
    ids = [sid for sid, _ in FILLER]
    sessions.insert(1, _session(answer_turns, gold))
    ids.insert(1, f"answer_{qid}_1")
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "n/a",
        "answer_session_ids": [f"answer_{qid}_1"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:15", "2023/05/22 (Mon) 18:40",
                           "2023/05/23 (Tue) 07:05"],
        "haystack_session_ids": ids,
        "haystack_sessions": sessions,
    }


ITEMS = [
    _item("q_user", "single-session-user", "What is the name of my pet iguana?",
          [("user", "I just adopted a pet iguana and named him Ziggy."), ("assistant", "Ziggy is a great name!")], 0),
    _item("q_asst", "single-session-assistant", "What mnemonic did you suggest for the planets?",
          [("user", "Help me remember the order of the planets."),
           ("assistant", "Try the mnemonic: My Very Educated Mother Just Served Us Nachos.")], 1),
    _item("q_user_abs", "single-session-user", "What is the name of my pet tortoise?",
          [("user", "I just adopted a pet iguana and named him Ziggy."), ("assistant", "Nice.")], 0),
]


@pytest.fixture
def dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENGRAM_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "tiny.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(ITEMS, handle)
    return path


def test_parse_date_reads_the_dataset_format_as_utc() -> None:
    assert longmemeval.parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    with pytest.raises(ValueError):
        longmemeval.parse_date("May 20th")


def test_adapter_builds_cases(dataset: Path) -> None:
    cases = list(longmemeval.cases(dataset))
    assert [c.question_id for c in cases] == ["q_user", "q_asst"]  # _abs skipped
    first = cases[0]
    assert first.now == datetime(2023, 6, 1, 10, 0, tzinfo=UTC)
    assert first.gold_turns == {"answer_q_user_1:0"}
    assert first.gold_sessions == {"answer_q_user_1"}
    assert len(first.documents) == 8  # nine turns, one empty
    doc = next(d for d in first.documents if d.doc_id == "answer_q_user_1:0")
    assert (doc.session_id, doc.role) == ("answer_q_user_1", "user")
    assert doc.created_at == datetime(2023, 5, 21, 9, 15, tzinfo=UTC)
    assert len(list(longmemeval.cases(dataset, include_abstention=True))) == 3
    assert len(list(longmemeval.cases(dataset, limit=1))) == 1


def test_adapter_keeps_doc_ids_unique_when_a_session_recurs() -> None:
    item = _item("dup", "multi-session", "q?", [("user", "x")], 0)
    item["haystack_session_ids"][3] = item["haystack_session_ids"][0]
    (case,) = longmemeval.cases([item])
    ids = [d.doc_id for d in case.documents]
    assert len(ids) == len(set(ids))
    assert "sharegpt_cook#2:0" in ids


def _run(dataset: Path, tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["eval", "longmemeval", str(dataset), "--json", str(out), *args])
    assert result.exit_code == 0, result.output
    assert "overall" in result.output
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_cli_end_to_end(dataset: Path, tmp_path: Path) -> None:
    report = _run(dataset, tmp_path)
    assert report["protocol"]["k"] == [5, 10, 50]
    assert report["protocol"]["session_k"] == [5, 10]
    assert report["protocol"]["systems"] == ["engram", "bm25", "dense", "rrf"]
    assert report["protocol"]["config"]["clip_sentences"] is None
    assert report["protocol"]["config"]["top_k"] == 50
    assert [q["question_id"] for q in report["questions"]] == ["q_user", "q_asst"]
    for system in ("engram", "bm25", "dense", "rrf"):
        turn = report["summary"][system]["turn"]
        # the assistant-only answer is not indexed with user turns: excluded, not scored 0
        assert (turn["overall"]["n"], turn["overall"]["excluded"]) == (1, 1)
        assert set(turn["by_type"]) == {"single-session-user", "single-session-assistant"}
        assert {"recall_all@5", "recall_any@50", "ndcg_any@10"} <= set(turn["overall"])
        assert report["summary"][system]["session"]["overall"]["n"] == 2
    q_user = report["questions"][0]
    assert q_user["indexed"] == 4  # user turns only
    assert q_user["gold_turns"] == ["answer_q_user_1:0"]
    dense = q_user["systems"]["dense"]
    assert dense["metrics"]["turn"]["recall_all@5"] == 1.0
    assert dense["metrics"]["session"]["recall_any@5"] == 1.0
    assert dense["ranked"][0] == "answer_q_user_1:0"
    assert report["questions"][1]["systems"]["dense"]["metrics"]["turn"] is None
    assert report["cache"]["misses"] > 0
    assert report["timing"]["questions"] == 2

    again = _run(dataset, tmp_path)
    assert again["cache"]["misses"] == 0  # every text and question came from the on-disk cache
    assert again["questions"][0]["systems"]["dense"]["ranked"] == dense["ranked"]


def test_cli_index_all_and_session_granularity(dataset: Path, tmp_path: Path) -> None:
    report = _run(dataset, tmp_path, "--index", "all", "--systems", "dense,bm25", "--k", "1,3")
    assert report["summary"]["dense"]["turn"]["overall"]["n"] == 2  # the assistant answer is indexed now
    assert report["questions"][1]["gold_turns"] == ["answer_q_asst_1:1"]
    assert report["questions"][1]["systems"]["dense"]["metrics"]["turn"]["recall_any@3"] == 1.0

    report = _run(dataset, tmp_path, "--granularity", "session", "--config", "fusion=rrf")
    assert report["protocol"]["levels"] == ["session"]
    assert report["protocol"]["k"] == [5, 10]
    assert report["protocol"]["config"]["fusion"] == "rrf"
    assert report["questions"][0]["indexed"] == 4  # one document per session
    assert report["questions"][0]["systems"]["dense"]["metrics"]["session"]["recall_all@5"] == 1.0


def test_cli_refuses_bad_settings(dataset: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", "longmemeval", str(dataset), "--config", "min_score=0.5"])
    assert result.exit_code != 0
    assert "fixed by the evaluation protocol" in result.output
    result = runner.invoke(cli, ["eval", "longmemeval", str(dataset), "--systems", "magic"])
    assert result.exit_code != 0
    with pytest.raises(ValueError):
        retrieval_config(10, {"no_such_setting": 1})
