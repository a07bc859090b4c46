"""Retrieval evaluation: labelled cases in, recall and nDCG per system out.

The contract between a dataset adapter and the runner is two plain values, so pointing the harness
at other labelled data means writing one small function that yields :class:`EvalCase`:

- :mod:`engram.eval.longmemeval` — the LongMemEval adapter (the only dataset-specific code);
- :mod:`engram.eval.runner` — indexes each case into a fresh store and scores every system;
- :mod:`engram.eval.metrics` — recall_all@k, recall_any@k, ndcg_any@k;
- :mod:`engram.eval.cached_embedder` — an on-disk embedding cache shared across runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["EvalCase", "EvalDoc"]


@dataclass(frozen=True, slots=True)
class EvalDoc:
    """One indexable unit (a conversation turn): ``doc_id`` is unique within its case."""

    doc_id: str
    session_id: str
    role: str
    content: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One question with its own haystack and its gold labels.

    ``gold_turns`` are doc ids; ``gold_sessions`` are session ids. Gold that the runner does not
    index (say, assistant turns when only user turns are indexed) is dropped by the runner, not here,
    so one adapter serves every indexing choice.
    """

    question_id: str
    question_type: str
    question: str
    now: datetime
    documents: tuple[EvalDoc, ...]
    gold_turns: frozenset[str]
    gold_sessions: frozenset[str]
