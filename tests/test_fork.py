"""A Memory used in a forked child (gunicorn --preload, Celery prefork, multiprocessing on Linux)
answers there as in the parent: it opens its store again instead of waiting on the parent's threads."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from engram import Memory, RetrievalConfig
from engram.embedders import _lock as embedder_lock
from engram.embedders.batching import batching
from engram.embedders.fake import FakeEmbedder
from engram.metrics import InMemoryMetrics
from engram.model import _last_ids, new_id
from engram.pools import PerProcess, ProcessLock, process_pool
from engram.stores.builds import Builds
from engram.stores.open import open_store
from engram.stores.sqlite.ann import _builds as ann_builds

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
        memory.add("Written in the grandchild", user_id="u1")
        return contents(memory, "What did Alice order?")

    def child() -> tuple[list[str], list[str]]:
        memory.add("Written in the child", user_id="u1")  # the child's own store, then forked again
        return contents(memory, "What did Alice order?"), in_child(grandchild)

    mine, theirs = in_child(child)
    assert "Alice ordered three widgets from Acme" in mine and "Alice ordered three widgets from Acme" in theirs
    assert {"Written in the child", "Written in the grandchild"} <= {r.content for r in memory.list(user_id="u1")}


def test_a_child_reopens_the_same_file_whatever_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    with Memory("relative.db", embedder=FakeEmbedder(64)) as m:
        m.add("Gina asked for a refund", user_id="u1")

        def work() -> list[str]:
            os.chdir(tmp_path / "b")
            return contents(m, "Who asked for a refund?")

        assert in_child(work) == ["Gina asked for a refund"]
    assert not (tmp_path / "b" / "relative.db").exists()


def test_closing_in_a_child_that_never_used_it_opens_nothing(memory: Memory) -> None:
    def work() -> bool:
        memory.close()
        return memory._wiring.current() is None

    assert in_child(work)
    assert contents(memory, "What did Alice order?")  # the parent's store is still open


def test_a_child_forked_while_the_parent_embeds_embeds_on_its_own(tmp_path: Path) -> None:
    entered, release, parent = threading.Event(), threading.Event(), os.getpid()

    class Slow(FakeEmbedder):
        def embed_batch(self, texts: Any) -> Any:
            if "block me" in texts[0] and os.getpid() == parent:
                entered.set()
                release.wait(30)
            return super().embed_batch(texts)

    with Memory(tmp_path / "busy.db", embedder=batching(Slow(64))) as m:
        m.add("Hank booked the venue", user_id="u1")
        # The embedder alone: a parent's thread inside SQLite at the fork could leave SQLite's own
        # mutexes held in the child, which no Python code can undo (forks happen at idle points).
        busy = threading.Thread(target=lambda: m.embedder.embed_batch(["block me"]))
        busy.start()
        try:
            assert entered.wait(10)  # the parent is mid-embedding at the fork
            found, error = in_child(lambda: (
                contents(m, "Who booked the venue?"), m.retrieve("venue", user_id="u1", config=CONFIG).metadata.error,
            ))
        finally:
            release.set()
            busy.join(10)
    assert found == ["Hank booked the venue"] and error is None


def test_an_in_memory_store_is_kept_in_the_child_with_its_rows() -> None:
    with Memory(":memory:", embedder=FakeEmbedder(64)) as m:
        m.add("Carol prefers email over phone calls", user_id="u1")
        inherited = m.store
        assert contents(m, "How does Carol like to be contacted?")
        same, found = in_child(lambda: (m.store is inherited, contents(m, "How does Carol like to be contacted?")))
    assert same  # another in-memory database would be empty
    assert found == ["Carol prefers email over phone calls"]


def test_a_store_passed_in_is_kept_and_the_pipeline_is_the_childs_own() -> None:
    store = open_store(":memory:")  # a file's connection must not be used across a fork
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
    assert value.current() is None
    assert value.get() == 1 and value.get() == 1 and value.current() == 1 and made == [None]
    assert in_child(lambda: (value.current(), value.get(), value.get(), made)) == (None, 2, 2, [None, 1])
    assert value.get() == 1  # the parent keeps its own
    assert value.pop() == 1 and value.pop() is None
    assert in_child(lambda: value.pop()) is None  # a child pops nothing of the parent's


def in_c_child(work: Callable[[], str]) -> str:
    """``work()``'s answer in a child forked in C, as uWSGI forks (no Python fork hooks run there);
    a child that does not answer within 20 s is killed and the test fails."""
    receive, send = os.pipe()
    pid = ctypes.PyDLL(None).fork()  # PyDLL: the interpreter lock stays held through the fork
    if pid == 0:
        try:
            answer = work()
        except BaseException as exc:
            answer = repr(exc)
        os.write(send, answer.encode())
        os._exit(0)
    os.close(send)
    ready: list[int] = []
    try:
        ready, _, _ = select.select([receive], [], [], 20)
        answer = os.read(receive, 200).decode() if ready else "no answer: stuck on a lock held at the fork?"
    finally:
        os.close(receive)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return answer


def test_a_child_forked_in_c_without_pythons_fork_hooks_makes_its_own_pool() -> None:
    # uWSGI forks its workers so by default: os.register_at_fork hooks never run in them.
    pool = process_pool("engram-test-cfork", 1)
    assert pool.submit(lambda: 1).result(5) == 1

    def work() -> str:
        mine = process_pool("engram-test-cfork", 1)
        return f"{mine is pool} {mine.submit(lambda: 7).result(5)}"

    assert in_c_child(work) == "False 7"


@contextlib.contextmanager
def held_by_a_thread(lock: Callable[[], Any]) -> Iterator[None]:
    """``lock()`` held by another thread of this process meanwhile (as at a fork in mid-work)."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock():
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(10)
        yield
    finally:
        release.set()
        thread.join(10)


