"""A retrieval's time: what runs before its deadline, what answers after it (issue 41, findings 6 and 7).

Until the deadline (``RetrievalConfig.timeout_ms``) every stage runs, and each store read is cut
when the deadline passes (:mod:`engram.deadline`). A stage the answer can do without (a candidate
source, the query's embedding, the entity table, the conversation neighbours, the second hop,
reinforcement, the domain source) is *cut* when it is still running at the deadline, or not
started once the deadline has passed; its name goes to ``metadata.cut_stages``. The embedding is
waited for until three quarters of the deadline only, so that the other sources still answer. What the answer
needs (reading and ranking the candidates found, selecting among them) then runs on, its store
reads cut at :attr:`Budget.hard`, a quarter of a deadline later: a retrieval past its deadline
answers with the best of what the sources that finished found, within about 1.25 x ``timeout_ms``
(more on a machine too loaded to run the answer's few ms of Python on time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AbstractContextManager
from typing import TypeVar

from engram.deadline import reads_until
from engram.embedders.scale import range_until
from engram.errors import DeadlineExceeded

__all__ = ["EMBED_RESERVE", "HARD_SHARE", "PARTIAL", "Budget", "until"]

T = TypeVar("T")

#: How far past its start a retrieval's last store read may run, in deadlines. The answer's own
#: stages (reading ~70 candidates by id, ranking and selecting them) take a few ms, 10-30 on two
#: cores at a load average of 14, where 1.5 let the expensive-query attack reach 2.47 x timeout_ms.
HARD_SHARE = 1.25
#: The share of the deadline kept for the other sources when the query's embedding is late: it is
#: waited for until three quarters of the deadline. A 2,000-character query embedded for longer
#: than its whole 200 ms deadline on a loaded machine, and waiting for it left no source any time.
EMBED_RESERVE = 0.25

#: ``metadata.error`` of a retrieval answered past its deadline from the stages that finished.
PARTIAL = {
    "code": "TIMEOUT",
    "message": "Memory retrieval exceeded its deadline; answered from the stages that finished",
    "fallback": "partial",
}


class Budget:
    """One retrieval's deadline (``soft``), the bound of its answer (``hard``) and the stages it cut."""

    def __init__(self, timeout_ms: float | None) -> None:
        now = time.perf_counter()
        self.timeout_ms = timeout_ms
        self.soft = None if timeout_ms is None else now + timeout_ms / 1000
        self.hard = None if timeout_ms is None else now + HARD_SHARE * timeout_ms / 1000
        self.embedded_by = None if timeout_ms is None else now + (1 - EMBED_RESERVE) * timeout_ms / 1000
        self.cut: list[str] = []

    def passed(self) -> bool:
        return self.soft is not None and time.perf_counter() >= self.soft

    def drop(self, stage: str) -> None:
        if stage not in self.cut:
            self.cut.append(stage)

    def read(self, load: Callable[[list[str]], None], **wanted: list[str]) -> None:
        """``load`` the ids of each named read while the deadline allows; a read cut is listed by name."""
        named = {name: ids for name, ids in wanted.items() if ids}
        if named and self.passed():
            for name in named:
                self.drop(name)
        elif named:
            load(list(dict.fromkeys(i for ids in named.values() for i in ids)))

    def optional(self, stage: str, call: Callable[[], T], default: T) -> T:
        """``call()`` with its store reads cut at the deadline; ``default`` if it was cut or the
        deadline had passed already (the stage is then listed as cut)."""
        if self.passed():
            self.drop(stage)
            return default
        try:
            with reads_until(self.soft):
                return call()
        except DeadlineExceeded:
            self.drop(stage)
            return default

    def scale(self, embedder: object) -> tuple[float, float]:
        """``embedder``'s similarity range (:mod:`engram.embedders.scale`). One still being measured
        at the deadline, or whose measurement fails meanwhile, reads as the default, and the stage is
        listed as cut: the answer so read is partial (never cached)."""
        found, provisional = range_until(embedder, self.soft)
        if provisional:
            self.drop("similarity_range")
        return found

    def essential(self) -> AbstractContextManager[None]:
        """Store reads inside are cut at :attr:`hard`, or a quarter of a deadline from now if that is
        later (then DeadlineExceeded: nothing can answer). A source that could not be stopped (its
        work in Python) may have run past :attr:`hard`; the answer still gets its time to read."""
        if self.hard is None or self.timeout_ms is None:
            return reads_until(None)
        return reads_until(max(self.hard, time.perf_counter() + (HARD_SHARE - 1) * self.timeout_ms / 1000))


def until(future: Future[T], deadline: float | None, doing: str) -> T:
    """``future``'s result, or DeadlineExceeded once ``deadline`` (a perf_counter time) passes; the
    work goes on where it runs, unused."""
    try:
        return future.result(timeout=None if deadline is None else max(0.0, deadline - time.perf_counter()))
    except FutureTimeout:
        raise DeadlineExceeded(f"retrieval passed its deadline while {doing}") from None
