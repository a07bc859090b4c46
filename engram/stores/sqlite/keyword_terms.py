"""What the keyword index holds for a memory: its terms (:func:`engram.text.memory_terms`), each behind
a key of its user, and how many there are (the user's total length, for BM25). The triggers call
these through SQL (:func:`.schema.register_functions`); a batch calls :func:`keyword_entry` itself."""

from __future__ import annotations

import hashlib

from engram.text import memory_terms

__all__ = ["keyword_document", "keyword_entry", "keyword_length", "user_key"]


def user_key(user_id: str) -> str:
    """A fixed-length token naming a user inside indexed terms (a hash: ids may hold any character)."""
    return "u" + hashlib.blake2b(user_id.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def keyword_length(content: str | None, role: str | None, *labels: str | None) -> int:
    return len(memory_terms(content or "", role, *labels))


def keyword_document(user_id: str, content: str | None, role: str | None, *labels: str | None) -> str:
    """What the keyword index stores for one memory: its terms, each behind its user's key."""
    return keyword_entry(user_key(user_id), content, role, *labels)[0]


def keyword_entry(key: str, content: str | None, role: str | None, *labels: str | None) -> tuple[str, int]:
    """:func:`keyword_document` (behind ``key``, the user's :func:`user_key`) and :func:`keyword_length`
    from one reading of the terms: a batch had stemmed each text twice, for each of the two."""
    terms = memory_terms(content or "", role, *labels)
    return " ".join(key + term for term in terms), len(terms)
