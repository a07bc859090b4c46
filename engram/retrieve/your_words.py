"""Questions whose answer is the assistant's words. What it said:  "Which isolation level did you tell me to use?",
"Remind me what you suggested for the read timeout", "What was your advice on the backfill?".

Their answer is in the assistant's replies, which in a user-assistant chat are the long messages: a
long text holds many of a question's words by chance, so ranking reads its keyword evidence with a
discount for its length (``KEYWORD_LENGTH_POWER``), which buried the one reply that holds the
rare words asked about under shorter turns. For these questions an assistant's reply is read as a
person's own long message is (``KEYWORD_LENGTH_POWER_OWN``): there a rare word is what it is found by.
Why something happened ("What actually caused the duplicate invoices?"): the user tells the
symptom, the assistant's reply after it the cause (:func:`asks_for_a_cause`).
"""

from __future__ import annotations

import re

from engram.model import MemoryRecord

__all__ = ["asks_for_a_cause", "asks_what_you_said", "said_by_the_assistant"]

# Past or perfect only: "Can you suggest a dumbbell session?" asks for something now.
_VERBS = (r"say|suggest|recommend|tell|mention|warn|propose|advise|explain|give|write|show|pick|choose|list|"
          r"put|set|call|note|point|come\s+up|estimate|calculate|quote|offer|share|describe|use")
_PAST = (r"said|suggested|recommended|told|mentioned|warned|proposed|advised|explained|gave|wrote|showed|shown|"
         r"picked|chose|chosen|listed|called|noted|pointed|came\s+up|estimated|calculated|quoted|offered|shared|"
         r"described|used")
_YOU = r"(?:you|the\s+assistant)"
_ASKED = re.compile(
    rf"\b(?:did|didn't|did\s+not|have|haven't|had)\s+{_YOU}\s+(?:\w+ly\s+|just\s+|ever\s+)?(?:{_VERBS})\b"
    rf"|\b{_YOU}\s+(?:\w+ly\s+|just\s+|once\s+|had\s+|have\s+)?(?:{_PAST})\b"
    r"|\byour\s+(?:suggestion|recommendation|advice|tip|answer|explanation|warning|idea|estimate)s?\b",
    re.IGNORECASE,
)
#: "Why did ...?", "What actually caused ...?", "the root cause", "the reason for ...".
_CAUSE = re.compile(r"^\W*why\b|\bwhat\s+(?:actually\s+|really\s+)?caused\b|\broot\s+cause\b"
                    r"|\b(?:the|underlying)\s+reasons?\b", re.IGNORECASE)
#: Roles of the assistant's turns (a named assistant keeps its role in ``message_role``).
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "agent", "model"})


def asks_what_you_said(query: str) -> bool:
    """Whether ``query`` asks what the assistant said, suggested or recommended before."""
    return _ASKED.search(query) is not None


def asks_for_a_cause(query: str) -> bool:
    """Whether ``query`` asks why something happened or was decided: in a chat with an assistant the
    reply after the turn that tells of it holds the answer (``episodes.CAUSE_REPLY_SHARE``)."""
    return _CAUSE.search(query) is not None


def said_by_the_assistant(record: MemoryRecord) -> bool:
    """Whether ``record`` is the assistant's turn, by its role or the role its message was given."""
    given = (record.metadata or {}).get("message_role")
    return (record.role or "").casefold() in _ASSISTANT_ROLES or (
        isinstance(given, str) and given.casefold() in _ASSISTANT_ROLES)
