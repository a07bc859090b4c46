"""The public surface is small and pinned; every public name is documented."""

from __future__ import annotations

import inspect

import engram
from engram import errors

EXPECTED = [
    "AdminMemorySettings", "EngramError", "Entity", "Filters", "Limits", "Link", "Memory", "MemoryEntry",
    "MemoryRecord", "RedactionConfig", "Retrieval", "RetrievalConfig",
]


def test_all_is_pinned() -> None:
    assert sorted(engram.__all__) == sorted(EXPECTED)
    for name in engram.__all__:
        assert hasattr(engram, name)


def test_every_public_name_has_a_docstring() -> None:
    for name in engram.__all__:
        assert inspect.getdoc(getattr(engram, name)), name


def test_error_tree_is_rooted_and_coded() -> None:
    codes = set()
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.EngramError)
        assert name in (errors.__doc__ or ""), f"{name} missing from the tree in errors.py"
        codes.add(cls.code)
    assert len(codes) == len(errors.__all__)
