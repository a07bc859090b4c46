"""``AsyncMemory``: the congruence script awaited through it answers as ``Memory`` does, every
shared method is a coroutine, and 100 concurrent retrievals leave the event loop responsive."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engram.aio import AsyncEngramClient, AsyncMemory
from engram.api import MemoryAPI
from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from tests.service import harness, running
from tests.service.test_congruence import Names, script


class Awaiting:
    """A blocking face on an ``AsyncMemory``: each call is awaited to the end on its own loop, so
    the congruence script (written for blocking calls) awaits every method it uses."""

    def __init__(self, memory: AsyncMemory) -> None:
        self.memory = memory
        self.loop = asyncio.new_event_loop()
        self.awaited: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.memory, name)
        if not inspect.iscoroutinefunction(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            self.awaited.add(name)
            return self.loop.run_until_complete(method(*args, **kwargs))

        return call


def _shared_methods() -> list[str]:
    return sorted(n for n, v in vars(MemoryAPI).items() if not n.startswith("_") and callable(v))


def test_async_memory_answers_as_memory_and_awaits_every_shared_method(tmp_path: Path) -> None:
    for side in ("sync", "async", "a", "b"):
        (tmp_path / side).mkdir()
    plain = Memory(tmp_path / "sync" / "m.db", embedder=FakeEmbedder(64))
    awaiting = Awaiting(AsyncMemory(tmp_path / "async" / "m.db", embedder=FakeEmbedder(64)))
    here = Names()(script(plain, tmp_path / "a"))
    there = Names()(script(awaiting, tmp_path / "b"))  # type: ignore[arg-type]  # MemoryAPI by delegation
    for step, (mine, theirs) in enumerate(zip(here, there, strict=True)):
        assert mine == theirs, f"step {step} differs"
    # What the script leaves out, awaited here against the same answers.
    plain.add("left for reset", user_id="u2")
    awaiting.add("left for reset", user_id="u2")
    assert {**awaiting.stats(), "path": ""} == {**plain.stats(), "path": ""}
    assert awaiting.reset() == plain.reset() == 1
    plain.close()
    assert awaiting.close() is None
    assert awaiting.awaited == {*_shared_methods(), "ingest"}
    assert all(inspect.iscoroutinefunction(getattr(awaiting.memory, n)) for n in _shared_methods())


async def _lag_during(work: Callable[[], Any]) -> tuple[float, float]:
    """(the longest the loop was late waking a 5 ms sleeper, seconds the work took)."""
    worst = 0.0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal worst
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.005)
            worst = max(worst, time.perf_counter() - start - 0.005)

    tick = asyncio.create_task(ticker())
    started = time.perf_counter()
    await work()
    took = time.perf_counter() - started
    done.set()
    await tick
    return worst, took


def test_100_concurrent_retrievals_do_not_block_the_loop(tmp_path: Path) -> None:
    async def main() -> tuple[float, float, int]:
        async with AsyncMemory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
            await memory.add_many([{"content": f"Customer {i} pays by invoice in {i} days", "user_id": "u1"}
                                   for i in range(200)])

            async def work() -> list[Any]:
                return list(await asyncio.gather(*(
                    memory.retrieve(f"How does customer {i} pay?", user_id="u1") for i in range(100))))

            worst, took = await _lag_during(work)
            found = await memory.retrieve("How does customer 7 pay?", user_id="u1")
            return worst, took, len(found.memories)

    worst, took, found = asyncio.run(main())
    assert found > 0
    # Run on the loop itself, the 100 retrievals would hold it for ``took``; in threads the loop
    # only waits for the GIL, a few switch intervals at a time.
    assert worst < max(0.25, took / 4), (worst, took)


def test_async_engram_client_awaits_the_service(tmp_path: Path) -> None:
    h = harness(tmp_path, FakeEmbedder(64))

    async def main(url: str) -> dict[str, Any]:
        async with AsyncEngramClient(url, h.key("u1")) as client:
            await client.add([{"role": "user", "content": "I love sci-fi movies"}], user_id="u1", run_id="r")
            result: dict[str, Any] = await client.get_all(user_id="u1", run_id="r")
            return result

    with running(h.app) as url:
        got = asyncio.run(main(url))
    assert [r["memory"] for r in got["results"]] == ["I love sci-fi movies"]
    h.close()
