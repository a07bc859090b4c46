"""Entities for memories stored before write-time extraction: what the numbered migrations apply.

Both backends' migrations call :func:`retag` over each user's rows and write back only the memories
whose set of entity ids changed, so running it twice writes nothing. Ids a caller gave by hand are
kept (see :func:`engram.ingest.entities.caller_entities`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from engram.config import Limits
from engram.model import Entity, MemoryRecord

__all__ = ["retag"]


def retag(
    records: Iterable[MemoryRecord], entities: Sequence[Entity]
) -> Iterator[tuple[MemoryRecord, tuple[str, ...]]]:
    """(record, its new entity ids) for every record whose extracted entities differ from its stored ones."""
    # Imported here: the extractor belongs to the write path, which stores otherwise never need.
    from engram.ingest.entities import EntityIndex
    from engram.ingest.retag import changed

    yield from changed(records, EntityIndex(entities), Limits())
