"""What a question's keywords are: its content words, not the words that frame it."""

from __future__ import annotations

from engram.memory import Memory
from engram.model import Filters
from engram.text import query_terms


def test_question_framing_and_time_words_are_not_keywords() -> None:
    assert query_terms("How many fish are there in my aquariums?") == ["fish", "aquarium"]
    assert query_terms("How much did Acme order last month?") == ["acm", "order"]
    # A query of nothing else still searches for what it has.
    assert query_terms("How many?") == ["mani"]


def test_units_of_time_are_keywords_outside_a_time_scope() -> None:
    # "I drove for five hours" answers this: "hours" is what is asked about, "in total" frames it.
    assert query_terms("How many hours in total did I spend driving?") == ["hour", "spend", "drive"]
    assert query_terms("How many days did I spend in Japan?") == ["day", "spend", "japan"]
    # Inside a scope they are the time signal's, not words to match.
    assert query_terms("What did Bob ask last week?") == ["bob", "ask"]
    assert query_terms("Which ceremonies did I attend in the past three months?") == ["ceremoni", "attend"]
    assert query_terms("What did I cook a few days ago?") == ["cook"]
    assert query_terms("What day of the week is my cocktail class?") == ["cocktail", "class"]
    # "total" names a thing unless "in total" frames the question.
    assert query_terms("What was the total cost of the trip, all combined?") == ["total", "cost", "trip"]


def test_how_many_finds_the_topic_not_the_word_many(each_backend: Memory) -> None:
    stored = each_backend.add_many([
        {"content": "How many chemical elements are there?", "user_id": "u"},
        {"content": "My 20-gallon tank has 10 neon tetras, one fish more than last year.", "user_id": "u"},
    ])
    hits = each_backend.store.keyword_search("u", "How many fish are there in total?", 5, Filters())
    assert [memory_id for memory_id, _ in hits][:1] == [stored[1].id]
