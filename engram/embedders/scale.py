"""The scale an embedder's cosines are read on: what it gives unrelated texts and a clear match.

Models differ widely. MiniLM gives a question and an unrelated statement a cosine of ~0.06 and the
statement that answers it ~0.63; multilingual E5 gives ~0.73 and ~0.85. Ranking reads a cosine as
evidence between the two (``retrieve.signals.calibrated_similarity``), so a model read on another's
scale finds every memory a full match, or none: the score floor then passes everything and keywords
alone decide.

A built-in embedder says its range (``similarity_range``). For one that does not (a user's own, a
model behind an OpenAI-compatible endpoint), the range is measured once per process from the model
itself: thirty everyday questions and the statements that answer them, embedded as retrieval
embeds queries and memories. With ``gap`` the median cosine of a question and its answer minus the
mean cosine of a question and another's answer::

    bottom = unrelated mean + 0.12 * gap
    top    = unrelated mean + 1.30 * gap

Both factors put the two models measured here where the development sets say their ranges work.
MiniLM measures (0.13, 0.81) against the (0.15, 0.65) it declares, and its figures are flat across
tops 0.65-0.81: with the defaults LongMemEval user turns R@10 0.929 either way, every turn 0.871
against 0.849, LoCoMo 0.772 against 0.774. E5 measures (0.746, 0.882) against its (0.74, 0.88):
LoCoMo R@10 0.746 against 0.748, where a top of 0.87 gives 0.730 and MiniLM's range 0.672.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import numpy as np

from engram.ext import Embedder
from engram.ingest.embed import embed_texts
from engram.pools import ProcessLock

__all__ = [
    "DEFAULT_SIMILARITY_RANGE", "PAIRS", "declared_range", "measure_range", "measuring", "range_until",
    "similarity_range",
]

log = logging.getLogger("engram")

#: MiniLM's range, and the one an embedder is read on when its own can be neither read nor measured.
DEFAULT_SIMILARITY_RANGE = (0.15, 0.65)

#: Where the range sits between the unrelated mean (0) and the matching median (1); see above.
BOTTOM, TOP = 0.12, 1.30

#: A model whose answers are not this much closer than unrelated statements cannot be read on a
#: scale of its own: its "range" would make noise look like evidence.
MIN_GAP = 0.02

#: How long a caller without a deadline of its own waits for a first measurement, in seconds.
FIRST_WAIT = 1.0
#: Seconds before a failed measurement is tried again (each try embeds sixty texts).
RETRY_AFTER = 60.0

#: A question and a statement that answers it, across the kinds of things people keep.
PAIRS: tuple[tuple[str, str], ...] = (
    ("Where does Sarah work now?", "Sarah started a new job at the bakery on Main Street last week."),
    ("What is my dentist's phone number?", "Dr. Patel's office can be reached at 503-555-0142."),
    ("When is Mum's birthday?", "Mum turns 70 on December 12."),
    ("Which programming language does my team use for backend code?", "My team writes Go for all backend services."),
    ("What did Acme order last month?", "Acme ordered forty laptops and two printers in March."),
    ("How do I like my coffee?", "I take my coffee black with no sugar."),
    ("Is Tom allergic to anything?", "Tom has a severe peanut allergy."),
    ("What car did I buy?", "I finally bought a used Toyota Corolla from the dealer downtown."),
    ("Where did we go on holiday in summer?", "We spent two weeks in Portugal in July, mostly in Lisbon."),
    ("What is the wifi password at the office?", "The office wifi password is bluefalcon22."),
    ("How many people work at the company?", "The company has grown to about 120 employees."),
    ("What instrument is Mia learning?", "Mia has been taking violin lessons since September."),
    ("What database do we run in production?", "Production runs on PostgreSQL 16 with a read replica."),
    ("Who is the office manager at Brightwater?", "Keisha Brown is the office manager at Brightwater Dental."),
    ("What did the doctor say about my knee?", "The doctor said my knee needs six weeks of physiotherapy."),
    ("Which hotel are we staying at in Paris?", "We booked a room at the Hotel Lumiere near the Louvre."),
    ("What is Jake's favourite food?", "Jake loves spicy ramen more than anything."),
    ("How much rent do I pay?", "My rent is 1,450 dollars a month."),
    ("What did Priya think of the new report format?", "Priya said the one-page PDF report is much easier to read."),
    ("When does the train to Boston leave?", "The train to Boston departs at 7:45 in the morning."),
    ("What are the kids' names?", "Our kids are called Leo and Ava."),
    ("Which book is the book club reading?", "The book club picked Project Hail Mary for this month."),
    ("How do I deploy the web app?", "To deploy, run make release and then push the image to the registry."),
    ("What is the refund policy?", "Customers can return items within 30 days for a full refund."),
    ("What time is the team standup?", "Standup is every weekday at 9:30."),
    ("Where did Anna grow up?", "Anna grew up on a farm near Galway in Ireland."),
    ("What pet do the neighbours have?", "The neighbours have a big golden retriever named Max."),
    ("Which editor do I use?", "I do all my coding in Neovim with a few plugins."),
    ("How far did I run on Sunday?", "On Sunday I ran 15 kilometres along the river."),
    ("What was decided about the budget?", "The team agreed to cut the marketing budget by ten percent."),
)

_measured: dict[tuple[str, int], tuple[float, float]] = {}
#: Measurements under way: key -> (the process that started it, its future). A forked child's
#: inherited entry names its parent, whose thread it does not have, so it starts its own.
_pending: dict[tuple[str, int], tuple[int, Future[tuple[float, float] | None]]] = {}
#: When a model's measurement last failed (``time.monotonic()``).
_failed: dict[tuple[str, int], float] = {}
_lock = ProcessLock()


def declared_range(embedder: object) -> tuple[float, float] | None:
    """The range ``embedder`` says it has (its ``similarity_range``), or None."""
    said = getattr(embedder, "similarity_range", None)
    if said is None:
        return None
    low, high = said
    return float(low), float(high)


def measure_range(embedder: Embedder, pairs: Sequence[tuple[str, str]] = PAIRS) -> tuple[float, float] | None:
    """The range measured from ``embedder`` on ``pairs`` (see the module's notes); None when its
    answers are not told apart from unrelated statements (:data:`MIN_GAP`)."""
    questions = embed_texts(embedder, [q for q, _ in pairs], as_query=True).astype(np.float64)
    answers = embed_texts(embedder, [a for _, a in pairs]).astype(np.float64)
    cosines = questions @ answers.T
    if not np.isfinite(cosines).all():
        return None
    unrelated = float(cosines[~np.eye(len(pairs), dtype=bool)].mean())
    gap = float(np.median(np.diag(cosines))) - unrelated
    if gap < MIN_GAP:
        return None
    return round(unrelated + BOTTOM * gap, 3), round(min(1.0, unrelated + TOP * gap), 3)


def _key(embedder: object) -> tuple[str, int] | None:
    model_id, dimensions = getattr(embedder, "model_id", None), getattr(embedder, "dimensions", None)
    if not isinstance(model_id, str) or not isinstance(dimensions, int) or not callable(
            getattr(embedder, "embed_batch", None)):
        return None
    return model_id, dimensions


def measuring(embedder: object) -> Future[tuple[float, float] | None] | None:
    """The measurement of ``embedder``'s range, started on a daemon thread (a process may exit
    without it) if it was not under way; None when its range is declared or measured already, it
    is no embedder, or its last measurement failed less than :data:`RETRY_AFTER` seconds ago. The
    future's result is the range, or None if the measurement failed."""
    if declared_range(embedder) is not None:
        return None
    key = _key(embedder)
    if key is None or key in _measured:
        return None
    pid = os.getpid()
    with _lock.get():
        if key in _measured or time.monotonic() < _failed.get(key, -RETRY_AFTER) + RETRY_AFTER:
            return None
        held = _pending.get(key)
        if held is not None and held[0] == pid:
            return held[1]
        future: Future[tuple[float, float] | None] = Future()
        _pending[key] = (pid, future)
    try:
        threading.Thread(target=_measure, args=(embedder, key, future), name="engram-scale", daemon=True).start()
    except RuntimeError:  # no new thread (the interpreter shutting down): read on the default
        with _lock.get():
            _pending.pop(key, None)
        future.set_result(None)
    return future


