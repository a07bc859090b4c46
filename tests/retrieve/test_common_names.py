"""A name many of the user's memories carry keeps half its pull on the query's meaning: the query is
embedded again without it and read from the mean of the two vectors."""

from __future__ import annotations

from concurrent.futures import Future
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engram import Memory, RetrievalConfig
from engram.ext import Embedder, Vector
from engram.retrieve.candidates import AwaitedVector
from engram.retrieve.common_names import NAMES_KEPT, BlendedVector, Unnamed, without_common_names

NOW = datetime(2026, 11, 28, tzinfo=UTC)
COMMON = {"mention:marcus": 0.5, "mention:melanie": 0.2, "mention:alice moreau": 0.6, "mention:tom": 0.4}


@pytest.mark.parametrize(("query", "expected"), [
    ("Which foods do I keep out of dinners because of Marcus?",
     Unnamed("Which foods do I keep out of dinners because of ?", ("Marcus",))),
    ("What do Melanie's kids like to eat?", Unnamed("What do kids like to eat?", ("Melanie",))),
    ("What did alice  moreau say about the budget?", Unnamed("What did say about the budget?", ("alice  moreau",))),
    ("What did Tom do on November 13?", None),  # a name and a date: nothing left to mean
    ("What issues of National Geographic have I read?", None),  # few memories name it: it stays
    ("What did Marcusson paint?", None),  # a name is matched whole
])
def test_what_the_query_means_without_its_common_names(query: str, expected: Unnamed | None) -> None:
    entities = ("mention:marcus", "mention:melanie", "mention:alice moreau", "mention:tom",
                "mention:national geographic")
    assert without_common_names(query, entities, COMMON, "November 13") == expected


def test_a_title_is_no_word_left() -> None:
    assert without_common_names("When am I seeing Dr. Tom?", ("mention:tom",), COMMON) is None
    assert without_common_names("When is Tom's dentist appointment?", ("mention:tom",), COMMON) == Unnamed(
        "When is dentist appointment?", ("Tom",))


def _pending(vector: Vector | None) -> AwaitedVector:
    future: Future[Vector] = Future()
    future.set_result(np.zeros(2, dtype=np.float32) if vector is None else vector)
    return AwaitedVector(future, lambda f: None if vector is None else f.result())


def test_the_blend_is_the_weighted_mean_or_whichever_vector_came() -> None:
    own, unnamed = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)
    blended = BlendedVector(_pending(own), _pending(unnamed)).result()
    assert blended is not None
    mean = np.array([NAMES_KEPT, 1.0 - NAMES_KEPT])
    np.testing.assert_allclose(blended, mean / np.linalg.norm(mean), rtol=1e-6)  # of unit length, as any query's
    alone = BlendedVector(_pending(own), _pending(None))
    np.testing.assert_array_equal(alone.result(), own)
    assert not alone.blended  # the names were not set aside after all
    late = BlendedVector(_pending(None), _pending(unnamed))
    np.testing.assert_array_equal(late.result(), unnamed)
    assert late.blended


RULE = ("Weeknight dinners need to be quick. Rules: 30 minutes tops and absolutely nothing with tree nuts, "
        "June is allergic.")
CILANTRO = "Marcus thinks cilantro tastes like dish soap, so leave it out of anything I cook."
DIARY = [
    "Marcus and I are finally taking a weekend away in October, just the two of us.",
    "Marcus got the promotion! Head of the science department from January.",
    "Can you help me plan Marcus's 40th birthday party? Budget around 300 dollars.",
    RULE,
    "Marcus fixed the leaky tap in the upstairs bathroom, no plumber needed.",
    "The kids want to go as dinosaurs for Halloween, Marcus is going as a volcano.",
    CILANTRO,
    "Marcus is driving to his parents on Saturday so I have the car on Sunday.",
    "Felix won't touch anything spicy, so keep the heat on the side.",
]


def test_the_rule_that_names_nobody_is_found_beside_the_one_that_names_him(embedder: Embedder) -> None:
    with Memory(":memory:", embedder=embedder) as memory:
        memory.add_many([{"content": text, "user_id": "u", "role": "user", "session_id": f"s{at}",
                          "created_at": NOW - timedelta(days=40 - at * 3)} for at, text in enumerate(DIARY)])
        found = memory.retrieve("Which foods do I have to keep out of family dinners because of the kids or Marcus?",
                                user_id="u", config=RetrievalConfig(top_k=3, min_score=0.0, cache_ttl=0), now=NOW)
    # With the name whole, his trip to his parents and the Halloween costumes ranked above the rule.
    assert {m.content for m in found.memories[:2]} == {RULE, CILANTRO}
    assert found.metadata.meaning_without == ("Marcus",)
    assert found.to_dict()["metadata"]["meaningWithout"] == ["Marcus"]


class _FailsWithoutTheName:
    """The default model, failing on any question that does not name Marcus: the second embedding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id, self.dimensions = inner.model_id, inner.dimensions

    def embed_batch(self, texts: list[str]) -> Vector:
        if any("?" in text and "Marcus" not in text for text in texts):
            raise RuntimeError("the model fell over")
        return self.inner.embed_batch(texts)


def test_a_failing_second_embedding_leaves_the_question_as_asked(embedder: Embedder,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    config = RetrievalConfig(top_k=3, min_score=0.0, cache_ttl=0)
    query = "Which foods do I have to keep out of family dinners because of the kids or Marcus?"
    with Memory(":memory:", embedder=_FailsWithoutTheName(embedder)) as memory:
        memory.add_many([{"content": text, "user_id": "u", "role": "user", "session_id": f"s{at}",
                          "created_at": NOW - timedelta(days=40 - at * 3)} for at, text in enumerate(DIARY)])
        found = memory.retrieve(query, user_id="u", config=config, now=NOW)
    assert found.metadata.error is None and found.memories
    assert found.metadata.meaning_without == ()  # nothing was set aside after all
    assert "without its names failed" in caplog.text
