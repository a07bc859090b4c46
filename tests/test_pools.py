"""The process-wide worker pools (pre-scan fits, entity indexes) are each process's own."""

from __future__ import annotations

from engram.ingest import entity_index
from engram.stores.sqlite import prescan
from tests.test_fork import in_child


def test_a_forked_child_works_on_threads_of_its_own() -> None:
    parents = prescan.fitter(), entity_index._pool()
    assert prescan.fitter() is parents[0] and entity_index._pool() is parents[1]  # made once a process
    for parent in parents:
        assert parent.submit(lambda: 7).result(timeout=10) == 7  # the parent's threads are running

    def child() -> list[tuple[bool, int]]:  # holding the parent's pools, but not their threads
        made = prescan.fitter(), entity_index._pool()
        return [(mine is not theirs, mine.submit(lambda: 7).result(timeout=10)) for mine, theirs in zip(
            made, parents, strict=True)]

    assert in_child(child) == [(True, 7), (True, 7)]
