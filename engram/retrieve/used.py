"""Which retrieved memories a model's answer used: implicit feedback, read from the answer's words.

The retrieval pipeline's implicit feedback ("which memories get used") without a model: a memory
counts as used when the answer repeats enough of what that memory says. Its words are read as
the keyword index reads them (stemmed, no stop words, numbers and codes included: "NET30" or
"5531" in an answer point at one memory more surely than any common word). A memory is used when
the answer holds at least :data:`MIN_SHARED` of them and at least :data:`MIN_SHARE` of all it has
(capped at :data:`ENOUGH`, so a long memory quoted in part still counts), one of them at least not
from the question. Deterministic; the caller passes the result to ``Memory.feedback``.
"""

from __future__ import annotations

from collections.abc import Iterable

from engram.text import index_terms

__all__ = ["ENOUGH", "MIN_SHARE", "MIN_SHARED", "used_in"]

#: A memory needs at least this many of its words in the answer...
MIN_SHARED = 2
#: ... and at least this share of its distinct content words...
MIN_SHARE = 0.3
#: ... of which this many are always enough (a long memory quoted in part).
ENOUGH = 6


def _words(text: object) -> frozenset[str]:
    """Stemmed content words, as the keyword index reads them ("ordered" and "orders" are "order",
    "Priya's" is "priya"), numbers and codes included; one-character ones carry nothing."""
    return frozenset(t for t in index_terms(text) if len(t) >= 2) if isinstance(text, str) else frozenset()


def used_in(memories: Iterable[tuple[str, str]], response: str, query: str = "") -> list[str]:
    """The ids of ``memories`` (id, content) that ``response`` used, in the order given. At least one
    of the shared words must be one ``query`` lacks: an answer restates its question, and every
    retrieved memory shares some of its words ("What did Acme order? Acme ordered something." is no
    use of "Acme ordered 30 monitors")."""
    if not isinstance(response, str) or not response.strip():
        return []
    asked = _words(query)
    said = _words(response)
    out: list[str] = []
    for memory_id, content in memories:
        own = _words(content)
        shared = own & said
        # Something of its own beyond the question's words, and enough of it.
        if shared - asked and len(shared) >= MIN_SHARED and len(shared) >= min(ENOUGH, MIN_SHARE * len(own)):
            out.append(memory_id)
    return out
