"""``engram serve --workers N``: what each uvicorn worker process runs.

``serve`` puts its settings in the environment (:data:`WORKER_ENV`) and has uvicorn start N
processes accepting on one socket; each builds its own service over its own memory and key store
(:func:`worker_app`), so the workers share nothing but the store and the rate limit's SQLite file.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from uvicorn.protocols.http.h11_impl import H11Protocol

from engram.ext import Embedder
from engram.ingest.embed import embed_texts
from engram.service.auth import KeyStore

__all__ = [
    "COLLECTOR_THRESHOLDS", "RETRIEVAL_THREADS", "WORKER_ENV", "NoDelayHttp", "build_app", "server_embedder",
    "tune_collector", "worker_app",
]

log = logging.getLogger("engram.service")

WORKER_ENV = "ENGRAM_SERVE_WORKER"
#: Threads of a server's retrieval executor, where each retrieval embeds its query. The library's
#: two let at most two queries wait for the model at once, so its batches held one or two; with 16
#: (16 retrievals in one process, MiniLM) they held ~6 and a retrieval cost 1-2 ms less CPU.
RETRIEVAL_THREADS = 16
#: A server process's garbage collector: young collections every 5,000 new objects instead of 700.
#: A request allocates thousands of short-lived containers, nearly all freed by reference counting
#: within the request; at 700 the collector ran many times a request over objects about to go.
#: 0.34 ms less CPU a request (6.76 against 7.09 ms, bench/service_cpu.py, 4 rounds; 2,000 saved
#: 0.25); a young collection took at most 5 ms in a cold multi-tenant run.
COLLECTOR_THRESHOLDS = (5000, 10, 10)


@runtime_checkable
class Warms(Protocol):
    """A store that can load its largest users' indexes before the first question (the embedded one)."""

    def warm(self, users: int) -> list[str]: ...


class NoDelayHttp(H11Protocol):
    """HTTP/1.1 with Nagle's algorithm off on every connection.

    Uvicorn's workers share a socket it makes without naming TCP, so asyncio does not set
    TCP_NODELAY on the connections it accepts, and a response written in two segments waited for
    the client's delayed ACK: +42 ms on every request measured on loopback (2.6 ms -> 44 ms for
    /healthz with two workers).
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


def tune_collector() -> None:
    """For a process that only serves, once its app is built: what is alive then (the model, the
    imports, the app) is frozen out of every later collection, and young collections are rarer
    (:data:`COLLECTOR_THRESHOLDS`). Not for the library: the process is its caller's."""
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def worker_app() -> Any:
    """One worker's app (uvicorn calls this in each process), from what ``serve`` put in the environment;
    its memory, key store and limiter close when the worker shuts down."""
    from engram.service.logs import configure_logging

    spec = json.loads(os.environ[WORKER_ENV])
    configure_logging(spec["log_level"])
    app, close = build_app(spec["target"], spec["embedder"], spec["rate"], spec["burst"], spec["max_body_bytes"],
                           limiter_path=spec["limiter_path"], retrievals_at_once=spec["retrievals_at_once"],
                           warm_users=spec["warm_users"], require_session=spec.get("require_session", False))
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        try:
            async with inner(app) as state:
                yield state
        finally:
            close()

    app.router.lifespan_context = lifespan
    tune_collector()
    return app


def server_embedder(name: str | None) -> Embedder:
    """The embedder one server process runs: the named one (MiniLM by default) with one intra-op
    thread, behind a queue that embeds concurrent queries as one batch.

    A server's parallelism is its requests (and workers), not one query's matrix products: MiniLM
    with a thread per core spent 13.5 ms of CPU on a query against 6.0 ms on one thread (its pool
    spins while it waits), on a machine whose other core is serving another request. The pipeline
    embeds queries on its executor, which :func:`build_app` widens (:data:`RETRIEVAL_THREADS`) so
    that concurrent queries meet in one model call.
    """
    from engram.embedders import named_embedder
    from engram.embedders.batching import batching

    if name in (None, "", "minilm", "minilm-int8"):
        from engram.embedders.onnx_minilm import MiniLMEmbedder

        return batching(MiniLMEmbedder(threads=1, integer=name == "minilm-int8"))
    inner = named_embedder(name)
    assert inner is not None  # only the MiniLM names give None
    return batching(inner)


def build_app(target: str, embedder_name: str | None, rate: float, burst: float, max_body_bytes: int,
              limiter_path: str | None, retrievals_at_once: int = 0,
              warm_users: int = 0, require_session: bool = False) -> tuple[Any, Callable[[], None]]:
    """The service over its own memory and key store (and a shared rate limit when ``limiter_path``
    is given), and what closes them. ``retrievals_at_once``: retrievals running at once (0: no bound).
    ``warm_users``: how many of the largest users' indexes to load first (a store that can, the
    embedded one: PostgreSQL keeps its own caches). ``require_session``: ``/v1/retrieve`` searches
    only for a request naming its ``sessionId`` (the retrieval policy's gating)."""
    from engram.memory import Memory
    from engram.service.app import create_app
    from engram.service.deps import ServiceSettings
    from engram.service.ratelimit import SharedRateLimiter

    memory = Memory(target, embedder=server_embedder(embedder_name))  # serve checked the name
    memory.pipeline.executor.shutdown()  # not used yet: replaced by a wider one
    memory.pipeline.executor = ThreadPoolExecutor(RETRIEVAL_THREADS, thread_name_prefix="engram-candidates")
    keys = KeyStore(target)

    def close() -> None:
        keys.close()
        memory.close()

    try:
        # The models before the first request, not during it: MiniLM's that embeds what is stored
        # loads at its first use (its question model with the embedder).
        embed_texts(memory.embedder, ["warm"])
        if warm_users and isinstance(memory.store, Warms):
            started = time.perf_counter()
            warmed = memory.store.warm(warm_users)
            log.info("warmed %d users in %.1f s", len(warmed), time.perf_counter() - started)
        settings = ServiceSettings(rate=rate, burst=burst, max_body_bytes=max_body_bytes,
                                   retrievals_at_once=retrievals_at_once or None, require_session=require_session)
        app = create_app(memory, keys, settings)
        if limiter_path is not None:
            app.state.service.limiter = SharedRateLimiter(limiter_path, rate, burst)
    except BaseException:
        close()
        raise
    limiter = app.state.service.limiter

    def close_all() -> None:
        limiter.close()
        close()

    return app, close_all
