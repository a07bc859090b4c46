"""A request ("Write a function that reads a CSV file") brings back the user's standing instruction
("use type hints in every Python function you write for me") above long answers on its topic."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.config import RetrievalConfig
from engram.ext import Embedder
from engram.ingest.embed import embed_texts
from engram.memory import Memory
from engram.model import MemoryRecord
from engram.retrieve.gain_weights import RULE_SHARE
from engram.retrieve.rank import rank
from engram.retrieve.ranking import Ranking
from engram.retrieve.standing import (
    MAX_STANDING_SENTENCES,
    asks_about_the_user,
    asks_for_standing,
    how_it_is_done,
    is_request,
    is_standing,
    said_of_themselves,
    standing_sentences,
)
from engram.retrieve.types import MemoryEntry
from engram.retrieve.understand import understand

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("query", [
    "Can you write a function that reads a CSV file and returns the rows as dictionaries?",
    "Write a note thanking a supplier for delivering early.",
    "Any ideas for a homemade energy bar I could take hiking?",
    "Where should I go for a long weekend in October?",
    "Which seat should you book for me on a plane?",
    "How do I install and set up Docker?",
    "Put together a 30 minute routine I can do at home.",
    "I'd like some ideas for my father's birthday.",
    "OK, now add error handling to the parser.",
    "Let's write the migration script next.",
    "Convert this loop into a list comprehension.",
    "Get the Redis exporter going in staging so Grafana can show cache hit ratios.",
    "Redo the start of the antagonist's warehouse chapter so it moves quicker.",
    "Save that figure so I can upload it alongside the resubmission.",
    "We need object storage for the audit archiver: one bucket each for raw and parsed.",
    "Work out what I should charge for a small planter.",
    "Schedule a 4:30pm Friday call with Maria's new manager at Kestrel.",
    "Roll out the new autoscaling settings for label-printer in production.",
    "Find everyone who assumed OrganizationAccountAccessRole in the last week.",
    "Document the export_deliveries function properly.",
    "Callum's minding the dog over New Year while we're away, write him a quick note on looking after him.",
    "The charges staging model has several rows per charge_id. Write the version that keeps only the newest.",
    "Walk me through taking the cluster to the next minor version.",
    "Find us somewhere to stay in Toronto for a long weekend in March.",
    # Errands an agent runs, and asking what to say or do next.
    "Sort something nice for Lorraine for our anniversary, I'm stuck in Venlo",
    "Text the mum who does the Wednesday school run that Isla has the dentist.",
    "Order me something to pick up at the station café.",
    "Remind me at 10 to message Joanne about the off-duty.",
    "Maisie's mum texted, she's got a concert rehearsal. what do I say about paying?",
    "A woman's rung asking about respite for her mum. What do I tell her?",
    "Dennis had a fall in his room this morning. What needs doing today?",
    # Questions of general knowledge: the user's instructions shape how they are answered.
    "What is a bond yield and why does it go down when prices go up?",
    "How does a hash map handle collisions?",
    "Why is the sky blue?",
])
def test_requests(query: str) -> None:
    assert is_request(query) and understand(query, now=NOW).requests


@pytest.mark.parametrize("query", [
    "What did Priya think of the trial?",
    "How many hours in total did I spend driving to my three road trip destinations combined?",
    "When did Acme move to Rotterdam?",
    "Where do I take yoga classes?",
    "What is the total distance of the hikes I did on two consecutive weekends?",
    "What is Caroline's relationship status?",
    "How long has it been since the move?",
    "Why was the delivery late?",
    "What does your calendar say about Friday?",
    "Let's see, when did I last call the plumber?",
    "What's the plan for tomorrow?",
    "What time is the dentist appointment this week?",
    "Now, what did Bob say about the invoice?",
    "Get-together on Friday: who's coming?",
    "Do we need to renew the lease this year?",
    "Install date for the boiler?",
    "Deploy logs from last night: what failed?",
    "Get well card for Mum: did I send it?",
    "Polish pierogi recipe Grandma gave me?",
    "Show-and-tell: who presented on Friday?",
    "Update on the roof?",
    "Fix for the login bug, what was it?",
    "List of attendees for the party?",
    "Review of the restaurant Priya liked?",
    "Style guide for the blog: where did I put it?",
    "Route to the venue, did I save it?",
    "Test results from the clinic: anything odd?",
    "Schedule for the conference?",
    "Estimate from the roofer, how much was it?",
    "Document from the bank, when did it come?",
    "Why did you say, write it down, about the code?",
    # A noun before "this"/"that", and an imperative in a clause that leads up to a question.
    "Schedule this week?",
    "Run this morning, how far did I go?",
    "File that I sent to Dave, where is it?",
    "Sam texted: run the 10k with me. Did I say yes",
    "The doctor told me: pick one day a week to rest. Which day did I pick",
    "What did I say in the meeting, give or take",
    # Errand words as nouns, and asking what was said or what holds.
    "Order of events at the wedding?",
    "Remind me what my husband does for a living?",
    "What do we charge for a standard appointment now?",
    "What did I tell her about the respite?",
    # How someone or something is now: what holds for a person, not general knowledge.
    "Which translation software is she working in these days?",
    "What's the quiz team called now?",
    "Is he still on anything for the shoulder pain?",
    "How much dry food is the cat allowed per day at the moment?",
])
def test_questions_about_what_happened_are_not_requests(query: str) -> None:
    assert not is_request(query) and not understand(query, now=NOW).requests


def _said(content: str, role: str | None = "user") -> MemoryRecord:
    return MemoryRecord(id="m", user_id="u", kind="message", content=content, role=role, created_at=NOW,
                        recorded_at=NOW, content_hash="h")


def _ranked(records: list[MemoryRecord], vectors: dict[str, list[float]], keyword_scores: dict[str, float],
            **flags: Any) -> Ranking:
    """The ranking alone, by meaning (against the query [1, 0]) and the keyword scores given."""
    return rank(records, query_vec=np.array([1.0, 0.0], dtype=np.float32),
                vectors={i: np.array(v, dtype=np.float32) for i, v in vectors.items()}, query_entities=(),
                time_range=None, now=NOW, weights={"semantic_similarity": 1.0}, keyword_scores=keyword_scores,
                sources={}, source_ranks={}, config=RetrievalConfig(), **flags)


@pytest.mark.parametrize("content", [
    "From now on, whenever you write Python for me, use type hints.",
    "I'm vegetarian, so please never suggest recipes with meat or fish.",
    "Use Rust's standard library only in examples; our build can't pull in crates.",
    "I write fiction in the first person and present tense; keep any sample prose that way.",
    "I'm allergic to peanuts.",
    "I prefer tabs over spaces.",
    "Don't use emojis in anything you write for me.",
    "I'm looking for a new screen protector for my iPhone 13 Pro.",
    "I have a bad knee.",
    # An instruction as a clause after a comma.
    "I'm on a tight budget this year, keep gift suggestions under 30 dollars.",
    "When you write SQL for me, use uppercase keywords.",
    # What the user works with or on.
    "I use pytest with plain fixtures, no unittest classes.",
    "We run Postgres 16 in CI.",
    "I've been learning Rust in the evenings.",
    "I'm working on a Unity game about trains.",
    # ... and what they moved to.
    "oh wait, no. we moved off PagerDuty back in September, on-call lives in incident.io now.",
    "We've switched to GitHub Actions, Jenkins is gone.",
    "We're switching to decaf.",
    # What to do first, or leave out, as a clause of its own.
    "When you review my code, point out security problems first, then correctness, and skip style nitpicks.",
    "Focus on the API first.",
])
def test_standing_statements(content: str) -> None:
    assert is_standing(_said(content)) and is_standing(_said(content, role=None))


def test_not_standing() -> None:
    assert not is_standing(_said("We went to the park and used a map."))
    assert not is_standing(_said("The invoice for the crane was paid on Friday."))
    assert not is_standing(_said("We stopped at the station, used the restroom, kept going."))
    assert not is_standing(_said("In the end, use of the old API dropped off."))
    assert not is_standing(_said("Skip, my neighbour, came by with cookies."))
    assert not is_standing(_said("Flag football was so fun on Saturday!"))
    assert not is_standing(_said("The authors, write-ups aside, were thorough."))
    assert not is_standing(_said("Last night we ran out of milk, so we ran to the shop."))
    assert not is_standing(_said("The office moved to the fourth floor last spring."))
    assert not is_standing(_said("We moved to the next item on the agenda."))
    assert not is_standing(_said("Sometimes we run out of time at the end of the meeting."))
    # Every spelling of a role that is not a person's.
    for role in ("Assistant", "ASSISTANT", "model", "ai", "Bot", "developer", "function", " System ", "Tool"):
        assert not is_standing(_said("Always back up your database first. It is cheap.", role=role))
        assert standing_sentences(_said("It is cheap. Always back up your database first.", role=role)) == []
    # Advice the assistant gave is not the user's own instruction.
    assert not is_standing(_said("Always back up your database before a migration.", role="assistant"))
    # Nor an assistant's with a name of its own: add() stores {"role": "assistant", "name": "Sol"} as Sol.
    sol = replace(_said("Always back up your database before a migration.", role="Sol"),
                  metadata={"message_role": "assistant"})
    assert not is_standing(sol) and is_standing(replace(sol, metadata={"message_role": "user"}))


ANSWERS = [
    "Here is a function that reads a CSV file with the csv module and returns the rows as dictionaries:\n\n"
    "import csv\n\ndef read_rows(path):\n    with open(path, newline='') as handle:\n"
    "        return list(csv.DictReader(handle))\n\nEach row is a dictionary keyed by the header row. "
    "For large CSV files you can yield the rows one at a time instead of returning a list.",
    "To read a CSV file into dictionaries with pandas, call pandas.read_csv(path) and then "
    "frame.to_dict('records'); every row becomes a dictionary. pandas infers the column types, which the "
    "csv module does not, and it reads large files much faster.",
    "A CSV file can use another delimiter: pass delimiter=';' to csv.reader or csv.DictReader. Quote "
    "characters and escaped newlines are handled by the csv module, so do not split lines yourself.",
]
#: The user's other messages: some share a word with the request, none its meaning.
OTHERS = [
    "I need to file my tax returns before the end of April, remind me to gather the receipts.",
    "We planted four rows of tomatoes and two rows of beans in the garden this weekend.",
    "The wedding function starts at six, and the band returns after dinner for the second set.",
    "My sister reads a book a week; she just finished a long novel about the Roman empire.",
    "Can you recommend a podcast about the history of jazz for my commute?",
    "The dictionary my grandfather gave me is falling apart, I should get it rebound.",
]
INSTRUCTION = "From now on, whenever you write Python for me, use type hints on every function."
REQUEST = "Can you write a function that reads a CSV file and returns the rows as dictionaries?"


def test_a_request_lifts_the_standing_instruction(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the real model: the instruction gains half its own meaning on a request, says why, and
    only it does; a question about what happened gives no such gain."""
    with Memory(tmp_path / "standing.db", embedder=embedder) as memory:
        memory.add(INSTRUCTION, user_id="u", role="user", created_at="2026-11-01T10:00:00+00:00")
        memory.add_many([{"content": text, "user_id": "u", "role": "assistant",
                          "created_at": f"2026-11-{10 + at}T10:00:00+00:00"} for at, text in enumerate(ANSWERS)])
        memory.add_many([{"content": text, "user_id": "u", "role": "user",
                          "created_at": f"2026-10-{10 + at}T10:00:00+00:00"} for at, text in enumerate(OTHERS)])
        config = RetrievalConfig(top_k=10, min_score=0.0, cache_ttl=0)

        def ranked() -> dict[str, MemoryEntry]:
            result = memory.retrieve(REQUEST, user_id="u", now=NOW, config=config)
            return {m.content: m for m in result.memories}

        with monkeypatch.context() as patched:
            patched.setattr(sys.modules["engram.retrieve.rank"], "STANDING_GAIN", 0.0)
            before = ranked()[INSTRUCTION]
        after = ranked()
        standing = after[INSTRUCTION]
        meaning = (standing.signals["semantic_similarity"] - 0.15) / (0.65 - 0.15)
        assert meaning > 0
        assert standing.signals["relevance"] == pytest.approx(before.signals["relevance"] + 0.5 * meaning)
        assert standing.score > before.score
        assert standing.signals["standing"] == 1.0 and before.signals["standing"] == 1.0
        assert "the user's standing instruction, preference or own statement, asked for" in standing.reasons
        assert all(m.signals["standing"] == 0.0 for m in after.values() if m is not standing)
        asked = memory.retrieve("What did we discuss about CSV files?", user_id="u", now=NOW, config=config)
        assert asked.memories and all(m.signals["standing"] == 0.0 for m in asked.memories)
        # A rule said inside a longer message is among the closest to the request (its sentence is), the
        # whole way through the pipeline; not for a question, nor without the query's meaning.
        memory.add("Quick update on the garden: the beans are up. Also, from now on, whenever you write Python "
                   "for me, use type hints on every function.", user_id="u", role="user",
                   created_at="2026-11-02T10:00:00+00:00")
        within = {m.content[:12]: m for m in memory.retrieve(REQUEST, user_id="u", now=NOW, config=config).memories}
        assert within["Quick update"].signals["closest_rule"] == 1.0
        assert "the user's standing statement closest to this request" in within["Quick update"].reasons
        assert all(m.signals["closest_rule"] == 0.0 for m in asked.memories)
        words = memory.retrieve(REQUEST, user_id="u", now=NOW, config=config.with_(search_type="keyword"))
        assert words.memories and all(m.signals["closest_rule"] == 0.0 for m in words.memories)
        # A question of knowledge reads the user's rules (standing) but is no request they govern.
        known = memory.retrieve("How do type hints work in python?", user_id="u", now=NOW, config=config)
        assert any(m.signals["standing"] == 1.0 for m in known.memories)
        assert all(m.signals["closest_rule"] == 0.0 for m in known.memories)


