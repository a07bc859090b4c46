"""Which retrieved memories a model's answer used: implicit feedback, read from the answer's words.

The retrieval pipeline's implicit feedback ("which memories get used") without a model: a memory
counts as used when the answer repeats enough of what only that memory says. Its distinctive
words are its content words (no stopwords, two letters or more), numbers and codes included, since
"NET30", "$39" or "PO-5531" in an answer point at one memory more surely than any common word. A
memory is used when the answer holds at least :data:`MIN_SHARED` of them and at least
:data:`MIN_SHARE` of all it has (capped at :data:`ENOUGH`, so a long memory quoted in part still
counts). Deterministic; the caller passes the result to ``Memory.feedback``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engram.text import STOPWORDS

__all__ = ["ENOUGH", "MIN_SHARE", "MIN_SHARED", "used_in"]

#: A memory needs at least this many of its words in the answer...
MIN_SHARED = 2
#: ... and at least this share of its distinct content words...
MIN_SHARE = 0.3
#: ... of which this many are always enough (a long memory quoted in part).
ENOUGH = 6

_WORD = re.compile(r"[\w$€£%]+(?:[.,:/'’-][\w%]+)*")


def _words(text: str) -> frozenset[str]:
    out = set()
    for token in _WORD.findall(text.casefold()):
        token = token.strip("'’")
        if len(token) >= 2 and token not in STOPWORDS:
            out.add(token)
    return frozenset(out)


def used_in(memories: Iterable[tuple[str, str]], response: str) -> list[str]:
    """The ids of ``memories`` (id, content) that ``response`` used, in the order given."""
    if not isinstance(response, str) or not response.strip():
        return []
    said = _words(response)
    out: list[str] = []
    for memory_id, content in memories:
        own = _words(content)
        shared = len(own & said)
        if shared >= MIN_SHARED and shared >= min(ENOUGH, MIN_SHARE * len(own)):
            out.append(memory_id)
    return out
