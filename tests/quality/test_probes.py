"""The probe sets load whole and are labelled consistently (scoring them needs the model: bench/quality.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.eval.probes import load_probe, main, overall, probe_files, questions, scores
from engram.eval.scenarios import QuestionResult, ScenarioQuestion, ScenarioReport
from engram.model import KINDS


def test_there_are_probe_sets_of_seventy_three_users_and_2673_questions() -> None:
    scenarios = [load_probe(path) for path in probe_files()]
    assert [path.name for path in probe_files()] == [
        "agent_fact_store_five_users.json", "agent_fact_store_six_assistants.json",
        "agent_fact_store_team_and_households.json", "agent_memory_graph_five_apps.json",
        "assistant_changing_plans.json", "assistant_coding_group.json",
        "coding_assistant_instructions.json",
        "daily_texting_three_weeks.json", "everyday_assistant_histories.json", "family_travel_bookclub.json",
        "five_housemates_group_chat.json", "five_teammates_club_season_group_chat.json", "friends_and_flatmates.json",
        "group_texts.json",
        "long_history_general_tasks.json", "one_developer_months_with_coding_assistant.json",
        "one_user_months_freelancer_assistant.json",
        "one_user_renovation_and_wedding_assistant.json", "one_user_year_with_assistant.json",
        "pairs_chatting_over_months.json",
        "personal_assistant_histories.json", "technical_assistant_chats.json", "technical_chats_ml_devops_mobile.json",
        "technical_chats_sql_android_security.json", "three_old_friends_chatting_a_year.json",
        "two_cousins_messaging_a_year.json", "two_friends_long_conversation.json",
        "two_neighbours_then_long_distance.json"]
    # each file is loaded into a store of its own, so a name may recur across files
    assert sum(len({m.user_id for m in s.memories}) for s in scenarios) == 73
    assert sum(len(s.questions) for s in scenarios) == 2673  # as docs/evaluation.md quotes


@pytest.mark.parametrize("path", probe_files(), ids=lambda path: path.stem)
def test_every_gold_key_is_a_memory_of_the_asker_said_before_now(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert all(bool(m.get("role")) == (m.get("kind", "message") == "message") for m in raw["memories"])
    scenario = load_probe(path)
    owner = {memory.key: memory.user_id for memory in scenario.memories}
    assert len(owner) == len(raw["memories"])  # keys are unique
    assert all(memory.created_at < scenario.now and memory.kind in KINDS for memory in scenario.memories)
    for question in scenario.questions:
        assert question.gold and all(owner.get(key) == question.user_id for key in question.gold), question.qid


def test_a_probe_file_that_says_more_than_is_read_is_refused(tmp_path: Path) -> None:
    memory = {"key": "a", "user_id": "u", "kind": "fact", "content": "x", "created_at": "2026-01-01T00:00:00Z"}
    question = {"user_id": "u", "text": "x?", "gold": ["a"], "type": "t"}
    cases = {
        "entities": ({**memory, "entities": ["e"]}, question, "unknown fields"),
        "role": ({**memory, "role": "user"}, question, "a message has a role"),
        "no role": ({**memory, "kind": "message"}, question, "a message has a role"),
        "zone": ({**memory, "created_at": "2026-01-01T00:00:00"}, question, "no time zone"),
        "filters": (memory, {**question, "filters": {}}, "unknown fields"),
    }
    for name, (bad_memory, bad_question, problem) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"now": "2026-02-01T00:00:00Z", "memories": [bad_memory],
                                    "questions": [bad_question]}), encoding="utf-8")
        with pytest.raises(ValueError, match=problem):
            load_probe(path)


def test_outside_a_checkout_it_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert probe_files(tmp_path) == []
    monkeypatch.setattr("engram.eval.probes.probe_files", lambda folder=None: [])
    assert main([]) == 1
    assert "no probe sets" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--k", "0"])


def test_overall_averages_every_question_of_every_set() -> None:
    def result(recall: float, hit: float) -> QuestionResult:
        question = ScenarioQuestion("q", "u", "c", "text", ("g",))
        return QuestionResult(question, {"engram": ()}, {"engram": recall}, {"engram": hit}, ())

    reports = [ScenarioReport(10, ("engram",), ("c",), (result(1.0, 1.0),)),
               ScenarioReport(10, ("engram",), ("c",), (result(0.5, 0.0), result(0.0, 0.0)))]
    assert overall(reports) == "n=3  engram 0.500 / 0.333"
    assert overall([]) == "no questions"
    # What bench/quality.py writes to its JSON.
    assert scores(reports) == {"engram": {"recall": 0.5, "hit@1": 1 / 3, "n": 3}}
    assert scores([]) == {}


def test_each_questions_result_is_written_to_compare_runs() -> None:
    question = ScenarioQuestion("f:1", "u", "when", "When?", ("a", "b"))
    result = QuestionResult(question, {"engram": ("a", "x", "b"), "dense": ("x",)}, {"engram": 0.5, "dense": 0.0},
                            {"engram": 1.0, "dense": 0.0}, ())
    report = ScenarioReport(2, ("engram", "dense"), ("when",), (result,))
    assert questions(2, [(Path("probes/f.json"), report)]) == [{
        "k": 2, "file": "f", "id": "f:1", "type": "when", "text": "When?", "gold": ["a", "b"],
        "ranked": {"engram": ["a", "x"], "dense": ["x"]}, "recall": {"engram": 0.5, "dense": 0.0},
        "hit@1": {"engram": 1.0, "dense": 0.0}}]
