"""The process-wide worker pools (pre-scan fits, entity indexes) are each process's own."""

from __future__ import annotations

import pytest

from engram import pools
from engram.ingest import entity_index
from engram.stores.sqlite import prescan


def test_a_forked_child_works_on_threads_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    parents = prescan.fitter(), entity_index._pool()
    assert prescan.fitter() is parents[0] and entity_index._pool() is parents[1]  # made once a process
    # Another process, holding the parent's pools but not their threads.
    monkeypatch.setattr(pools.os, "getpid", lambda: -1)
    children = prescan.fitter(), entity_index._pool()
    for parent, child in zip(parents, children, strict=True):
        assert child is not parent
        assert child.submit(lambda: 7).result(timeout=10) == 7