def test_the_gain_puts_an_instruction_above_words_shared_by_chance() -> None:
    """The ranking alone: a message sharing the request's words by chance outranks the instruction
    on keywords; the instruction's meaning, doubled in part by the gain, puts it first."""
    records = [_said("Please use type hints in every function.", role="user"),
               replace(_said("The wedding function returns after dinner.", role="user"), id="chance")]
    vectors, keywords = {"m": [0.45, 0.893], "chance": [0.2, 0.98]}, {"chance": 0.5, "m": 0.0}
    assert [records[i].id for i in _ranked(records, vectors, keywords).order] == ["chance", "m"]
    assert [records[i].id for i in _ranked(records, vectors, keywords, requests=True).order] == ["m", "chance"]


def test_a_request_lifts_a_stored_fact_as_it_does_a_standing_statement() -> None:
    """What an app's extraction kept of the user is what holds for them: "This form wants my home
    address, can you fill that bit in?" is answered by the fact of where they live now, which shares
    no word with it, while a chat turn that shares its words by chance states nothing that holds."""
    fact = replace(_said("Moved to 14 Larch Close, Hellesdon, in August.", role=None), id="fact", kind="fact")
    chance = replace(_said("The form at the bank took ages to fill in.", role="user"), id="chance")
    vectors, keywords = {"fact": [0.45, 0.893], "chance": [0.2, 0.98]}, {"chance": 0.5, "fact": 0.0}
    records = [fact, chance]
    assert [records[i].id for i in _ranked(records, vectors, keywords).order] == ["chance", "fact"]
    ranking = _ranked(records, vectors, keywords, requests=True)
    assert [records[i].id for i in ranking.order] == ["fact", "chance"]
    explained = {s.record.id: s for s in ranking.explained(ranking.best(2))}
    assert explained["fact"].signals["standing"] == 1.0 and explained["chance"].signals["standing"] == 0.0
    # How the user has things done governs a request to do them, as a stated rule does.
    rule = replace(_said("Quotes: itemise labour and materials separately.", role=None), id="fact", kind="procedure")
    ranking = _ranked([rule, chance], vectors, keywords, requests=True)
    assert [[rule, chance][i].id for i in ranking.order] == ["fact", "chance"]


