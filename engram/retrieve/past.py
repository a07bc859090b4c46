"""Questions about what no longer holds ("What was my old gym?", "Who was our contact at Globex
before Sofia?", "Which carrier did we use for Acme before DHL?"): current truth leaves a superseded
fact out of every retrieval, and here it is the answer. Such a question also reads superseded
memories (when the caller chose no statuses), and a superseded memory gains in proportion to its
own relevance (:func:`superseded`), so the old value comes before the one that replaced it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.latest import SHORT_QUESTION

__all__ = ["asks_about_the_past", "superseded"]

_PAST = re.compile(
    r"\b(?:old|previous|previously|former|formerly|prior|original|originally|used\s+to|did\s+\w+\s+use\s+to|no\s+longer"
    r"|any\s*more|before\s+(?:that|this|then|(?:the|their|our|my|his|her|its)\s+\w+"
    r"|(?:they|we|i|he|she|you|it)\s+\w+|(?-i:[A-Z])[\w'’-]*)|before\s*[?.!]*\s*$)",
    re.IGNORECASE,
)
# "How old is Leo?", "a 3-year-old laptop": an age, not what was.
_AGE = re.compile(r"\bhow\s+old\b|\b\w+[\s-]+(?:years?|months?|weeks?|days?)[\s-]+old\b", re.IGNORECASE)


def asks_about_the_past(query: str) -> bool:
    """Whether ``query`` asks about what held before and no longer does (see ``_PAST``)."""
    if len(query) > SHORT_QUESTION:
        return False
    return _PAST.search(_AGE.sub(" ", query)) is not None


def superseded(records: Sequence[MemoryRecord]) -> npt.NDArray[np.float64]:
    """Per record, 1 if a newer version superseded it, else 0."""
    return np.fromiter((r.status == "superseded" for r in records), dtype=np.float64, count=len(records))
