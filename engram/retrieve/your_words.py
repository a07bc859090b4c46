"""Questions whose answer is the assistant's words. What it said: "Which isolation level did you tell me to use?",
"Remind me what you suggested for the read timeout", "What was your advice on the backfill?".

Their answer is in the assistant's replies, which in a user-assistant chat are the long messages: a
long text holds many of a question's words by chance, so ranking reads its keyword evidence with a
discount for its length (``KEYWORD_LENGTH_POWER``), which buried the one reply that holds the
rare words asked about under shorter turns. For these questions an assistant's reply is read as a
person's own long message is (``KEYWORD_LENGTH_POWER_OWN``): there a rare word is what it is found by.
Why something happened ("What actually caused the duplicate invoices?"): the user tells the
symptom, the assistant's reply after it the cause (:func:`asks_for_a_cause`). How something is or
was to be done ("How was I supposed to switch my sleep back to days?", "How did we fix the 502s?"):
the user asked it, in the question's own words, and the reply after that turn is the how
(:func:`asks_how`).
"""

from __future__ import annotations

import re

from engram.retrieve.standing import is_request

__all__ = ["asks_for_a_cause", "asks_how", "asks_what_you_said"]

# Past or perfect only: "Can you suggest a dumbbell session?" and "What's your recommendation for a
# laptop?" ask for something now.
_VERBS = (r"say|suggest|recommend|tell|mention|warn|propose|advise|explain|give|write|show|pick|choose|list|"
          r"put|set|call|note|point|come\s+up|estimate|calculate|quote|offer|share|describe|use|send|end\s+up")
_PAST = (r"said|suggested|recommended|told|mentioned|warned|proposed|advised|explained|gave|given|wrote|written|"
         r"showed|shown|picked|chose|chosen|listed|called|noted|pointed|came\s+up|estimated|calculated|quoted|"
         r"offered|shared|described|used|sent|ended\s+up")
_YOU = r"(?:you|the\s+assistant)"
_ADVERB = r"(?:\w+ly\s+|just\s+|ever\s+|already\s+|once\s+)?"
#: Asked directly: "Which level did you tell me to use?", "What was your advice?" (also beside a
#: request: "... did you tell me to stick with, and how do I stop two webhooks racing?").
_ASKED = re.compile(
    rf"\b(?:did|didn['’]t|did\s+not)\s+{_YOU}\s+{_ADVERB}(?:{_VERBS})\b"
    rf"|\b(?:have|haven['’]t|had)\s+{_YOU}\s+{_ADVERB}(?:{_PAST})\b"
    r"|\b(?:was|were)\s+your\s+(?:suggestion|recommendation|advice|tip|answer|explanation|warning|idea|estimate)s?\b",
    re.IGNORECASE,
)
#: Told of: "the env var you mentioned", "You already suggested polars": not inside a request
#: ("Add logging to the retry loop, as you suggested" asks for work on the user's code).
_SAID = re.compile(rf"\b{_YOU}\s+(?:have\s+|had\s+|['’]ve\s+)?{_ADVERB}(?:{_PAST})\b", re.IGNORECASE)
#: "Why did ...?", also after a lead-in ("So why ...", "Remind me why ..."), but not a suggestion
#: ("Why don't we grab lunch?"); "What caused ...?", "the root cause", "the reason for ...".
_CAUSE = re.compile(
    r"(?:^\W*|[.!?]\s+|\b(?:so|and|but|ok|okay|remind\s+me|explain|tell\s+me|know)\s+)why\b"
    r"(?!\s+(?:don['’]?t|not)\s+(?:you|we|i)\b)"
    r"|\bwhat\s+(?:actually\s+|really\s+|could\s+have\s+|might\s+have\s+)?caused\b|\bwhat\s+led\s+to\b"
    r"|\bhow\s+come\b|\broot\s+cause\b|\bthe\s+cause\s+of\b|\breasons?\s+(?:for|why|behind)\b"
    r"|\b(?:underlying|real|actual)\s+reasons?\b",
    re.IGNORECASE,
)


#: Whether the assistant kept something the user told it ("Did you note my allergy?", "Have you
#: written down my new address?", "Where did you put my passport?"): the user's words answer it.
_KEPT = re.compile(
    rf"\b{_YOU}\s+{_ADVERB}(?:(?:note|noted|jot|jotted|put|set|save|saved|store|stored|record|recorded|keep|kept"
    r"|file|filed)\b(?!\s+(?:together|up|out)\b)|(?:write|wrote|written)\s+(?:\w+\s+)?down\b)",
    re.IGNORECASE,
)
#: A request to be told again what was said ("Can you remind me what you suggested for the timeout?").
_AGAIN = re.compile(r"\b(?:remind\s+me|repeat|recap|tell\s+me\s+again|say\s+again)\b", re.IGNORECASE)


def asks_what_you_said(query: str) -> bool:
    """Whether ``query`` asks what the assistant said, suggested or recommended before, or asks to
    be reminded of it; not whether it kept what the user told it (``_KEPT``)."""
    if _KEPT.search(query) is not None:
        return False
    return _ASKED.search(query) is not None or (_SAID.search(query) is not None
                                                 and (not is_request(query) or _AGAIN.search(query) is not None))


def asks_for_a_cause(query: str) -> bool:
    """Whether ``query`` asks why something happened or was decided: in a chat with an assistant the
    reply after the turn that tells of it holds the answer (``episodes.CAUSE_REPLY_SHARE``)."""
    return _CAUSE.search(query) is not None


#: How something was to be done, beside the procedural cues that choose a query's weights
#: (engram.retrieve.understand): "How was I supposed to ...?", "..., step by step?".
_HOW = re.compile(r"\bhow\s+(?:was|were|am|are|is)\s+(?:i|we)\s+(?:supposed|meant)\s+to\b|\bstep[- ]by[- ]step\b",
                  re.IGNORECASE)
#: A question, not an instruction: "Add logging to the PDF render step." asks for work the user's
#: rules govern, and an old reply is no answer to it.
_QUESTION = re.compile(
    r"\?|^\W*(?:how|what|what['’]s|which|where|when|who|can|could|should|would|did|do|does|is|are|was|were)\b",
    re.IGNORECASE,
)


def asks_how(query: str, procedural: bool = False) -> bool:
    """Whether ``query`` asks, as a question, how something is or was done (``procedural``: the
    query's procedural cues, or "how was I supposed to", "step by step"): in a chat with an assistant
    the reply after the user's turn that asked it holds the answer (``episodes.HOW_REPLY_SHARE``)."""
    return (procedural or _HOW.search(query) is not None) and _QUESTION.search(query) is not None
