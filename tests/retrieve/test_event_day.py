"""A time placed by an event the question names ("the Tuesday after moving day"): the event's day is
read from the memory that matches it best, and the question reads with the scope it places."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram import Memory, RetrievalConfig
from engram.ext import Embedder
from engram.retrieve.event_day import asked_by_event

NOW = datetime(2026, 10, 30, 20, 0, tzinfo=UTC)  # a Friday


@pytest.mark.parametrize(("query", "asked"), [
    ("What did Grandma ask for on the Tuesday after moving day?", ("tuesday", "after", "moving day", 1)),
    ("What did everyone eat the night before the move?", ("night", "before", "the move", 1)),
    ("What did Aisha find the day after v4.19.0 shipped?", ("day", "after", "v4.19.0 shipped", 1)),
    ("What did I ask you the morning after Jess's wedding?", ("morning", "after", "Jess's wedding", 1)),
    ("Who called the week after the outage and what did they want?", ("week", "after", "the outage", 1)),
    ("What did Marc climb two days before the competition?", ("day", "before", "the competition", 2)),
    ("Where were we 3 weeks after the move?", ("week", "after", "the move", 3)),
    ("What did we eat a couple of days after the party?", ("day", "after", "the party", 2)),
    # A subject alone is not the event: the clause it starts is.
    ("What did Priya judge the day after she was cleared by her physio?",
     ("day", "after", "she was cleared by her physio", 1)),
    ("What did Grandma ask for on Tuesday?", None),
    ("What happened after the move?", None),  # no period placed by it
    ("Where did I have dinner the night before last?", None),
    ("Where will we eat the Tuesday after next?", None),
    ("Where can I get the morning after pill?", None),
    ("What happened two days before now?", None),  # a time, not an event
    ("What changed 1.5 days after the deploy?", None),  # not five days
    ("What did I do sıx days after the party?", None),  # a dotless i is no count word
])
def test_the_period_and_the_event_are_read(query: str, asked: tuple[str, str, str, int] | None) -> None:
    assert asked_by_event(query) == asked


def test_a_long_padded_question_is_read_in_linear_time() -> None:
    import time

    for query in ("2 days after" + " " * 1900 + "x" * 70, "the day after" + " " * 1900 + "x" * 70,
                  ("2 days after " + " " * 50) * 30):
        started = time.perf_counter()
        asked_by_event(query)
        assert time.perf_counter() - started < 0.5, query[:20]


def _chat(memory: Memory, rows: list[tuple[int, str, str]]) -> None:
    memory.add_many([{"user_id": "fam", "role": who, "content": text,
                      "created_at": NOW - timedelta(days=days, hours=3)} for days, who, text in rows])


def test_the_tuesday_after_moving_day_is_read_from_the_day_the_move_was_told(tmp_path: Path,
                                                                              embedder: Embedder) -> None:
    # Moving day is Saturday 17 October (told the Thursday before); the Tuesday after is the 20th.
    rows = [
        (15, "Dana", "Movers booked: moving day is Saturday the 17th, truck at 8."),
        (14, "Ruth", "Can someone bring me more of those big boxes?"),
        (13, "Mike", "Truck's here, wish us luck"),
        (10, "Ruth", "I would like to come and see the house on Saturday. Tom can drive me."),
        (3, "Ruth", "Could someone fix the gate latch for me, it keeps blowing open."),
        (1, "Tom", "Grandma wants the rocking chair back, can we bring it Sunday?"),
    ]
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        _chat(memory, rows)
        found = memory.retrieve("What did Grandma ask for on the Tuesday after moving day?", user_id="fam",
                                now=NOW, config=RetrievalConfig(top_k=3, cache_ttl=0))
        scope = found.metadata.time_range
        assert scope is not None and scope.expression == "the tuesday after moving day"
        assert scope.start.date().isoformat() == "2026-10-20" == scope.end.date().isoformat()
        assert found.memories[0].content.startswith("I would like to come and see the house")


def test_an_event_told_ahead_is_placed_on_the_day_it_names(tmp_path: Path, embedder: Embedder) -> None:
    # "next Saturday" said on Saturday 17 October is the 24th; the morning after is Sunday the 25th.
    rows = [
        (13, "user", "My friend Jess's wedding is next Saturday, what should I eat before?"),
        (6, "user", "Wedding was amazing, danced till 1am. Feeling rough, what now?"),
        (5, "user", "Feeling rough after the party. Is a walk enough today?"),
        (12, "user", "Feeling rough today, slept badly."),
    ]
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        _chat(memory, rows)
        found = memory.retrieve("What did I ask you the morning after Jess's wedding?", user_id="fam", now=NOW,
                                config=RetrievalConfig(top_k=3, cache_ttl=0))
        assert found.metadata.time_range is not None
        assert found.metadata.time_range.start.date().isoformat() == "2026-10-25"
        assert found.memories[0].content.startswith("Feeling rough after the party")


def test_an_event_on_a_day_past_the_calendar_places_nothing(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        _chat(memory, [(3, "Dana", "Moving day is 31 December 9999, lol never")])
        found = memory.retrieve("What did I do the day after moving day?", user_id="fam", now=NOW,
                                config=RetrievalConfig(top_k=3, cache_ttl=0))
        assert found.metadata.time_range is None and found.memories


def test_the_weekend_an_event_places_is_not_the_last_weekend(tmp_path: Path, embedder: Embedder) -> None:
    # Told on Monday 5 October: the conference is on the 8th, the weekend after it the 10th and 11th.
    rows = [(25, "Dana", "Conference in Lyon this Thursday and Friday!"), (20, "Dana", "Hiked the Saleve with Mike"),
            (5, "Dana", "Hiked the Jura ridge today")]
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        _chat(memory, rows)
        found = memory.retrieve("What did Dana do the weekend after the conference?", user_id="fam", now=NOW,
                                config=RetrievalConfig(top_k=3, cache_ttl=0))
        scope = found.metadata.time_range
        assert scope is not None and scope.expression.startswith("the weekend after")
        assert scope.start.date().isoformat() == "2026-10-10"
        assert found.memories[0].content == "Hiked the Saleve with Mike"


def test_an_event_no_memory_names_places_nothing(tmp_path: Path, embedder: Embedder) -> None:
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        _chat(memory, [(3, "Dana", "Pizza tonight?"), (2, "Mike", "Sure")])
        found = memory.retrieve("What did we eat the night before the regatta?", user_id="fam", now=NOW,
                                config=RetrievalConfig(top_k=3, cache_ttl=0))
        assert found.metadata.time_range is None


def test_an_event_its_words_do_not_pick_is_placed_by_the_memory_closest_in_meaning(
        tmp_path: Path, embedder: Embedder) -> None:
    # "Dad's surgery" shares only Dad's name with his messages: every keyword hit is as good as the
    # next, so the memory closest in meaning places it (the op moved to Monday the 26th).
    rows = [
        (12, "Dad", "Hospital rang. They've moved the op. Now Monday 26th, same time."),
        (11, "Dad", "Only to the shop."),
        (10, "Dad", "Watch it."),
        (5, "Dad", "0-2. Shocking. Didn't deserve anything."),
        (2, "Dad", "Toon won 3-1 at home, what a game"),
    ]
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        _chat(memory, rows)
        found = memory.retrieve("How did Newcastle do the day before Dad's surgery?", user_id="fam", now=NOW,
                                config=RetrievalConfig(top_k=3, cache_ttl=0))
        scope = found.metadata.time_range
        assert scope is not None and scope.expression == "the day before Dad's surgery"
        assert scope.start.date().isoformat() == "2026-10-25" == scope.end.date().isoformat()
        assert found.memories[0].content.startswith("0-2. Shocking")


def test_a_match_through_a_facts_fields_places_the_event(tmp_path: Path, embedder: Embedder) -> None:
    # "surgery" is in the fact's predicate, not its text: the keyword index holds both.
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add("Dad goes under the knife on Monday the 26th.", user_id="fam", kind="fact", subject="Dad",
                   predicate="surgery_date", object="Monday 26th", created_at=NOW - timedelta(days=12))
        _chat(memory, [(5, "Dad", "0-2. Shocking. Didn't deserve anything."), (8, "Dad", "Car needs new tyres")])
        for search_type in ("keyword", "hybrid"):
            found = memory.retrieve("How did Newcastle do the day before the surgery?", user_id="fam", now=NOW,
                                    config=RetrievalConfig(top_k=3, cache_ttl=0, search_type=search_type))
            scope = found.metadata.time_range
            assert scope is not None and scope.start.date().isoformat() == "2026-10-25", search_type


def test_an_embedder_with_a_degenerate_range_places_no_event_by_meaning(tmp_path: Path, embedder: Embedder) -> None:
    class Flat:
        similarity_range = (0.5, 0.5)
        model_id, dimensions = embedder.model_id, embedder.dimensions

        def embed_batch(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed_batch(texts)  # type: ignore[return-value]

    with Memory(tmp_path / "m.db", embedder=Flat()) as memory:  # type: ignore[arg-type]
        _chat(memory, [(12, "Dad", "Hospital rang. They've moved the op. Now Monday 26th, same time."),
                       (11, "Dad", "Only to the shop.")])
        found = memory.retrieve("How did Newcastle do the day before Dad's surgery?", user_id="fam", now=NOW,
                                config=RetrievalConfig(top_k=3, cache_ttl=0))
        assert found.metadata.time_range is None


def _placed_by(hits: list[tuple[str, float]], close: list[tuple[str, float]] | None,
               text: str = "The launch slipped again.") -> tuple[str | None, list[str]]:
    """Which memory's day placed "the day after the launch" (None: no scope), and what was embedded."""
    from engram.model import MemoryRecord
    from engram.retrieve.event_day import placed_by_event
    from engram.retrieve.understand import understand

    said = {"kw1": 20, "kw2": 15, "kw3": 12, "near": 8}
    records = {k: MemoryRecord(id=k, user_id="u", content=text, kind="message", created_at=NOW - timedelta(days=d),
                               recorded_at=NOW, content_hash=k)
               for k, d in said.items()}
    embedded: list[str] = []

    def near(text: str, n: int) -> list[tuple[str, float]]:
        embedded.append(text)
        return close or []

    plan = placed_by_event(understand("What broke the day after the launch?", now=NOW), lambda _t, n: hits[:n],
                           lambda ids: [records[i] for i in ids], NOW, None if close is None else near)
    if plan.time_range is None:
        return None, embedded
    placed = plan.time_range.start.date() - timedelta(days=1)
    return next(k for k, r in records.items() if r.created_at.date() == placed), embedded


