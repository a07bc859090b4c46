"""Probe sets: chat histories and questions written by someone who had not read Engram's code.

The dev sets and the everyday scenario set have been read question by question while ranking was
tuned; these were written afterwards, to the brief "realistic, varied and hard", by a writer who saw
no code. Each file in ``tests/quality/probes/`` is one JSON object: ``now``, ``memories`` (``key``,
``user_id``, ``kind``, ``content``, ``created_at``, ``role`` for messages, ``session_id`` where the
chat has sessions) and ``questions`` (``user_id``, ``text``, ``gold`` keys, ``type``). Sixty-eight
users in twenty-seven files, each file written by a different writer:

- an assistant chat in sessions, many of its exchanges short ("Which airport do you usually fly
  from?" / "Usually Gatwick."), plans that change; a coding chat without sessions (pasted code and
  tracebacks of 500-2,000 characters, standing instructions said once); a four-person group chat
  (dates said as "next Friday", photos);
- a health and family chat without sessions (doses and weights that change), a travel and work chat
  with facts, episodes, procedures and a 2,100-character itinerary; a book club over five months;
- long chats with a personal assistant whose plans keep changing (a care home, a board game's
  crowdfunding, a second-hand yacht): dates moved, prices renegotiated, the newest telling short and
  worded unlike the first, with many "why" questions;
- long coding-assistant chats (replies of 1,500-3,500 characters with code; a data engineer, an
  Android developer, an SRE), standing instructions said once in passing and asked for by requests;
- texting with no assistant (a family, two flatmates, a repair café's volunteers), short messages;
- long histories of general tasks (recipes, comparisons, cover letters) where personal details
  surface in passing, LongMemEval-like, with questions about what the assistant said;
- chats between friends and flatmates over months, in dated sessions, no assistant (two friends,
  two more, three flatmates; shared photos described in the text), asked about in the third person;
- long technical assistant chats (a frontend developer, an ML engineer, a platform engineer):
  replies of 1,300-3,400 characters, pasted logs and configs, instructions said once in passing.
- three weeks of daily texting (a couple apart, two sisters caring for their father, four
  colleagues): 1,138 messages, most under 120 characters, answers that need the turn before;
- technical assistant chats of a data analyst, an Android developer and a security engineer:
  replies of ~2,100 characters, standing rules said once and changed later, tools switched;
- personal-assistant histories over 6-10 months of everyday tasks, facts said in passing and
  changed, stale fact memories beside the newer tellings;
- pairs of friends and relatives chatting over 4-7 months in 13-16 sittings each, no assistant
  (1,255 messages; shared photos captioned in the text, dates said relatively, plans cancelled);
- technical assistant chats of an ML engineer, a platform engineer and a React Native developer:
  replies of ~2,150 characters, instructions said mid-message and replaced, tools switched, stale
  facts and procedures;
- everyday assistant histories over 5-8 months in 40-45 sessions each, facts said in passing and
  changed, others' near-miss facts, stale extracted facts;
- three large histories, one user each, at real chat lengths: two friends in 37 sittings over nine
  months (1,219 messages), five former housemates in one group chat without sessions over nine
  months (1,237 messages), and one person's year of everyday tasks with an assistant in 80 sessions
  (818 messages, replies up to 1,900 characters);
- two more large ones: a freelancer's nine months of everyday tasks with an assistant in 90 sessions
  (790 messages), and two cousins messaging for eleven months in 36 sittings, no assistant (1,286
  messages, mostly under 200 characters, photos described in the text);
- and two more: three old friends in three cities chatting for ten months in 36 sittings, no
  assistant (1,110 messages, nearly all under 200 characters), and a developer's eight months with a
  coding assistant in 80 sessions (700 messages, code and configs, instructions changed);
- two former neighbours, one moved abroad, chatting for eleven months in 30 sittings, no assistant
  (915 messages, photos described in the text, plans changed and retold);
- a nurse's seven months with a personal assistant in 90 sessions while renovating a house and
  helping plan a wedding (668 messages, replies of lists, sums and drafts, decisions settled in short
  replies), and a five-a-side club's season-long group chat of five people in 44 sittings, no
  assistant (1,084 messages nearly all under 200 characters);
- five users' memories as an app in the manner of Mem0 or Zep keeps them (824: extracted facts, many
  restated or changed with the old one kept, episodes, procedures, summaries, a minority of chat
  turns), asked as an agent asks before answering ("can you fill in my home address?"), and five
  more such stores (a landscaping business's shared account, a nurse, a retired landlord, an
  engineering lead, a family's homework helper; 873 memories), and six more (a touring fiddler, a
  vet, a lorry driver, a PhD student abroad, a wedding photographer, a care-home manager; 799).

They are scored like the scenario set (:mod:`engram.eval.scenarios`): ``engram`` with the defaults
at ``top_k`` 5 and 10 beside BM25, dense and their fusion over the same store, per question type.

    python -m engram.eval.probes [--k 5 10] [--misses] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from engram.eval.scenarios import Scenario, ScenarioMemory, ScenarioQuestion, ScenarioReport, run_scenarios

__all__ = ["PROBES", "load_probe", "overall", "probe_files", "questions", "run_probes", "scores"]

#: Where the probe sets live in a checkout (tests are not packaged); from an installed copy, the
#: checkout it is run from.
PROBES = Path("tests") / "quality" / "probes"
_MEMORY_FIELDS = frozenset({"key", "user_id", "kind", "content", "created_at", "role", "session_id"})
_QUESTION_FIELDS = frozenset({"user_id", "text", "gold", "type"})


def _time(text: str, where: str) -> datetime:
    at = datetime.fromisoformat(text)
    if at.tzinfo is None:
        raise ValueError(f"{where}: {text!r} has no time zone")
    return at


def _fields(item: dict[str, object], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(item) - allowed)
    if unknown:  # a field this loader would drop unread (entities, filters) changes what is measured
        raise ValueError(f"{where}: unknown fields {unknown}")


def load_probe(path: Path) -> Scenario:
    """One probe file as a :class:`Scenario`; a question's id is the file's stem and its place."""
    data = json.loads(path.read_text(encoding="utf-8"))
    memories = []
    for item in data["memories"]:
        where = f"{path.name}: memory {item.get('key')!r}"
        _fields(item, _MEMORY_FIELDS, where)
        kind = item.get("kind", "message")
        if (kind == "message") != bool(item.get("role")):
            raise ValueError(f"{where}: a message has a role, nothing else has one")
        memories.append(ScenarioMemory(
            key=item["key"], user_id=item["user_id"], content=item["content"], kind=kind, role=item.get("role"),
            created_at=_time(item["created_at"], where), session_id=item.get("session_id"),
        ))
    questions = []
    for n, q in enumerate(data["questions"], start=1):
        _fields(q, _QUESTION_FIELDS, f"{path.name}: question {n}")
        questions.append(ScenarioQuestion(qid=f"{path.stem}:{n}", user_id=q["user_id"],
                                          category=q.get("type", "other"), text=q["text"], gold=tuple(q["gold"])))
    return Scenario(now=_time(data["now"], f"{path.name}: now"), memories=tuple(memories), questions=tuple(questions))


def probe_files(folder: Path | None = None) -> list[Path]:
    """The probe sets, by name: beside this module in a checkout, else under the working directory."""
    if folder is None:
        beside = Path(__file__).resolve().parents[2] / PROBES
        folder = beside if beside.is_dir() else Path.cwd() / PROBES
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def run_probes(k: int = 10, folder: Path | None = None) -> list[tuple[Path, ScenarioReport]]:
    """Every probe set scored at ``k``, each in a fresh in-memory store with the default embedder."""
    from engram.memory import Memory

    return [(path, run_scenarios(lambda: Memory(":memory:"), k=k, scenario=load_probe(path)))
            for path in probe_files(folder)]


def _cutoff(text: str) -> int:
    k = int(text)
    if k < 1:
        raise argparse.ArgumentTypeError(f"a cutoff is at least 1, got {k}")
    return k


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engram.eval.probes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=_cutoff, nargs="+", default=[5, 10], help="cutoffs (top_k of retrieve)")
    parser.add_argument("--misses", action="store_true", help="also list the questions engram misses")
    parser.add_argument("--json", dest="json_path", type=Path,
                        help="write every question's result (each system's ranked keys, recall, hit@1) per cutoff")
    args = parser.parse_args(argv)
    answers: list[dict[str, object]] = []
    if not probe_files():
        print(f"no probe sets in {PROBES}: run from a checkout", file=sys.stderr)
        return 1
    for k in args.k:
        reports = run_probes(k)
        for path, report in reports:
            print(f"{path.stem}: {len(report.results)} questions, recall@{k} and hit@1")
            print(report.table())
            if args.misses:
                print(report.misses())
            print()
        print(f"all probe sets, recall@{k} / hit@1: {overall([report for _, report in reports])}")
        print()
        answers.extend(questions(k, reports))
    if args.json_path:
        args.json_path.write_text(json.dumps(answers, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


def questions(k: int, reports: Sequence[tuple[Path, ScenarioReport]]) -> list[dict[str, object]]:
    """Each question's result at cutoff ``k``, to compare two runs question by question."""
    return [{"k": k, "file": path.stem, "id": r.question.qid, "type": r.question.category, "text": r.question.text,
             "gold": list(r.question.gold), "ranked": {s: list(keys[:k]) for s, keys in r.ranked.items()},
             "recall": dict(r.recall), "hit@1": dict(r.hit1)}
            for path, report in reports for r in report.results]


def scores(reports: Sequence[ScenarioReport]) -> dict[str, dict[str, float]]:
    """Each system's recall (at the reports' k), hit@1 and question count over every question of
    ``reports``, as ``bench/quality.py`` writes them."""
    results = [result for report in reports for result in report.results]
    n = len(results)
    if not n:
        return {}
    return {s: {"recall": sum(r.recall[s] for r in results) / n, "hit@1": sum(r.hit1[s] for r in results) / n,
                "n": n} for s in reports[0].systems}


def overall(reports: Sequence[ScenarioReport]) -> str:
    """Each system's recall@k and hit@1 over every question of ``reports``."""
    table = scores(reports)
    if not table:
        return "no questions"
    n = next(iter(table.values()))["n"]
    return f"n={int(n)}  " + "  ".join(f"{s} {v['recall']:.3f} / {v['hit@1']:.3f}" for s, v in table.items())


if __name__ == "__main__":
    # As in engram.eval.scenarios: ``python -m`` runs this file as ``__main__``.
    from engram.eval import probes

    sys.exit(probes.main())
