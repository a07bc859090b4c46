"""A speaker's short turns are read with the speaker's name taken out of their similarity."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.errors import EmbedderError
from engram.ext import Embedder
from engram.model import MemoryRecord
from engram.retrieve.speaker_names import SHORT_TURN, NameVectors, without_speakers

NOW = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)


def turn(mid: str, role: str, content: str) -> MemoryRecord:
    return MemoryRecord(id=mid, content=content, role=role, user_id="u", kind="message", created_at=NOW,
                        recorded_at=NOW, content_hash=mid)


class Counting:
    """An embedder over three axes: a name is the first axis, anything else the second."""

    model_id = "counting"
    dimensions = 3

    def __init__(self, fail: bool = False, delay: float = 0.0) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail
        self.delay = delay

    def embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        time.sleep(self.delay)
        if self.fail:
            raise EmbedderError("down")
        names = ("kofi", "nadia")
        return np.array([[2.0, 0.0, 0.0] if text.casefold() in names else [0.0, 1.0, 0.0] for text in texts],
                        dtype=np.float32)


def unit(*values: float) -> npt.NDArray[np.float32]:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


POOL = ThreadPoolExecutor(max_workers=1)


def names_of(cache: NameVectors, embedder: Counting, scope: tuple[str, ...] = ("u",),
             deadline: float | None = None) -> Callable[[Sequence[str]], Any]:
    return partial(cache.of, scope, embedder, POOL, deadline)


def test_only_the_named_speakers_short_turns_lose_the_name() -> None:
    records = [turn("short", "Kofi", "Poor lad"), turn("long", "Kofi", "x" * (SHORT_TURN + 1)),
               turn("other", "Nadia", "Poor lad"), turn("bare", "KOFI", "Kofi")]
    vectors = {"short": unit(1, 0.2, 1), "long": unit(1, 0.2, 1), "other": unit(1, 0.2, 1), "bare": unit(1, 0, 0)}
    said = {"short": "kofi", "long": "kofi", "other": "nadia", "bare": "kofi"}
    embedder = Counting()
    cosines = np.array([0.9, 0.9, 0.9, 0.9])
    got = without_speakers(cosines, records, said, frozenset({"kofi"}), vectors, unit(1, 0, 1),
                           names_of(NameVectors(), embedder))
    # Off the name's axis the query is (0, 0, 1) and the short turn (0, 0.2, 1): cosine 0.98.
    assert got[0] == pytest.approx(1 / np.sqrt(1.04))
    assert got[1:3].tolist() == [0.9, 0.9]  # a longer turn, another speaker's: as they were
    assert got[3] == 0.0  # nothing but the name ("KOFI" and "Kofi" one direction, not two)
    assert cosines.tolist() == [0.9, 0.9, 0.9, 0.9]  # the caller's column is left alone
    assert embedder.calls == [["Kofi", "KOFI"], ["Kofi", "KOFI"]]  # as stored texts, then as queries
    # A query that is hardly more than the name keeps every similarity.
    assert without_speakers(cosines, records, said, frozenset({"kofi"}), vectors, unit(1, 0, 0.05),
                            names_of(NameVectors(), embedder)).tolist() == cosines.tolist()


def test_a_names_vectors_are_kept_per_scope_and_a_late_or_failing_embedder_changes_nothing() -> None:
    embedder, cache = Counting(), NameVectors(size=2)
    first = cache.of(("u",), embedder, POOL, None, ["Kofi", "Kofi"])
    assert [v.tolist() for v in first["Kofi"]] == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]  # unit vectors
    cache.of(("u",), embedder, POOL, None, ["Kofi"])
    assert len(embedder.calls) == 2
    cache.of(("v",), embedder, POOL, None, ["Kofi"])  # another user's asking reuses nothing of "u"'s
    assert len(embedder.calls) == 4
    cache.of(("u",), embedder, POOL, None, ["Nadia"])  # the oldest leaves a full cache
    cache.of(("u",), embedder, POOL, None, ["Kofi"])
    assert len(embedder.calls) == 8
    records = [turn("short", "Kofi", "Poor lad")]
    for broken in (Counting(fail=True), Counting(delay=0.5)):
        got = without_speakers(np.array([0.7]), records, {"short": "kofi"}, frozenset({"kofi"}),
                               {"short": unit(1, 1, 0)}, unit(1, 0, 1),
                               names_of(NameVectors(), broken, deadline=time.perf_counter() + 0.05))
        assert got.tolist() == [0.7]


def test_the_answer_ranks_above_the_speakers_small_talk(tmp_path: Path, embedder: Embedder) -> None:
    chat = [("Nadia", "How's your week been?"), ("Kofi", "Poor lad"), ("Kofi", "What leg thing"),
            ("Kofi", "Oh no. Is it serious?"), ("Kofi", "The usual then"), ("Kofi", "I'm so sorry Nads."),
            ("Nadia", "You were limping at the weekend, what happened?"),
            ("Kofi", "Oh that. Went over on my ankle at five-a-side last Wednesday. Swollen like a grapefruit.")]
    with Memory(tmp_path / "chat.db", embedder=embedder) as memory:
        memory.add_many([{"content": text, "role": who, "user_id": "u", "session_id": f"s{at}",
                          "created_at": NOW - timedelta(days=30 - at)} for at, (who, text) in enumerate(chat)])
        found = memory.retrieve("When did Kofi injure himself playing football?", user_id="u", now=NOW,
                                config=RetrievalConfig(top_k=3, cache_ttl=0)).memories
    # Without the name taken out, "Poor lad" was first (clip_sentences keeps the answer's first two).
    assert found[0].content.startswith("Oh that. Went over on my ankle"), [m.content for m in found]


def test_a_write_to_a_user_drops_their_names_vectors(tmp_path: Path) -> None:
    embedder, cache = Counting(), NameVectors()
    for scope in (("u",), ("u", "kb"), ("v",)):
        cache.of(scope, embedder, POOL, None, ["Kofi"])
    cache.forget("u")  # every scope that holds "u", shared ones too; "v"'s stays
    cache.of(("v",), embedder, POOL, None, ["Kofi"])
    assert len(embedder.calls) == 6
    for scope in (("u",), ("u", "kb")):
        cache.of(scope, embedder, POOL, None, ["Kofi"])
    assert len(embedder.calls) == 10
    # Through Memory: forgetting a user leaves none of their speakers' names kept in the process.
    with Memory(tmp_path / "forget.db", embedder=FakeEmbedder(384)) as memory:
        memory.add_many([{"content": "Poor lad", "role": "Kofi", "user_id": "u", "created_at": NOW},
                         {"content": "He hurt his ankle at five-a-side", "role": "Nadia", "user_id": "u",
                          "created_at": NOW + timedelta(minutes=1)}])
        memory.retrieve("What did Kofi say?", user_id="u", now=NOW + timedelta(days=1),
                        config=RetrievalConfig(cache_ttl=0))
        kept = memory.caches.speaker_names._kept  # type: ignore[attr-defined]
        assert any(key[0] == ("u",) for key in kept)
        memory.forget_user("u")
        assert not any("u" in key[0] for key in kept)
