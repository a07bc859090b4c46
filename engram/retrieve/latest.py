"""Questions about the last conversation ("What did we talk about last time?", "Where did we leave
off?", "What was the last thing I asked you?"): their answer is whatever was said most recently,
in words the question cannot know, so neither meaning nor keywords find it. Such a question reads
the newest memories (candidates' ``latest`` source) and ranks them by how recent their
conversation is (:func:`conversation_recency`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord

__all__ = ["LATEST_LIMIT", "asks_for_the_last_conversation", "conversation_recency", "said_by_the_user"]

#: The newest memories such a question reads: a few conversations' worth.
LATEST_LIMIT = 40
#: How much each older conversation keeps of the newest one's recency: the one before it half, the
#: one before that a quarter, so the last conversation comes first and the ones before it follow.
_OLDER = 0.5
#: How much recency the first turn of a conversation keeps against its last one: where it was left
#: off comes first within it.
_WITHIN = 0.75
#: Kinds that are not part of a conversation: a fact or a procedure holds whenever it was stored, a
#: document is read rather than said.
_TIMELESS = frozenset(("fact", "procedure", "document", "chunk"))
#: The roles of a conversation between the user and the assistant ("we" in "what did we talk about").
_OURS = frozenset(("user", "assistant", "human", "ai"))
_THE_USER = frozenset(("user", "human"))

_TALK = (r"(?:talk|talked|talking|chat|chatted|chatting|speak|spoke|speaking|discuss|discussed|discussing"
         r"|do|doing|did|work\s+on|worked\s+on|working\s+on|say|said|saying)")
_WHEN = (r"(?:last\s+time|the\s+last\s+time|before|earlier|previously|last\s+session|recently|lately"
         r"|in\s+our\s+last\s+(?:conversation|chat|session|talk))")
_CONVERSATION = r"(?:conversation|chat|session|talk|discussion)"

#: Each form must end the query: "What did we talk about with Acme?" asks about one thing.
_LAST_CONVERSATION = re.compile(
    r"(?:"
    # "What did we talk about (last time)?", "What were we working on?", "Remind me what we discussed"
    rf"\b(?:what|remind\s+me\s+what)\s+(?:(?:did|were|was|have|had)\s+)?(?:we|you\s+and\s+i|i)\s+"
    rf"(?:(?:were|was|have\s+been|had\s+been|been)\s+)?{_TALK}"
    r"(?:\s+about)?"
    # "Where did we leave off?", "Let's pick up where we left off"
    r"|\bwhere\s+(?:did\s+we|we|were\s+we|had\s+we)\s+(?:leave|left|stop|stopped)(?:\s+off)?"
    # "What was the last thing I asked you?", "... we talked about?"
    rf"|\bwhat\s+was\s+the\s+last\s+thing\s+(?:i|we|you)\s+(?:asked|said|told|mentioned|{_TALK})"
    r"(?:\s+(?:you|me|about|to\s+you|to\s+me))?"
    # "What did I ask you last time?" (without the time, a question about the user as a whole)
    rf"|\bwhat\s+did\s+i\s+(?:last\s+)?(?:ask|tell|say\s+to)\s+you\s+{_WHEN}"
    # "What was our last conversation about?", "Recap our last chat", "Summarize our last session"
    rf"|\b(?:what\s+was|what\s+were|summari[sz]e|recap|remind\s+me\s+of)\s+(?:our|my)\s+(?:last|latest|previous"
    rf"|most\s+recent)\s+{_CONVERSATION}s?(?:\s+about)?"
    rf")(?:\s+{_WHEN})?\s*[?.!]*\s*$",
    re.IGNORECASE,
)


#: The question asks for the user's own words ("What was the last thing I asked you?").
_THE_USERS_WORDS = re.compile(r"\bi\s+(?:last\s+)?(?:asked|said|told|mentioned|ask|say|tell)\b", re.IGNORECASE)


def said_by_the_user(query: str) -> bool:
    """Whether a question about the last conversation asks for what the user said in it."""
    return _THE_USERS_WORDS.search(query) is not None


def asks_for_the_last_conversation(query: str) -> bool:
    """Whether ``query`` asks what was said in the last conversation (see ``_LAST_CONVERSATION``)."""
    return _LAST_CONVERSATION.search(query) is not None


def conversation_recency(records: Sequence[MemoryRecord], query: str = "") -> npt.NDArray[np.float64]:
    """Per record, how recent its conversation is, in [0, 1]: 1 for the last turn of the newest
    conversation between the user and the assistant, ``_OLDER`` for each conversation begun since
    (a memory said outside one, such as a summary, counts the conversations begun after it, and
    another speaker's message one more), down to ``_WITHIN`` of that from a conversation's last turn to
    its first. A conversation is a session; messages without one are grouped by day. Facts and
    procedures, which hold whenever they were stored, and documents get 0, as does the conversation
    the question itself was asked in, when it was stored before it was asked (``query`` among its
    messages): that one is this conversation, not the last. A question for what the user said in
    it (:func:`said_by_the_user`) reads the user's own turns only, the rest 0."""
    n = len(records)
    out = np.zeros(n, dtype=np.float64)
    talk = [r for r in records if r.kind not in _TIMELESS]
    if not talk:
        return out
    by_user = said_by_the_user(query)  # "What was the last thing I asked you?": the user's turns only
    roles = _THE_USER if by_user else _OURS
    ours = [r for r in talk if r.kind == "message" and (r.role or "").strip().casefold() in roles]
    if not ours and not by_user:  # no user/assistant turns among them: every conversation counts
        ours = [r for r in talk if r.kind == "message"]
    asked = " ".join(query.split()).casefold()
    current = {_conversation(r) for r in ours if asked and " ".join(r.content.split()).casefold() == asked}
    ours = [r for r in ours if _conversation(r) not in current]
    in_ours = {r.id for r in ours}
    spans: dict[str, tuple[datetime, datetime]] = {}
    for record in ours:
        key = _conversation(record)
        start, end = spans.get(key, (record.created_at, record.created_at))
        spans[key] = (min(start, record.created_at), max(end, record.created_at))
    starts = sorted((start for start, _ in spans.values()), reverse=True)
    for at, record in enumerate(records):
        if record.kind in _TIMELESS or (record.kind == "message" and _conversation(record) in current):
            continue
        if by_user and record.id not in in_ours:
            continue
        if record.id in in_ours:
            start, end = spans[_conversation(record)]
            begun_since = sum(1 for s in starts if s > start)
            within = 1.0 if end <= start else (record.created_at - start) / (end - start)
        else:  # another speaker's message is one conversation further from "we" than its time says
            begun_since = sum(1 for s in starts if s > record.created_at) + (record.kind == "message")
            within = 1.0
        out[at] = _OLDER ** begun_since * (_WITHIN + (1.0 - _WITHIN) * within)
    return out


def _conversation(record: MemoryRecord) -> str:
    if record.session_id:
        return "session:" + record.session_id
    return "day:" + record.created_at.date().isoformat()
