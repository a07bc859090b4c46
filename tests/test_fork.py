"""A Memory used in a forked child (gunicorn --preload, Celery prefork, multiprocessing on Linux)
answers there as in the parent: it opens its store again instead of waiting on the parent's threads."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.pools import PerProcess, forks, process_pool
from engram.stores.builds import Builds
from engram.stores.open import open_store

CONFIG = RetrievalConfig(cache_ttl=0, min_score=0.0)
_FORK = multiprocessing.get_context("fork")


def in_child(work: Callable[[], Any]) -> Any:
    """``work()``'s value, computed in a forked child (an exception there fails the test)."""
    receive, send = _FORK.Pipe(duplex=False)

    def run() -> None:
        try:
            send.send(("ok", work()))
        except BaseException as exc:  # reported to the parent, whatever it is
            send.send(("error", repr(exc)))

    child = _FORK.Process(target=run)
    child.start()
    try:
        assert receive.poll(60), "the child did not answer within 60 s"
        status, value = receive.recv()
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
    assert status == "ok", value
    return value


def contents(memory: Memory, query: str) -> list[str]:
    return [e.record.content for e in memory.retrieve(query, user_id="u1", config=CONFIG).memories if e.record]


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    with Memory(tmp_path / "fork.db", embedder=FakeEmbedder(64)) as m:
        m.add("Alice ordered three widgets from Acme", user_id="u1")
        assert contents(m, "What did Alice order?")  # the parent's threads and connections are in use
        yield m


def test_a_forked_child_retrieves_writes_and_the_parent_sees_its_write(memory: Memory) -> None:
    inherited = memory.store

    def work() -> tuple[bool, float, list[str], Any]:
        started = time.perf_counter()
        found = contents(memory, "What did Alice order?")
        took = time.perf_counter() - started
        memory.add("Bob asked about the overdue invoice", user_id="u1")
        error = memory.retrieve("What did Bob ask?", user_id="u1", config=CONFIG).metadata.error
        return memory.store is inherited, took, found, error

    same_store, took, found, error = in_child(work)
    assert not same_store  # opened again in the child
    assert found == ["Alice ordered three widgets from Acme"]
    assert took < 2.0  # not the pipeline's deadline (5 s) spent waiting on the parent's threads
    assert error is None
    assert memory.store is inherited  # the parent's own is untouched
    assert "Bob asked about the overdue invoice" in contents(memory, "What did Bob ask?")


def test_a_grandchild_opens_its_own_store_too(memory: Memory) -> None:
    def grandchild() -> list[str]:
        return contents(memory, "What did Alice order?")

    assert in_child(lambda: in_child(grandchild)) == ["Alice ordered three widgets from Acme"]


def test_an_in_memory_store_is_kept_in_the_child_with_its_rows() -> None:
    with Memory(":memory:", embedder=FakeEmbedder(64)) as m:
        m.add("Carol prefers email over phone calls", user_id="u1")
        inherited = m.store
        assert contents(m, "How does Carol like to be contacted?")
        same, found = in_child(lambda: (m.store is inherited, contents(m, "How does Carol like to be contacted?")))
    assert same  # another in-memory database would be empty
    assert found == ["Carol prefers email over phone calls"]


def test_a_store_passed_in_is_kept_and_the_pipeline_is_the_childs_own(tmp_path: Path) -> None:
    store = open_store(tmp_path / "given.db")
    with Memory(store=store, embedder=FakeEmbedder(64)) as m:
        m.add("Dave renewed the support contract", user_id="u1")
        executor = m.pipeline.executor
        assert contents(m, "What did Dave renew?")

        def work() -> tuple[bool, bool, list[str]]:
            return m.store is store, m.pipeline.executor is executor, contents(m, "What did Dave renew?")

        same_store, same_executor, found = in_child(work)
    assert same_store and not same_executor
    assert found == ["Dave renewed the support contract"]


def test_per_process_values_are_made_again_after_a_fork() -> None:
    made: list[Any] = []
    value = PerProcess(lambda parent: made.append(parent) or len(made))
    assert value.get() == 1 and value.get() == 1 and made == [None]
    assert in_child(lambda: (forks(), value.get(), value.get(), made)) == (forks() + 1, 2, 2, [None, 1])
    assert value.get() == 1  # the parent keeps its own
    assert value.pop() == 1 and value.pop() is None
    assert in_child(lambda: value.pop()) is None  # a child pops nothing of the parent's


def test_pools_and_builds_run_work_in_a_forked_child() -> None:
    pool = process_pool("engram-test-fork", 1)
    assert pool.submit(lambda: 1).result(5) == 1
    builds = Builds("engram-test-builds")
    assert builds.start("u1", lambda: None)

    def work() -> tuple[bool, int, bool]:
        child_pool = process_pool("engram-test-fork", 1)
        ran: list[int] = []
        started = builds.start("u1", lambda: ran.append(1))
        builds.close()  # waits for the build
        return child_pool is pool, child_pool.submit(lambda: 2).result(5), started and ran == [1]

    assert in_child(work) == (False, 2, True)
    builds.close()
    assert isinstance(process_pool("engram-test-fork", 1), ThreadPoolExecutor)


@pytest.mark.postgres
def test_a_forked_child_opens_its_own_postgres_pool(postgres_store: Any, postgres_url: str) -> None:
    with Memory(postgres_url, embedder=FakeEmbedder(64)) as m:
        m.add("Erin moved the meeting to Friday", user_id="u1")
        inherited = m.store
        assert contents(m, "When is the meeting?")

        def work() -> tuple[bool, list[str]]:
            found = contents(m, "When is the meeting?")
            m.add("Frank cancelled his subscription", user_id="u1")
            return m.store is inherited, found

        same, found = in_child(work)
        assert not same and found == ["Erin moved the meeting to Friday"]
        # The parent's own connections still answer, and see the child's write.
        assert "Frank cancelled his subscription" in contents(m, "Who cancelled a subscription?")