@pytest.mark.parametrize("lock", ["ids", "embedder", "ann builds"])
def test_a_lock_a_parent_thread_held_at_a_c_fork_is_not_the_childs(lock: str) -> None:
    held = {"ids": lambda: _last_ids.get()[0], "embedder": embedder_lock.get, "ann builds": ann_builds.get}[lock]

    def use() -> str:
        mine = held()
        free = mine.acquire(timeout=5)
        if free:
            mine.release()
        return f"{free} {len(new_id())} {new_id() < new_id()}"

    with held_by_a_thread(held):
        assert in_c_child(use) == "True 26 True"


def test_threads_looking_first_in_a_c_forked_child_share_one_lock() -> None:
    # Many locks, each looked at first by 8 threads at once: a check-then-set lock differed
    # between threads for ~1% of them.
    locks = [ProcessLock() for _ in range(200)]
    parents = [lock.get() for lock in locks]

    def race() -> str:
        sys.setswitchinterval(1e-6)  # threads interleave as often as they can
        mixed = 0
        for lock, parents_lock in zip(locks, parents, strict=True):
            barrier, got = threading.Barrier(8), []

            def look(lock: ProcessLock = lock, barrier: threading.Barrier = barrier, got: list[int] = got) -> None:
                barrier.wait()
                got.append(id(lock.get()))

            threads = [threading.Thread(target=look) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            mixed += len(set(got)) > 1 or id(parents_lock) in got
        return f"{mixed} of {len(locks)} locks differed between threads"

    assert in_c_child(race) == "0 of 200 locks differed between threads"


def test_pools_and_builds_run_work_in_a_forked_child() -> None:
    pool = process_pool("engram-test-fork", 1)
    assert pool.submit(lambda: 1).result(5) == 1
    builds = Builds("engram-test-builds")
    running, release = threading.Event(), threading.Event()
    assert builds.start("u1", lambda: (running.set(), release.wait(30)))
    assert running.wait(10) and "u1" in builds  # the parent's build runs at the fork, and never ends there

    def work() -> tuple[bool, int, bool, bool]:
        child_pool = process_pool("engram-test-fork", 1)
        ran: list[int] = []
        started = builds.start("u1", lambda: ran.append(1))
        builds.close()  # waits for the child's build
        return child_pool is pool, child_pool.submit(lambda: 2).result(5), started, ran == [1]

    try:
        assert in_child(work) == (False, 2, True, True)
    finally:
        release.set()
        builds.close()
    assert isinstance(process_pool("engram-test-fork", 1), ThreadPoolExecutor)


def test_metrics_a_parent_thread_held_at_the_fork_count_in_the_child() -> None:
    metrics = InMemoryMetrics()
    metrics.increment("retrieval.cache_misses")

    def count() -> float:
        metrics.increment("retrieval.cache_misses")
        return metrics.counter("retrieval.cache_misses")

    with held_by_a_thread(metrics._lock.get):  # a retrieval counting at the moment of the fork
        assert in_child(count) == 2.0  # the parent's count, and the child's own
    assert metrics.counter("retrieval.cache_misses") == 1.0


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
