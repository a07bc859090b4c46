"""What one ``Memory`` is made of (its store, caches, features' context and read pipeline), and
making it again in a forked child.

A child forked after the store was opened (``gunicorn --preload``, Celery's prefork workers, a
``multiprocessing`` pool on Linux) inherits the parent's database connections and worker threads,
but the threads do not run there: a retrieval waited for its query embedding until its deadline
and answered empty. SQLite must not be used through a connection opened before a fork (its locks
belong to the parent), nor a PostgreSQL connection whose socket the parent also reads. So on its
first use in a child a ``Memory`` opens its store again from the same path or URL, with caches
and worker threads of the child's own, and leaves the inherited ones alone (not even closed: the
parent still uses them). Two stores are kept instead: an in-memory database (another would be
empty) and a store passed in as ``Memory(store=...)`` (its owner knows how to open it again)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engram.caches import Caches
from engram.config import Limits, RetrievalConfig
from engram.context import Context
from engram.domain import DomainSource
from engram.experiments import Experiment
from engram.ext import Embedder, Metrics, Store
from engram.retrieve import Pipeline

__all__ = ["Wiring", "reopened", "wire"]



@dataclass
class Wiring:
    store: Store
    caches: Caches
    context: Context
    pipeline: Pipeline
    #: Opens the store again (in a forked child); None for a store passed in or an in-memory one.
    reopen: Callable[[], Store] | None
    #: Whether the store was told the embedder's model (done on first need, under ``lock``).
    bound: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def wire(
    store: Store, reopen: Callable[[], Store] | None, *, embedder: Callable[[], Embedder], limits: Limits,
    metrics: Metrics, config: Callable[[], RetrievalConfig], domain_source: DomainSource | None,
    log_retrievals: bool, experiment: Experiment | None = None,
) -> Wiring:
    caches = Caches(store)
    context = Context(store=store, embedder=embedder, limits=limits, metrics=metrics, caches=caches, config=config)
    pipeline = Pipeline(
        store=store, embedder=embedder, metrics=metrics, cache=caches.retrievals, weights_by_strategy=caches.weights,
        domain_source=domain_source, log_retrievals=log_retrievals, entity_indexes=caches.entity_indexes,
        experiment=experiment, speaker_names=caches.speaker_names,
    )
    return Wiring(store, caches, context, pipeline, None if _in_memory(store) else reopen)


def reopened(parent: Wiring) -> Wiring:
    """``parent`` (made before a fork) made again for this process: see the module doc."""
    context, old = parent.context, parent.pipeline
    store = parent.reopen() if parent.reopen is not None else parent.store
    child = wire(
        store, parent.reopen, embedder=context.embedder, limits=context.limits, metrics=context.metrics,
        config=context.config, domain_source=old.domain_source, log_retrievals=old.log_retrievals,
        experiment=old.experiment,
    )
    # The service widens these; a child keeps their sizes, with threads and counts of its own.
    workers: Any = getattr(old.executor, "_max_workers", None)
    if isinstance(workers, int):
        child.pipeline.executor = type(child.pipeline.executor)(workers, thread_name_prefix="engram-candidates")
    if old.slots is not None:
        child.pipeline.slots = type(old.slots)(getattr(old.slots, "_initial_value", 1))
    return child


def _in_memory(store: Store) -> bool:
    return getattr(store, "path", None) == ":memory:"