def test_a_keyword_hit_that_stands_out_places_the_event_without_embedding_it() -> None:
    assert _placed_by([("kw1", 2.0), ("kw2", 1.0), ("kw3", 0.9)], [("near", 0.9)]) == ("kw1", [])
    assert _placed_by([("kw1", 0.4)], [("near", 0.9)]) == ("kw1", [])  # the only hit


def test_keyword_hits_alike_leave_the_event_to_meaning_when_it_is_close_enough() -> None:
    assert _placed_by([("kw1", 1.1), ("kw2", 1.0), ("kw3", 0.95)], [("near", 0.5)]) == ("near", ["the launch"])
    assert _placed_by([], [("near", 0.5)]) == ("near", ["the launch"])
    # Nothing close in meaning: the keyword's best as before, or no scope at all.
    assert _placed_by([("kw1", 1.1), ("kw2", 1.0), ("kw3", 0.95)], [("near", 0.1)]) == ("kw1", ["the launch"])
    assert _placed_by([], [("near", 0.1)]) == (None, ["the launch"])
    assert _placed_by([("kw1", 1.1), ("kw2", 1.0), ("kw3", 0.95)], None) == ("kw1", [])  # a keyword search


def test_a_hit_on_its_speakers_name_alone_says_nothing_of_the_event() -> None:
    # The keyword index holds a speaker's name; a text without the event's words matched by it alone.
    assert _placed_by([("kw1", 2.0)], [("near", 0.5)], text="Only to the shop.") == ("near", ["the launch"])
    assert _placed_by([("kw1", 2.0)], [("near", 0.1)], text="Only to the shop.") == (None, ["the launch"])
    assert _placed_by([("kw1", 2.0)], None, text="Only to the shop.") == (None, [])


@pytest.mark.parametrize(("unit", "op", "day", "first", "last"), [
    ("weekend", "before", "2026-10-11", "2026-10-03", "2026-10-04"),  # a Sunday: the weekend wholly before it
    ("weekend", "before", "2026-10-14", "2026-10-10", "2026-10-11"),
    ("weekend", "after", "2026-10-14", "2026-10-17", "2026-10-18"),
    ("week", "after", "2026-10-14", "2026-10-15", "2026-10-21"),
    ("night", "before", "2026-10-17", "2026-10-16", "2026-10-16"),
    ("tuesday", "after", "2026-10-17", "2026-10-20", "2026-10-20"),
])
def test_a_period_is_placed_against_the_events_day(unit: str, op: str, day: str, first: str, last: str) -> None:
    from datetime import date

    from engram.retrieve.event_day import _placed

    got = _placed(unit, op, date.fromisoformat(day))
    assert (got[0].isoformat(), got[1].isoformat()) == (first, last)
