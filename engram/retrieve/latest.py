"""Questions about the last conversation ("What did we talk about last time?", "Where did we leave
off?", "What was the last thing I asked you?"): their answer is whatever was said most recently,
in words the question cannot know, so neither meaning nor keywords find it. Such a question reads
the newest conversation memories (candidates' ``latest`` source) and ranks them by how recent their
conversation is (:func:`conversation_recency`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.text import USER_ROLES

__all__ = [
    "CONVERSATION_KINDS", "LATEST_LIMIT", "SHORT_QUESTION", "Asked", "asks_for_the_last_conversation",
    "conversation_recency", "echoes", "normal_words", "said_by_the_user", "same_words",
]

#: The longest question read for these forms: each is a short question, and a form anchored at
#: both ends costs time in proportion to the square of a long text's length.
SHORT_QUESTION = 200
#: The newest memories such a question reads: a few conversations' worth.
LATEST_LIMIT = 40
#: The kinds a conversation is made of (what the ``latest`` source reads): not a fact or a procedure,
#: which holds whenever it was stored, nor a document, which is read rather than said.
CONVERSATION_KINDS = ("message", "summary", "episode")
#: How much each older conversation keeps of the newest one's recency: the one before it half, the
#: one before that a quarter, so the last conversation comes first and the ones before it follow.
_OLDER = 0.5
#: How much recency the first turn of a conversation keeps against its last one: where it was left
#: off comes first within it.
_WITHIN = 0.75
#: Messages without a session are one conversation while no gap between them is longer than this.
_GAP = timedelta(hours=2)
#: The roles of a conversation between the user and the assistant ("we" in "what did we talk about").
_OURS = USER_ROLES | {"assistant", "ai"}

# "last" alone only as the question's last word ("What did we talk about last?").
_WHEN = (r"(?:last\s+time|the\s+last\s+time|before|earlier|previously|last\s+session|(?:most\s+)?recently"
         r"|lately|last(?=(?:\s+again)?[\s?.!]*$)|in\s+our\s+last\s+(?:conversation|chat|session|talk))")
_CONVERSATION = r"(?:conversation|chat|session|talk|discussion)"
#: What may open such a question: "So, ...", "Hey, ...", "Can you remind me ...".
_OPENING = (r"^\W*(?:(?:so|and|ok|okay|hey|hi|um|well|please|remind\s+me|tell\s+me|do\s+you\s+remember"
            r"|can\s+you\s+(?:tell|remind)\s+me)\b[\s,]*)*")

#: Each form is the whole question: "What did we talk about with Acme?" asks about one thing, and
#: "That's not what I said." asks nothing.
_LAST_CONVERSATION = re.compile(
    _OPENING + r"(?:"
    # "What did we talk about (last time)?", "What did we last discuss?", "... what we talked about"
    r"what\s+(?:(?:did|have)\s+)?(?:we|you\s+and\s+i)\s+(?:last\s+)?"
    r"(?:talk|talked|chat|chatted|speak|spoke|discuss|discussed|cover|covered|go\s+over|went\s+over)(?:\s+about)?"
    # "What were we talking about (again)?", "What was I working on?", "What were you saying?"
    r"|what\s+(?:were|was|have|had)\s+(?:we|i|you|you\s+and\s+i)\s+(?:just\s+|been\s+)?"
    r"(?:talking|chatting|speaking|discussing|working\s+on|saying|up\s+to|asking(?:\s+you)?)(?:\s+about)?"
    r"|what\s+(?:we|i|you\s+and\s+i)\s+(?:were|was|have\s+been|had\s+been)\s+"
    r"(?:talking|chatting|speaking|discussing|working\s+on)(?:\s+about)?"
    # "Where did we leave off?", "Where were we?", "Let's pick up where we left off"
    r"|where\s+(?:(?:did|had)\s+)?(?:we|i)\s+(?:leave|left|stop|stopped)(?:\s+(?:off|things|it))?"
    r"|where\s+were\s+we(?:\s+at)?"
    r"|(?:let['’]?s\s+|can\s+we\s+)?(?:pick\s+up|continue|carry\s+on|resume)\s+(?:from\s+)?where\s+we\s+"
    r"(?:left|stopped)(?:\s+off)?"
    # "What was the last thing I asked you (about)?", "What's the last thing we discussed?"
    r"|what(?:\s+was|'s|’s|\s+is)\s+the\s+last\s+thing\s+(?:i|we|you)\s+"
    r"(?:asked|said|told|mentioned|talked\s+about|discussed)(?:\s+(?:you|me))?(?:\s+about)?"
    # "What did I ask you last time?", "What did you tell me last time?": without the time, a
    # question about the user as a whole
    rf"|what\s+did\s+(?:i|you)\s+(?:last\s+)?(?:ask|tell|say\s+to)\s+(?:you|me)(?=\s*,?\s*{_WHEN})"
    # "What was our last conversation about?", "Recap our last chat", "What was the previous session about?"
    r"|(?:what\s+(?:was|were)|summari[sz]e|recap|remind\s+me\s+of|catch\s+me\s+up\s+on)\s+(?:our|my|the)\s+"
    r"(?:last|latest|previous"
    rf"|most\s+recent)\s+{_CONVERSATION}s?(?:\s+about)?"
    rf")(?:(?:\s*,)?\s*{_WHEN})?(?:\s+again)?[\s?.!]*$",
    re.IGNORECASE,
)
#: The question asks for the user's own words ("What was the last thing I asked you?").
_THE_USERS_WORDS = re.compile(r"\bi\s+(?:last\s+)?(?:asked|said|told|mentioned|ask|say|tell)\b", re.IGNORECASE)


class Asked(NamedTuple):
    """A question about the last conversation, as ranking reads it: whose conversations, and its text."""

    user_id: str
    query: str


def said_by_the_user(query: str) -> bool:
    """Whether a question about the last conversation asks for what the user said in it."""
    return _THE_USERS_WORDS.search(query) is not None


def asks_for_the_last_conversation(query: str) -> bool:
    """Whether ``query`` asks what was said in the last conversation (see ``_LAST_CONVERSATION``)."""
    return len(query) <= SHORT_QUESTION and _LAST_CONVERSATION.search(query) is not None


def conversation_recency(records: Sequence[MemoryRecord], asked: Asked, now: datetime) -> npt.NDArray[np.float64]:
    """Per record, how recent its conversation is, in [0, 1]: 1 for the last turn of the conversation
    between the user and the assistant that ended last, ``_OLDER`` for each conversation ended since
    (a memory said outside one, such as a summary, counts the conversations ended after it, another
    speaker's message one more), down to ``_WITHIN`` of that from a conversation's last turn to its
    first. A conversation is a session; messages without one are one while no gap between them is
    longer than two hours. Only the asking user's own memories count (not a shared scope's), none
    after ``now``, and not the question itself when it was stored before it was asked (the newest
    turn, with the question's text). A question for what the user said (:func:`said_by_the_user`)
    reads the user's own turns only, when there are any. The rest get 0."""
    out = np.zeros(len(records), dtype=np.float64)
    talk = [r for r in records if r.kind in CONVERSATION_KINDS and r.user_id == asked.user_id and r.created_at <= now]
    messages = sorted((r for r in talk if r.kind == "message"), key=lambda r: (r.created_at, r.id))
    if messages and same_words(messages[-1].content, asked.query):
        stored = messages.pop().id  # asked in this conversation, stored before it was asked
        talk = [r for r in talk if r.id != stored]
    # The user speaks as "user", or under their own id as a speaker's name (Mem0's ``name``).
    the_user = USER_ROLES | {asked.user_id.strip().casefold()}
    by_user = said_by_the_user(asked.query) and any(_role(r) in the_user for r in messages)
    roles = the_user if by_user else _OURS | the_user
    ours = [r for r in messages if _role(r) in roles] or ([] if by_user else messages)
    conversation = _conversations(ours)
    spans: dict[tuple[str, str], tuple[datetime, datetime]] = {}
    for record in ours:
        key = conversation[record.id]
        start, end = spans.get(key, (record.created_at, record.created_at))
        spans[key] = (min(start, record.created_at), max(end, record.created_at))
    ends = [end for _, end in spans.values()]
    at = {record.id: i for i, record in enumerate(records)}
    for record in talk:
        if record.id in conversation:
            start, end = spans[conversation[record.id]]
            ended_since = sum(1 for e in ends if e > end)
            within = 1.0 if end <= start else (record.created_at - start) / (end - start)
        elif by_user:
            continue
        else:  # another speaker's message is one conversation further from "we" than its time says
            ended_since = sum(1 for e in ends if e > record.created_at) + (record.kind == "message")
            within = 1.0
        out[at[record.id]] = _OLDER ** ended_since * (_WITHIN + (1.0 - _WITHIN) * within)
    return out


def echoes(records: Sequence[MemoryRecord], asked: Asked) -> npt.NDArray[np.float64]:
    """1 for a memory that is the question itself, asked before ("Where did we leave off?" opening
    every session), else 0: it matches the question best and never answers it."""
    return np.fromiter((same_words(r.content, asked.query) for r in records), dtype=np.float64, count=len(records))


def _conversations(messages: Sequence[MemoryRecord]) -> dict[str, tuple[str, str]]:
    """Each message's conversation: its session, else a run of session-less messages without a
    longer gap than ``_GAP`` (``messages`` in time order)."""
    out: dict[str, tuple[str, str]] = {}
    run, last = "", None
    for record in messages:
        if record.session_id:
            out[record.id] = (record.user_id, "session:" + record.session_id)
            continue
        if last is None or record.created_at - last > _GAP:
            run = "run:" + record.id
        last = record.created_at
        out[record.id] = (record.user_id, run)
    return out


def _role(record: MemoryRecord) -> str:
    return (record.role or "").strip().casefold()


def same_words(text: str, query: str) -> bool:
    """Whether ``text`` is ``query`` itself, but for case and spacing (a question stored before it was asked)."""
    return normal_words(text) == normal_words(query)


def normal_words(text: str) -> str:
    """``text`` in one case with single spaces: how a question is recognised in a memory's text."""
    return " ".join(text.split()).casefold()
