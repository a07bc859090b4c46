"""Issue 41 (8): records a store answers with are shared by its cache with later questions, other
users' through a shared scope (``also=["kb"]``): a caller's edit of one must not change what the
next caller gets."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.model import ReadOnlyDict
from tests.reliability._workers import report

ANY = RetrievalConfig(min_score=0.0, top_k=5)
META = {"source": "handbook", "pages": [3, 4], "owner": {"team": "support"}}


def test_editing_a_shared_records_metadata_changes_nothing_for_the_next_user(tmp_path: Path) -> None:
    with Memory(tmp_path / "kb.db", embedder=FakeEmbedder()) as memory:
        memory.add("Refunds are processed within 14 days of the request.", user_id="kb", metadata=META)
        first = memory.retrieve("how long do refunds take", user_id="alice", also=["kb"], config=ANY)
        shared = next(m for m in first.memories if m.record.user_id == "kb")
        metadata = shared.record.metadata
        attempts = [
            lambda: metadata.__setitem__("source", "attacker"),  # type: ignore[index]
            lambda: metadata.pop("source"),  # type: ignore[attr-defined]
            lambda: metadata.update(source="attacker"),  # type: ignore[attr-defined]
            lambda: metadata["pages"].append(666),
            lambda: metadata["owner"].__setitem__("team", "attacker"),
        ]
        refused = 0
        for attempt in attempts:
            try:
                attempt()
            except TypeError:
                refused += 1
        # Still what callers serialise, compare and copy.
        assert json.loads(json.dumps(metadata)) == META and metadata == META
        assert isinstance(metadata, dict) and isinstance(metadata, ReadOnlyDict)
        assert copy.deepcopy(metadata) == META and pickle.loads(pickle.dumps(metadata)) == META
        mutable = dict(metadata)
        mutable["source"] = "mine"  # a copy is the caller's own
        second = memory.retrieve("how long do refunds take", user_id="bob", also=["kb"], config=ANY)
        again = next(m for m in second.memories if m.record.user_id == "kb")
        report("shared_scope_mutation", {"attempts": len(attempts), "refused": refused,
                                         "next_user_changed": again.record.metadata != META})
        assert refused == len(attempts)
        assert again.record.metadata == META
        assert memory.get(again.record.id, user_id="kb").metadata == META
