"""What a feature works with: a narrow, frozen view of one opened memory, never the facade itself.

Features (recall modes, keyword search, documents, feedback, the ontology, salience, file ingest,
the write path) are functions or classes over a :class:`Context`. ``Memory`` builds one and wires
its public methods to them; a feature also accepts anything that holds a context (``Memory`` does),
so ``search_keywords(memory, ...)`` keeps working without this layer naming the facade.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from engram.errors import MemoryNotFound
from engram.validate import user_id

if TYPE_CHECKING:
    from engram.caches import Caches
    from engram.config import Limits, RetrievalConfig
    from engram.ext import Embedder, Metrics, Store
    from engram.model import MemoryRecord

__all__ = ["Context", "ContextSource", "HasContext", "context_of"]


@dataclass(frozen=True, slots=True)
class Context:
    """One opened memory as features see it.

    ``embedder`` and ``config`` are called when needed: the model loads on first use, and
    ``Memory.config`` may be replaced after opening.
    """

    store: Store
    embedder: Callable[[], Embedder]
    limits: Limits
    metrics: Metrics
    caches: Caches
    config: Callable[[], RetrievalConfig]

    def user(self, value: Any) -> str:
        """``value`` checked as the user id every call is scoped to."""
        return user_id(value, self.limits)

    def wrote(self, user: str) -> None:
        """Every write ends here: what was cached of this user is stale."""
        self.caches.invalidate(user)

    def get(self, user: str, memory_id: str) -> MemoryRecord:
        """One memory of ``user``; MemoryNotFound for an unknown id and for another user's alike."""
        record = self.store.get(user, memory_id)
        if record is None:
            raise MemoryNotFound(f"no memory {memory_id!r} for this user")
        return record


class HasContext(Protocol):
    """Anything holding a context: ``Memory``, or a test double of it."""

    @property
    def context(self) -> Context: ...


ContextSource = Context | HasContext


def context_of(source: ContextSource) -> Context:
    return source if isinstance(source, Context) else source.context
