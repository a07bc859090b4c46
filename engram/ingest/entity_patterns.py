"""The ids ``extract`` finds by their shape, not by a name: e-mail addresses, domains and order numbers.

``pattern_ids`` adds ``email:alice@acme.io`` and ``domain:acme.io`` for an address,
``domain:acme.io`` for a URL or a bare domain, and ``ref:po-77812`` for an order-number-like token
(``#A-1042``, ``PO-77812``; not "Q3", "MP3" or "2026"), and returns what they cover so the name
scan skips it.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from engram.ingest.entity_index import EntityIndex, name_key

__all__ = ["pattern_ids"]

# Each pattern runs only when a cheap test says it can match: most texts hold no "@", no URL and
# no domain, and a full regex scan costs more than everything else extract does.
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@((?:[\w-]{1,63}\.)+[a-z]{2,24})\b", re.IGNORECASE)
_URL = re.compile(r"\b(?:https?://|www\.)((?:[\w-]{1,63}\.)+[a-z]{2,24})\b[^\s<>\"')\]]*", re.IGNORECASE)
_TLDS = "com|org|net|io|ai|co|dev|app|edu|gov|biz|info|us|uk|de|fr|nl|eu|ca|au|ch|se|es|it|jp|in"
_TLD_HINT = re.compile(rf"\.(?:{_TLDS})(?![\w-])", re.IGNORECASE)
_DOMAIN = re.compile(rf"(?<![\w@./-])((?:[a-z0-9-]{{1,63}}\.)+(?:{_TLDS}))(?![\w-]|\.\w)", re.IGNORECASE)
# References are found from their digits: "#A-1042", "#123", "PO-77812", "INV-2026-001", "ORD12345".
_DIGITS = re.compile(r"\d+")
_REF_WORD = re.compile(r"[\w#-]+")
_REF = re.compile(r"(#)?([a-z]{0,6}-?\d[\w-]{0,30})(?![\w@/-]|\.\w)", re.IGNORECASE)
_REF_PLAIN = re.compile(r"[A-Za-z]{1,6}-?\d")


def _ref_id(hashed: bool, code: str) -> str | None:
    code = code.rstrip("-")
    digits = sum(ch.isdigit() for ch in code)
    if hashed:
        return f"ref:{code.lower()}" if len(code) >= 2 else None
    # Without "#", letters then at least three digits: "PO-77812" yes; "Q3", "MP3", "2026" no.
    return f"ref:{code.lower()}" if digits >= 3 and _REF_PLAIN.match(code) else None


def _refs(text: str, index: EntityIndex, hits: list[tuple[int, str]], covered: list[tuple[int, int]]) -> None:
    done = 0
    for digits in _DIGITS.finditer(text):
        if digits.start() < done:
            continue  # inside a word already read
        start = _back(text, digits.start(), "_#-", 64)
        word = _REF_WORD.match(text, start)
        done = word.end() if word is not None else digits.end()
        if start > 0 and text[start - 1] in "@./:":
            continue  # part of an address, a path, a decimal or a time
        m = _REF.match(text, start)
        if m is None or m.end() != done or (len(index) and index.exact(name_key(m.group(2)))):
            continue  # not a reference, or a name the user gave an entity ("Model 3000", "Thing299")
        if ref := _ref_id(m.group(1) is not None, m.group(2)):
            hits.append((start, ref))
            covered.append(m.span())


def _back(text: str, end: int, chars: str, limit: int) -> int:
    """Where the run of word characters and ``chars`` ending at ``end`` starts (at most ``limit`` back)."""
    start = end
    while start > 0 and end - start < limit and (text[start - 1].isalnum() or text[start - 1] in chars):
        start -= 1
    return start


def pattern_ids(text: str, index: EntityIndex, hits: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """Add e-mail, domain and reference ids to ``hits``; return the character ranges they cover.

    Each pattern is tried only where its anchor is ("@", a known top-level domain, "://", a digit):
    scanning the whole text with the full patterns costs more than the rest of ``extract``.
    """
    covered: list[tuple[int, int]] = []
    done = 0
    at = text.find("@")
    while at >= 0:
        m = _EMAIL.match(text, _back(text, at, "_.+-", 64)) if at >= done else None
        if m is not None:
            hits.append((m.start(), f"email:{m.group(0).lower()}"))
            hits.append((m.start(), f"domain:{m.group(1).lower()}"))
            covered.append(m.span())
            done = m.end()
        at = text.find("@", max(at + 1, done))
    if "." in text:
        hosts: list[re.Match[str]] = []
        if "://" in text or "www." in text or "WWW." in text:
            hosts += _URL.finditer(text)
        done = 0
        for hint in _TLD_HINT.finditer(text):
            mail = bisect_right(covered, (hint.start(), len(text))) - 1  # covered holds e-mails, in order
            if hint.start() >= done and (mail < 0 or covered[mail][1] <= hint.start()):
                # A URL's host is preceded by "/" and an e-mail's by "@": neither matches here again.
                m = _DOMAIN.match(text, _back(text, hint.start(), "_.-", 255))
                if m is not None:
                    hosts.append(m)
                    done = m.end()
        for m in hosts:
            host = m.group(1).lower()
            hits.append((m.start(), f"domain:{host[4:] if host.startswith('www.') else host}"))
            covered.append(m.span())
    if _DIGITS.search(text):
        _refs(text, index, hits, covered)
    return covered
