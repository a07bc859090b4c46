"""Engram: a memory retrieval engine for LLM agents.

``Memory()`` opens the embedded default (one SQLite file); ``Memory("postgresql://...")`` the same
API on PostgreSQL + pgvector.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from engram.config import AdminMemorySettings, Limits, RedactionConfig, RetrievalConfig
from engram.errors import EngramError
from engram.model import Entity, Filters, Link, MemoryRecord

if TYPE_CHECKING:
    from engram.aio import AsyncMemory
    from engram.memory import Memory
    from engram.retrieve.types import MemoryEntry, Retrieval

__all__ = [
    "AdminMemorySettings",
    "AsyncMemory",
    "EngramError",
    "Entity",
    "Filters",
    "Limits",
    "Link",
    "Memory",
    "MemoryEntry",
    "MemoryRecord",
    "RedactionConfig",
    "Retrieval",
    "RetrievalConfig",
]

__version__ = "0.1.0"

# The engine (numpy, the stores, the embedder) loads on first use of these names, so the CLI's
# --help and commands that do not retrieve start fast.
_LAZY = {"AsyncMemory": "engram.aio", "Memory": "engram.memory",
         "MemoryEntry": "engram.retrieve.types", "Retrieval": "engram.retrieve.types"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'engram' has no attribute {name!r}")
