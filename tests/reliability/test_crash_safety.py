"""Crash safety: a process SIGKILLed mid-ingest never costs a memory whose add had returned.

A child ingests with ``add_many`` (FakeEmbedder: the embedder is not under test) and records each id
only after the call returned; the parent kills it at random points, reopens the store like a
restarting service would, and checks every promise: integrity, presence, keyword and vector recall.
"""

from __future__ import annotations

import random
from pathlib import Path

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from tests.reliability._workers import CrashLedger, crash_campaign, report, scale, verify_crash_store


def test_sigkill_mid_ingest_loses_no_acknowledged_memory(tmp_path: Path) -> None:
    kills = scale(20, 200)
    # Long runs pause less before each kill (~400 memories each) and deep-check fewer of the older
    # memories per kill (every kill still checks integrity, presence of all, and its newest 50 in depth),
    # so 200 kills stay within minutes.
    long = kills >= 100
    figures = crash_campaign(tmp_path, kills, max_pause=0.12 if long else 0.4, deep_cap=40 if long else 400)
    report("crash_safety", figures)
    assert figures["problems"] == []
    assert figures["kills_survived"] == kills
    assert figures["memories_lost"] == 0
    assert figures["memories_promised"] > kills  # the kills really landed mid-ingest, not before it


def test_crash_verifier_catches_a_lost_memory(tmp_path: Path) -> None:
    """The checker itself: a promised memory that is not stored, or stored wrongly, is reported."""
    db = tmp_path / "v.db"
    with Memory(db, embedder=FakeEmbedder()) as memory:
        kept = memory.add("kx1 invoice ledger", user_id="u0")
        gone = memory.add("kx2 freight harbor", user_id="u0")
        memory.store.delete("u0", gone.id)
    ledger = CrashLedger(present={kept.id: ("u0", kept.content), gone.id: ("u0", gone.content)})
    result = verify_crash_store(str(db), ledger, [kept.id, gone.id], random.Random(0))
    assert result["lost"] == [gone.id]
    assert result["integrity"] == []
    assert result["keyword_miss"] == [] and result["content_mismatch"] == []
