"""Questions that ask for a value of a shape a memory can be seen to hold ("What's Alice's email?",
"What's the webhook URL for Acme?", "What's Dr. Patel's phone number?", "What's my policy
number?"): the memory that answers holds an e-mail address, a link, a phone number or an
identifier, and seldom the question's word for it ("alice@acme.io", not "email"; "posted to
https://hooks.acme.io/v1/orders", not "webhook URL"), while other memories about the same person
or thing share the question's words. Such a memory gains in proportion to its own relevance
(:func:`holds_asked_value`), so a value in a memory about something else does not lift it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.latest import SHORT_QUESTION

__all__ = ["VALUE_NAMES", "asks_for_value", "holds_asked_value"]

_I = re.IGNORECASE
#: What the question calls each shape of value, in the order they are tried ("email" before "number":
#: "What's the number on Alice's email?" is rare; "What's Alice's email address?" is not).
_ASKED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"\be-?mails?(?:\s+address(?:es)?)?\b", _I)),
    ("link", re.compile(r"\b(?:url|urls|link|links|website|web\s*site|web\s+address|webhook|endpoint|homepage)\b", _I)),
    ("phone", re.compile(r"\b(?:phone|telephone|mobile|cell)(?:\s+number)?\b"
                         r"|\bnumber\b(?:\s+\w+){0,3}\s+(?:call|ring|text)\b|\bthe\s+number\s+for\b", _I)),
    # "policy number", "PO number", "order ID", "tracking code"; not "the number of monitors" (a
    # count) nor "How many ...".
    ("identifier", re.compile(
        r"\b(?!the\b|a\b|of\b)[\w-]+\s+(?:number|no\.?|id|code|reference|ref)\b(?!\s+of\b)"
        r"|\b(?:number|id|code|reference)\s+(?:for|of)\s+(?:the|my|our|their|his|her)\b", _I)),
)
#: What the question calls each shape, as an explanation says it.
VALUE_NAMES = {"email": "e-mail address", "link": "link", "phone": "phone number", "identifier": "number or code"}

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_LINK = re.compile(r"\bhttps?://\S+|\bwww\.[\w-]+\.\S+", _I)
# Seven or more digits in groups ("503-555-0142", "(503) 555 0142", "+44 20 7946 0958"), not a date.
_PHONE = re.compile(r"(?<![\w-])\+?\(?\d[\d\s().-]{5,}\d(?![\w-])")
_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}")
# A token with digits and letters or dashes ("PO-5531", "HB-20931", "88123-K", "INV-1187"), or a
# run of three or more digits that is not a year ("bib number 4471").
_IDENTIFIER = re.compile(
    r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z-])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])"
    r"|(?<![\w.,$-])(?!(?:19|20)\d\d(?![\d]))\d{3,}(?![\w.,-]?\d)"
)


def asks_for_value(query: str) -> str | None:
    """The shape of value ``query`` asks for ("email", "link", "phone", "identifier"), or None."""
    if len(query) > SHORT_QUESTION:
        return None
    for shape, asked in _ASKED:
        if asked.search(query):
            return shape
    return None


def holds_asked_value(records: Sequence[MemoryRecord], shape: str) -> npt.NDArray[np.float64]:
    """Per record, 1 if its text holds a value of ``shape``, else 0."""
    return np.fromiter((_holds(record.content, shape) for record in records), dtype=np.float64, count=len(records))


def _holds(text: str, shape: str) -> bool:
    if shape == "email":
        return _EMAIL.search(text) is not None
    if shape == "link":
        return _LINK.search(text) is not None
    if shape == "phone":
        return any(sum(c.isdigit() for c in m.group()) >= 7 and not _DATE.fullmatch(m.group().strip())
                   for m in _PHONE.finditer(text))
    if shape == "identifier":
        return any(_is_identifier(m.group()) for m in _IDENTIFIER.finditer(text))
    return False


def _is_identifier(token: str) -> bool:
    """An identifier, not a word or a span that happens to have digits ("3pm", "27-inch", "2nd",
    "v2", "22-26", "2026-11-02")."""
    if _DATE.fullmatch(token):
        return False
    if any(c.isalpha() for c in token):
        digits = sum(c.isdigit() for c in token)
        return digits >= 3 or (digits >= 2 and any(c.isupper() for c in token))
    return any(len(group) >= 3 for group in token.split("-"))