def _measure(embedder: Any, key: tuple[str, int], future: Future[tuple[float, float] | None]) -> None:
    try:
        found = measure_range(embedder) or DEFAULT_SIMILARITY_RANGE
    except Exception as exc:  # any embedder failure: read on the default, measured again later
        log.warning("[MEM:EMBED] could not measure %s's similarity range (%s); reading it on %s for %d s",
                    key[0], exc, DEFAULT_SIMILARITY_RANGE, RETRY_AFTER)
        with _lock.get():
            _failed[key] = time.monotonic()
            _pending.pop(key, None)
        future.set_result(None)
        return
    with _lock.get():
        _measured[key] = found
        _pending.pop(key, None)
    future.set_result(found)


def similarity_range(embedder: object, *, deadline: float | None = None) -> tuple[float, float]:
    """The cosines ``embedder`` gives unrelated texts and a clear match: the range it declares, else
    the one measured from it (once per process and model), else :data:`DEFAULT_SIMILARITY_RANGE`.

    The measurement embeds sixty short texts (a model behind an endpoint: two requests) on a
    thread of its own. It is waited for until ``deadline`` (a ``time.perf_counter()`` time; None:
    :data:`FIRST_WAIT` seconds); a caller that cannot wait reads on the default, and the
    measurement, going on, serves the next. One that fails (an endpoint down) is tried again
    :data:`RETRY_AFTER` seconds later."""
    return range_until(embedder, deadline)[0]


def range_until(embedder: object, deadline: float | None) -> tuple[tuple[float, float], bool]:
    """:func:`similarity_range`, and whether it is the default read in place of a measurement
    still under way at ``deadline`` or failing meanwhile (an answer so read is provisional)."""
    said = declared_range(embedder)
    if said is not None:
        return said, False
    key = _key(embedder)
    if key is None:
        return DEFAULT_SIMILARITY_RANGE, False
    found = _measured.get(key)
    if found is not None:
        return found, False
    future = measuring(embedder)
    if future is None:  # finished between the two looks, or failed a moment ago
        return _measured.get(key, DEFAULT_SIMILARITY_RANGE), False
    until = time.perf_counter() + FIRST_WAIT if deadline is None else deadline
    try:
        measured = future.result(timeout=max(0.0, until - time.perf_counter()))
    except FutureTimeout:
        measured = None
    return (DEFAULT_SIMILARITY_RANGE, True) if measured is None else (measured, False)