def test_the_rule_closest_to_a_request_comes_first_among_the_users_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a long chat nearly every user message states something that holds: of the standing
    statements closest to a request (the standing source's order), the first ranked gains RULE_GAIN,
    the next RULE_SHARE of it; a topical message sharing the request's words by chance no longer
    outranks them. A statement not ranked here takes no place; any other query: nothing."""
    records = [replace(_said("Baird's chapters are close third person, past tense. Never mix them."), id="pov"),
               replace(_said("Chapter 9 needs the warehouse scene tightened before Friday."), id="topic"),
               replace(_said("Never put em dashes in promotional copy."), id="dash"),
               replace(_said("Please always use British spelling."), id="spelling"),
               replace(_said("I always bake with oat milk."), id="far")]
    vectors = {"pov": [0.40, 0.917], "topic": [0.42, 0.907], "dash": [0.38, 0.925], "spelling": [0.30, 0.954],
               "far": [0.10, 0.995]}
    keywords = {"topic": 0.3}
    rules = ["gone", "pov", "dash", "spelling", "far"]  # "gone" was read, then not ranked (another owner's)
    plain = _ranked(records, vectors, keywords, rules=rules)
    assert records[plain.order[0]].id == "topic"
    assert all(s.signals["closest_rule"] == 0.0 for s in plain.explained(plain.best(5)))
    with monkeypatch.context() as patched:
        patched.setattr(sys.modules["engram.retrieve.rank"], "RULE_GAIN", 0.0)
        assert records[_ranked(records, vectors, keywords, requests=True, rules=rules).order[0]].id == "topic"
    ranking = _ranked(records, vectors, keywords, requests=True, rules=rules)
    assert records[ranking.order[0]].id == "pov"
    explained = {s.record.id: s for s in ranking.explained(ranking.best(5))}
    assert [explained[i].signals["closest_rule"] for i in ("pov", "dash", "spelling", "far", "topic")] == [
        1.0, RULE_SHARE, RULE_SHARE ** 2, 0.0, 0.0]
    assert "the user's standing statement closest to this request" in explained["pov"].reasons
    assert "among the user's standing statements closest to this request" in explained["dash"].reasons


def test_a_procedure_governs_a_request_as_a_stated_rule_does() -> None:
    """In an app's store of extracted memories no message states the rules: "Put a quote together
    for a full rewire" is governed by the procedure "Quotes: itemise labour and materials ...",
    which takes its place among the user's rules by its closeness to the request; a request the
    rules do not govern (no ``rules`` given) lifts none, nor does a procedure farther than a rule."""
    quotes = replace(_said("Quotes: itemise labour and materials separately.", role=None), id="quotes",
                     kind="procedure")
    pov = replace(_said("Baird's chapters are close third person, past tense."), id="pov")
    past = replace(_said("Quoted Mrs Patel 6,400 for a full rewire of her terrace.", role=None), id="past",
                   kind="episode")
    records = [quotes, pov, past]
    vectors = {"quotes": [0.30, 0.954], "pov": [0.20, 0.98], "past": [0.32, 0.947]}
    keywords = {"past": 0.5}
    assert records[_ranked(records, vectors, keywords, requests=True).order[0]].id == "past"
    ranking = _ranked(records, vectors, keywords, requests=True, rules=[])
    assert records[ranking.order[0]].id == "quotes"
    explained = {s.record.id: s for s in ranking.explained(ranking.best(3))}
    assert explained["quotes"].signals["closest_rule"] == 1.0 and explained["past"].signals["closest_rule"] == 0.0
    ruled = _ranked(records, vectors, keywords, requests=True, rules=["pov"])
    explained = {s.record.id: s for s in ruled.explained(ruled.best(3))}
    assert explained["quotes"].signals["closest_rule"] == 1.0 and explained["pov"].signals["closest_rule"] == RULE_SHARE


def test_a_question_of_how_something_is_done_lifts_the_procedure() -> None:
    """"What's the process for a rush order?" asks for the procedure: a message sharing more of its
    words ("Rush orders are stressful ...") outranked it; the procedure gains half its own meaning,
    and says why. A procedure gains nothing from a question that is neither of how things are done
    nor a request (which a procedure governs: test_a_request_lifts_a_stored_fact_...)."""
    records = [replace(_said("When a customer asks for a rush order: check stock first."), kind="procedure",
                       role=None),
               replace(_said("Rush orders are stressful, we missed the deadline last time.", role="user"), id="chat")]
    vectors, keywords = {"m": [0.45, 0.893], "chat": [0.35, 0.937]}, {"chat": 0.6, "m": 0.4}
    assert [records[i].id for i in _ranked(records, vectors, keywords).order] == ["chat", "m"]
    ranking = _ranked(records, vectors, keywords, procedural=True)
    assert [records[i].id for i in ranking.order] == ["m", "chat"]
    procedure, chat = ranking.explained(ranking.best(2))
    assert procedure.signals["standing"] == 1.0 and chat.signals["standing"] == 0.0
    assert "a procedure, for a question of how something is done" in procedure.reasons
    assert understand("What's the process for a rush order?", now=NOW).procedural


@pytest.mark.parametrize(("query", "how"), [
    ("What's the process for a rush order?", True),
    ("How do I issue a refund?", True),
    ("What are the steps to close the month?", True),
    ("What steps did Priya take to fix the build?", False),
    ("How did we fix the Acme outage?", False),
    ("Was the onboarding checklist finished?", False),
])
def test_only_a_question_of_how_it_is_done_lifts_procedures(query: str, how: bool) -> None:
    """What was done is answered by the account of it, not by the procedure."""
    plan = understand(query, now=NOW)
    assert plan.procedural
    assert how_it_is_done(query, plan.procedural) is how


def test_a_procedure_standing_for_another_reason_says_that_reason() -> None:
    """A procedure that states a rule ("Always cc finance ...") stands for a request as any rule
    does, and is explained as one, not as the answer to a question of how something is done."""
    records = [replace(_said("Always cc finance on every email to a customer."), kind="procedure", role=None)]
    ranking = _ranked(records, {"m": [0.45, 0.893]}, {}, requests=True)
    (item,) = ranking.explained(ranking.best(1))
    assert item.signals["standing"] == 1.0
    assert "the user's standing instruction, preference or own statement, asked for" in item.reasons
    assert "a procedure, for a question of how something is done" not in item.reasons


def test_a_procedure_does_not_silence_the_rules_of_whom_a_permission_question_names(tmp_path: Path) -> None:
    """"Can I change the deploy process without asking Tom?" is procedural and asks permission: the
    deploy procedure gains, and so does Tom's own rule (a procedure standing had hidden it)."""
    from engram.embedders.fake import FakeEmbedder

    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_many([
            {"user_id": "u", "content": "Heads up: never touch the pipeline config unless I've signed off.",
             "role": "Tom"},
            {"user_id": "u", "content": "Tom, the staging box is back up.", "role": "Bob"},
            {"user_id": "u", "content": "Deploy process: merge to main, wait for CI, tag the release.",
             "kind": "procedure"},
        ])
        found = memory.retrieve("Can I change the deploy process without asking Tom?", user_id="u", now=NOW,
                                config=RetrievalConfig(min_score=0.0, cache_ttl=0))
        standing = {m.content[:12]: m.signals["standing"] for m in found.memories}
    assert standing == {"Heads up: ne": 1.0, "Tom, the sta": 0.0, "Deploy proce": 1.0}


BURIED = ("We just got back from two weeks in Portugal with the kids. The beaches near Lagos were beautiful and "
          "the food was great. By the way, please use Rust's standard library only in any example code you give "
          "me. My sister is visiting next month and we plan to go hiking.")
PARSE = "Show me example code that reads a JSON config file."


def test_an_instruction_said_in_passing_is_read_on_its_own_for_a_request(tmp_path: Path, embedder: Embedder) -> None:
    """With the real model: the sentence holding the instruction gets a vector of its own, and a
    request reads the message's meaning as that sentence's when it is closer; a question about what
    happened reads the whole message as before."""
    with Memory(tmp_path / "buried.db", embedder=embedder) as memory:
        said = memory.add(BURIED, user_id="u", role="user", created_at="2026-11-01T10:00:00+00:00")
        memory.add_many([{"content": text, "user_id": "u", "role": "assistant",
                          "created_at": f"2026-11-{10 + at}T10:00:00+00:00"} for at, text in enumerate(ANSWERS)])
        facets = memory.store.facets("u", [said.id])[said.id]
        assert facets.shape == (1, embedder.dimensions)
        query = embed_texts(embedder, [PARSE], as_query=True)[0]  # a question's vector, as retrieval embeds it
        whole = float(memory.store.vectors("u", [said.id])[said.id] @ query)
        sentence = float(facets[0] @ query)
        assert sentence > whole + 0.05
        config = RetrievalConfig(top_k=10, min_score=0.0, cache_ttl=0)

        def meaning(question: str) -> float:
            found = memory.retrieve(question, user_id="u", now=NOW, config=config)
            return next(m.signals["semantic_similarity"] for m in found.memories if m.id == said.id)

        assert is_request(PARSE)
        assert meaning(PARSE) == pytest.approx(sentence, abs=1e-4)
        found = memory.retrieve(PARSE, user_id="u", now=NOW, config=config)
        reasons = next(m.reasons for m in found.memories if m.id == said.id)
        assert any(r.startswith("its sentence 'By the way, please use Rust's standard library only") for r in reasons)
        asked = "What did I say about example code for reading a JSON config file?"
        assert not is_request(asked)
        whole_asked = float(memory.store.vectors("u", [said.id])[said.id]
                            @ embed_texts(embedder, [asked], as_query=True)[0])
        assert meaning(asked) == pytest.approx(max(whole_asked, 0.0), abs=1e-4)


def test_a_request_reads_the_standing_statements_no_other_source_finds(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An instruction said in passing inside a long message is close to a request only through its
    own sentence: behind 200 messages closer to the request in words and in meaning as a whole, no
    source found the message, so its sentence never counted. A request reads the user's newest
    standing statements (``standing`` source) and scores each; a question of what happened does not
    read them."""
    topics = ["sourdough", "tomato sauce", "pie crust", "risotto", "pancakes", "curry", "lasagna", "granola"]
    fillers = [f"For example, the {t} recipe card reads like a code: the file of family recipes says bake {n} "
               f"minutes, stir, rest, serve." for t in topics for n in range(25)]
    with Memory(tmp_path / "many.db", embedder=embedder) as memory:
        said = memory.add(BURIED, user_id="u", role="user", created_at="2026-10-01T10:00:00+00:00")
        # In a session of their own: the stream of session-less turns would read the buried
        # message as the first filler's neighbour, a source of its own.
        memory.add_many([{"content": text, "user_id": "u", "role": "assistant", "session_id": "cookbook",
                          "created_at": f"2026-11-{1 + at % 25:02d}T{at % 20:02d}:00:00+00:00"}
                         for at, text in enumerate(fillers)])
        config = RetrievalConfig(top_k=10, cache_ttl=0)

        def found(question: str) -> list[str]:
            return [m.id for m in memory.retrieve(question, user_id="u", now=NOW, config=config).memories]

        with monkeypatch.context() as patched:
            patched.setattr(sys.modules["engram.retrieve.candidates"], "STANDING_LIMIT", 0)
            assert said.id not in found(PARSE)
        answer = memory.retrieve(PARSE, user_id="u", now=NOW, config=config)
        entry = next(m for m in answer.memories if m.id == said.id)
        assert entry.signals["standing"] == 1.0
        assert "the user's standing instruction, preference or own statement, asked for" in entry.reasons
        calls: list[str] = []
        reads = memory.store.by_standing
        monkeypatch.setattr(memory.store, "by_standing", lambda *a, **k: calls.append("read") or reads(*a, **k))
        found("What did we discuss about config files?")
        assert calls == []
        found(PARSE)
        assert calls == ["read"]


def test_standing_sentences_are_the_users_own_prose() -> None:
    said = _said("Here is my parser.\n\n```rust\nuse std::env;\nfn main() {}\n```\n\nIt works. From now on, keep "
                 "every example in Rust.\n\n~~~\nuse std::io;\n")
    assert standing_sentences(said) == ["From now on, keep every example in Rust."]
    assert standing_sentences(_said("Always answer in French.")) == []  # one sentence: its own vector says it
    assert standing_sentences(_said("It rained. Always answer in French.", role="assistant")) == []
    many = _said(" ".join(f"Always do thing {i}." for i in range(12)))
    assert len(standing_sentences(many)) == MAX_STANDING_SENTENCES
    passage = replace(_said("Install the package. Always pin its version. Use a virtual environment."), kind="chunk")
    assert standing_sentences(passage) == []


def test_code_is_no_standing_statement() -> None:
    pasted = _said("Here is the file.\n\n```rust\nuse std::env;\nfn main() {}\n```\n\nIt compiles now.")
    assert not is_standing(pasted) and standing_sentences(pasted) == []
    assert is_standing(_said("Here is the file.\n\n```rust\nfn main() {}\n```\n\nAlways use Rust 2021."))


@pytest.mark.parametrize(("query", "about_the_user"), [
    ("What do you know about me?", True),
    ("What do you remember about me?", True),
    ("Tell me about myself", True),
    ("What have I told you so far?", True),
    ("Who am I?", True),
    ("What are my preferences?", True),
    ("What did I ask you to remember?", True),
    ("What did Bob ask last week?", False),
    ("Which of my preferences changed in March?", False),
    # Each names one thing: not the user as a whole.
    ("What do you know about me and Sarah's trip?", False),
    ("What have I told you about the budget?", False),
    ("Who am I meeting tomorrow?", False),
    ("Who am I to judge?", False),
    ("What are my preferences for hotel rooms?", False),
    ("Did I ask you to remember the Wi-Fi password?", False),
    ("What does Bob know about me?", False),
    ("What do you know about Priya?", False),
    ("Tell me about my customers", False),
    ("What did I say about the trip?", False),
])
def test_a_question_about_the_user_as_a_whole(query: str, about_the_user: bool) -> None:
    assert asks_about_the_user(query) is about_the_user


def test_what_the_user_said_of_themselves() -> None:
    def said(content: str, role: str | None = "user", kind: str = "message", user: str = "u") -> bool:
        return said_of_themselves(replace(_said(content, role), kind=kind), user)

    assert said("I live in Paris") and said("My sister is a nurse.", role=None)
    assert said("Acme pays NET15.", role=None, kind="fact")  # a fact kept is something known
    assert not said("Where do I keep the spare key?")  # a question tells nothing
    assert not said("I can recommend a good thriller.", role="assistant")
    assert not said("I play chess", role="carol")  # someone else's words
    assert said("I play chess", role="U")  # the user's own id as the speaker (Mem0's `name`)
    assert not said("Acme pays NET15.", role=None, kind="fact", user="alice")  # a shared scope's fact
    # Read in one pass: a long run of words ending in a question costs no more than its length.
    long = "I " * 8_000 + "?"
    started = time.perf_counter()
    said(long)
    assert time.perf_counter() - started < 0.05


def test_what_do_you_know_about_me_answers_with_the_user_s_own_statements(tmp_path: Path) -> None:
    from engram.embedders.fake import FakeEmbedder

    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_many([
            {"user_id": "u", "content": "I'm allergic to peanuts.", "role": "user"},
            {"user_id": "u", "content": "I live in Lisbon with my two cats.", "role": "user"},
            {"user_id": "u", "content": "Lisbon has lovely trams, you should ride one.", "role": "assistant"},
            {"user_id": "u", "content": "I play chess on Sundays.", "role": "carol"},
            {"user_id": "u", "content": "Dana's passport expires in March 2027.", "kind": "fact"},
            {"user_id": "u", "content": "What time is it in Tokyo?", "role": "user"},
        ])
        found = memory.retrieve("What do you know about me?", user_id="u", now=NOW).memories
        told = {m.content for m in found if m.signals["standing"] == 1.0}
        assert told == {"I'm allergic to peanuts.", "I live in Lisbon with my two cats.",
                        "Dana's passport expires in March 2027."}
        assert [m.content for m in found[:3]] and {m.content for m in found[:3]} == told  # ahead of the rest
        # The caller's filters hold: asked for messages only, no fact comes back.
        only = memory.retrieve("What do you know about me?", user_id="u", now=NOW,
                               filters={"kinds": ["message"]}).memories
        assert only and "Dana's passport expires in March 2027." not in {m.content for m in only}
        # "What did I ask you to remember?" lifts no question, as "What did Bob ask?" does.
        assert not understand("What did I ask you to remember?", now=NOW).asks
        # Another question reads them by their words and meaning as before: no gain of that kind.
        other = memory.retrieve("Where do I live?", user_id="u", now=NOW).memories
        assert all(m.signals.get("standing", 0.0) == 0.0 for m in other)


@pytest.mark.parametrize(("query", "permission"), [
    ("Can I phone Maya in the evening?", True),
    ("Should I post new leads here for Bob?", True),
    ("Is it OK to email Priya on Sunday?", True),
    ("Would Tom mind if I gave him a to-do list?", True),
    ("What did Maya say about the evening?", False),
    ("When does Bob want new leads?", False),
])
def test_a_question_whether_something_may_be_done(query: str, permission: bool) -> None:
    assert understand(query, now=NOW).permission is permission


def test_a_permission_question_is_answered_by_the_rules_of_whom_it_names(tmp_path: Path) -> None:
    from engram.embedders.fake import FakeEmbedder

    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_many([
            {"user_id": "u", "content": "One thing: don't ring me after 7pm unless something is on fire.",
             "role": "Maya"},
            {"user_id": "u", "content": "Maya, the evening shift starts at six.", "role": "Bob"},
            {"user_id": "u", "content": "Lovely evening for the team dinner!", "role": "Maya"},
            {"user_id": "u", "content": "Please don't order me around.", "role": "Tom"},
        ])
        found = memory.retrieve("Can I phone Maya in the evening?", user_id="u", now=NOW).memories
        rule = next(m for m in found if m.content.startswith("One thing"))
        assert rule.signals["standing"] == 1.0
        assert all(m.signals.get("standing", 0.0) == 0.0 for m in found if m is not rule)  # not Tom's, not Bob's
        asked = memory.retrieve("What did Maya say about the evening?", user_id="u", now=NOW).memories
        assert all(m.signals.get("standing", 0.0) == 0.0 for m in asked)


def test_the_standing_read_keeps_the_closest_by_now_and_fuses_with_no_source(tmp_path: Path) -> None:
    """A request reads the newest standing statements said by its ``now`` and keeps those whose
    closest sentence is closest to it; they are scored, not fused with the sources (their order is
    only how new they are), and a shared scope's newer statements take none of their places."""
    from engram.embedders.fake import FakeEmbedder
    from engram.model import Filters
    from engram.retrieve import candidates
    from engram.retrieve.candidates import STANDING_KEEP, gather
    from engram.retrieve.scopes import Scopes

    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        said = [memory.add(f"We moved house in spring. From now on, always use option {n} for me.", user_id="u",
                           role="user", created_at=f"2026-10-{1 + n:02d}T10:00:00+00:00") for n in range(12)]
        memory.add("Team note. Always use option 3 in every answer.", user_id="team", role="user",
                   created_at="2026-11-20T10:00:00+00:00")
        request = "Can you pick an option for me?"
        plan = understand(request, now=NOW)
        assert plan.requests
        closest = said[7]
        query = memory.store.facets("u", [closest.id])[closest.id][0]

        def read(now: datetime, reads: object = None) -> candidates.CandidateSet:
            return gather(reads or memory.store, user_id="u", plan=plan, query_vec=query, config=RetrievalConfig(),
                          filters=Filters(), now=now)

        found = read(NOW)
        assert "standing" not in found.ranks and len(found.standing) == STANDING_KEEP
        assert found.standing[0] == closest.id
        before = read(datetime(2026, 10, 5, 12, 0, tzinfo=UTC))  # only the first five were said by then
        assert set(before.standing) == {m.id for m in said[:5]}
        shared = read(NOW, Scopes(memory.store, ("u", "team")))
        assert shared.standing == found.standing
        other = gather(memory.store, user_id="u", plan=understand("What option did I pick?", now=NOW),
                       query_vec=query, config=RetrievalConfig(), filters=Filters(), now=NOW)
        assert other.standing == []


@pytest.mark.parametrize(("query", "asks"), [
    ("What rules have I asked you to follow when writing code for the web app?", True),
    ("Which tools or libraries have I told you I don't want to use?", True),
    ("Remind me of everything I can't or won't eat.", True),
    ("What are my preferences for code style?", True),
    ("Did I tell you not to use ORMs?", True),
    ("What did I ask you never to do?", True),
    ("What's my preference for tabs or spaces?", True),
    ("Which libraries and installers have I banned?", True),
    ("Which libraries have I ruled out for this codebase?", True),
    ("What have we said no to so far?", True),
    ("Remind me which libraries I've already banned", True),
    ("Which ideas did the council reject?", False),
    ("Have you ruled out a leak?", False),
    ("Have we ruled out a gas leak?", False),  # an event, not a rule
    ("Did we reject the Henderson quote?", False),
    ("Which PRs did I reject?", False),
    ("When did we rule out MongoDB?", False),
    ("Did I ban that spammer from the Discord?", False),
    ("What did I tell you about the trip?", False),
    ("Have I told you that I moved?", False),
    ("Did I tell you I can't make it Friday?", False),
    ("What did I tell you I want for my birthday?", False),
    ("When did I update my preferences?", False),
    ("What did my boss say about my preferences?", False),
    ("What are the rules of chess?", False),
])
def test_a_question_of_the_users_standing_statements_reads_them_as_a_request_does(query: str, asks: bool) -> None:
    assert asks_for_standing(query) is asks
    assert understand(query, now=NOW).requests is (asks or is_request(query))


def test_a_question_of_standing_statements_in_a_time_keeps_its_scope() -> None:
    plan = understand("What rules did I give you last week?", now=NOW)
    assert asks_for_standing(plan.text) and plan.time_range is not None and not plan.requests


@pytest.mark.parametrize(("query", "requests", "governed"), [
    ("Write a function that reads a CSV file.", True, True),
    ("Redo the start of chapter 9", True, True),
    ("What rules have I asked you to follow when writing code?", True, True),
    ("How far is the base station from the greenhouse?", True, False),  # read as general knowledge
    ("What is a bond yield and why does it go down?", True, False),
    ("What did we discuss about CSV files?", False, False),
])
def test_the_rules_govern_what_is_asked_to_be_done(query: str, requests: bool, governed: bool) -> None:
    plan = understand(query, now=NOW)
    assert (plan.requests, plan.governed) == (requests, governed)


def test_reading_a_late_imperative_takes_time_in_proportion_to_the_query() -> None:
    # Every clause had looked ahead to the query's end for a "?": 4,000 characters of ", " took 19 ms.
    for text in (", " * 50_000 + "?", ", " * 50_000 + "write it", ". Did I" * 10_000):
        started = time.perf_counter()
        is_request(text)
        assert time.perf_counter() - started < 1.0


def test_a_request_about_today_keeps_the_procedure_that_governs_it(tmp_path: Path, embedder: Embedder) -> None:
    """"Dennis went down ... this morning. What needs doing today?" asks what to do: the falls
    procedure, stored months before, governs it, and this morning's notes (inside the request's
    time scope) do not push it under them."""
    now = datetime(2026, 11, 28, 18, 0, tzinfo=UTC)
    with Memory(tmp_path / "care.db", embedder=embedder) as memory:
        rule = memory.add("After any fall, injured or not: ring the family the same day, complete a body map and "
                          "an incident form, and start 24 hours of hourly checks.", user_id="u", kind="procedure",
                          created_at="2026-08-01T09:00:00+00:00")
        memory.add("Visiting: open 10am to 8pm every day, with protected mealtimes.", user_id="u", kind="procedure",
                   created_at="2026-08-01T09:05:00+00:00")
        notes = ["Dennis was up at 2 this morning asking for his wife again, settled with tea.",
                 "Night staff say the corridor light outside Dennis's room keeps flickering.",
                 "Dennis ate a good breakfast this morning and is in the lounge now.",
                 "The chiropodist is coming for Dennis and Ivy this morning.",
                 "Dennis's daughter rang this morning to say she'll visit at the weekend."]
        for at, text in enumerate(notes):
            memory.add(text, user_id="u", kind="episode", created_at=f"2026-11-28T0{5 + at}:00:00+00:00")
        question = ("Dennis went down in his room at about 4 this morning, the night staff say he's not hurt. "
                    "What needs doing today?")
        assert understand(question, now=now).governed
        found = memory.retrieve(question, user_id="u", now=now, config=RetrievalConfig(top_k=3))
        assert rule.id in [m.id for m in found.memories]
