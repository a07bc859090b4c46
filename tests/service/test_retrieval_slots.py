"""A server process ranks at most ``retrievals_at_once`` retrievals at a time; the rest wait their
turn, their queries' embeddings already started."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.embedders.fake import FakeEmbedder
from engram.memory import Memory
from engram.service.auth import KeyStore
from engram.service.workers import build_app


def _server(tmp_path: Path, bound: int) -> tuple[Any, Any, str]:
    db = tmp_path / "svc.db"
    with Memory(db, embedder=FakeEmbedder(16)) as memory:
        memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact")
    keys = KeyStore(db)
    token = keys.create(["u1"])[1]
    keys.close()
    app, close = build_app(str(db), "hash-16", 0.0, 200.0, 1 << 20, limiter_path=None, retrievals_at_once=bound)
    return app, close, token


def _peak_of_concurrent_retrievals(app: Any, token: str, requests: int) -> tuple[int, list[int], list[int]]:
    """The most retrievals ranking at once, the answers' statuses, and how many queries had started
    embedding when each ranking began."""
    pipeline = app.state.service.memory.pipeline
    running, peak, embeds, lock = [0], [0], [0], threading.Lock()
    embedded_at_start: list[int] = []
    run, embed = pipeline._run, pipeline._embed

    def started_embedding(*args: Any, **kwargs: Any) -> Any:
        with lock:
            embeds[0] += 1
        return embed(*args, **kwargs)

    def counted(*args: Any, **kwargs: Any) -> Any:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            embedded_at_start.append(embeds[0])
        try:
            time.sleep(0.05)  # long enough for the other requests to arrive meanwhile
            until = time.monotonic() + 5.0
            while embeds[0] < requests and time.monotonic() < until:  # a slow machine: let them all arrive
                time.sleep(0.005)
            return run(*args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    pipeline._run, pipeline._embed = counted, started_embedding

    async def fire() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            answers = await asyncio.gather(*(
                client.post("/v1/retrieve", headers={"Authorization": f"Bearer {token}"},
                            json={"userId": "u1", "message": f"payment terms {i}"})
                for i in range(requests)
            ))
        return [a.status_code for a in answers]

    statuses = asyncio.run(fire())
    return peak[0], statuses, embedded_at_start


@pytest.mark.parametrize("bound", [1, 3])
def test_no_more_retrievals_run_at_once_than_the_bound(tmp_path: Path, bound: int) -> None:
    app, close, token = _server(tmp_path, bound)
    try:
        peak, statuses, embedded_at_start = _peak_of_concurrent_retrievals(app, token, 8)
    finally:
        close()
    assert statuses == [200] * 8
    assert peak == bound  # reached (the requests did overlap) and never passed
    # The requests waiting for a turn had started their embeddings (embedding inside the turn, only
    # the first round's would have, and the first round would have waited here in vain).
    assert embedded_at_start[bound] == 8


def test_without_a_bound_they_all_run_at_once(tmp_path: Path) -> None:
    app, close, token = _server(tmp_path, 0)
    try:
        assert app.state.service.settings.retrievals_at_once is None
        peak, statuses, _ = _peak_of_concurrent_retrievals(app, token, 8)
    finally:
        close()
    assert statuses == [200] * 8 and peak > 3

