"""Engram: a memory retrieval engine for LLM agents.

``Memory()`` opens the embedded default (one SQLite file); ``Memory("postgresql://...")`` the same
API on PostgreSQL + pgvector.
"""

from engram.config import AdminMemorySettings, Limits, RedactionConfig, RetrievalConfig
from engram.errors import EngramError
from engram.memory import Memory
from engram.model import Entity, Filters, Link, MemoryRecord
from engram.retrieve.types import MemoryEntry, Retrieval

__all__ = [
    "AdminMemorySettings",
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
