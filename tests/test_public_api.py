"""The public surface is small and pinned; every public name is documented."""

from __future__ import annotations

import inspect

import pytest

import engram
from engram import errors

EXPECTED = [
    "AdminMemorySettings", "AsyncMemory", "EngramError", "Entity", "Filters", "Limits", "Link", "Memory", "MemoryEntry",
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


def test_every_error_crosses_http_as_itself() -> None:
    """The service answers each error with one status and body; the client raises the same class back."""
    wire = pytest.importorskip("engram.wire")  # the service extra
    for name in errors.__all__:
        cls = getattr(errors, name)
        made = cls("config.top_k", "must be in [1, 20]") if issubclass(cls, errors.ValidationError) else cls("boom")
        status = wire.http_status(made)
        assert 400 <= status < 600, name
        back = wire.error_from(status, wire.error_json(made))
        assert type(back) is cls and back.code == made.code, name
        if isinstance(made, errors.ValidationError):
            assert isinstance(back, errors.ValidationError) and back.field == "config.topK"


def test_http_status_table_is_the_documented_one() -> None:
    wire = pytest.importorskip("engram.wire")  # the service extra
    assert wire.http_status(errors.MemoryNotFound("x")) == 404
    assert wire.http_status(errors.RateLimited()) == 429
    assert wire.http_status(errors.Forbidden("x")) == 403
    assert wire.http_status(errors.ServiceError("x", code="NOT_IMPLEMENTED", status=501)) == 501
    for cls, status in wire.HTTP_STATUS:
        assert f"({status}" in (errors.__doc__ or "") or f"; {status})" in (errors.__doc__ or ""), cls.__name__
