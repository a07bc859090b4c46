"""A fact triple (subject, predicate, object) as a sentence: the augmentation specification's
``format_semantic_triple`` templates, plus predicates an extractor commonly emits.

Ingest words a bare triple's content with it (the content is what search and prompts read);
``engram.retrieve.render`` re-exports it.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["TRIPLE_TEMPLATES", "format_semantic_triple"]

#: The augmentation specification's templates first, then common predicates.
TRIPLE_TEMPLATES: Mapping[str, str] = {
    "has_property": "{s} has {o}",
    "related_to": "{s} is related to {o}",
    "prefers": "{s} prefers {o}",
    "has": "{s} has {o}",
    "is_a": "{s} is a {o}",
    "located_in": "{s} is located in {o}",
    "works_at": "{s} works at {o}",
    "likes": "{s} likes {o}",
    "dislikes": "{s} dislikes {o}",
    "owns": "{s} owns {o}",
}


def format_semantic_triple(subject: str, predicate: str, object: str) -> str:
    """A fact triple as a sentence: "Acme has industry: technology" for ``has_property``; a
    predicate without a template reads as its words ("ships_via" -> "Acme ships via UPS")."""
    normalized = predicate.strip().lower().replace(" ", "_").replace("-", "_")
    template = TRIPLE_TEMPLATES.get(normalized)
    if template is None:
        return f"{subject} {predicate.replace('_', ' ')} {object}".strip()
    return template.format(s=subject, o=object).strip()
