"""Entity relations and the ontology of entity types that allows them (ontology-aware expansion).

The ontology says which kinds of relation exist between entity types (``customer --HAS_MANY--> order``);
relations connect entities (``customer:acme --HAS_MANY--> order:a-1042``). A relation is accepted only
when the ontology declares it, so a typo fails loudly instead of never expanding.

At retrieval time each query entity expands one level outward, at most ``EXPANSION_LIMIT`` related
entities each (the spec's "don't explode context"), and the memories naming a related entity become
candidates. For ranking, a memory naming ``order:a-1042`` counts as naming ``customer:acme``: a memory
about Acme's order is about Acme, and without that credit the entity-focused weights would bury
exactly the memories the expansion found. The memory returned is the stored one, and its reason says
"related to customer:acme via HAS_MANY" instead of claiming a mention.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from engram.context import context_of
from engram.errors import ValidationError
from engram.ingest.entity_index import load_entities
from engram.model import Entity, EntityRelation, MemoryRecord, RelationType
from engram.validate import validate_id

if TYPE_CHECKING:
    from engram.context import Context, ContextSource
    from engram.ext import Store
    from engram.retrieve.types import Scored

__all__ = [
    "EXPANSION_LIMIT",
    "IS_A",
    "SOURCE",
    "TYPE_SLOT",
    "EntitiesAccessor",
    "EntityRelation",
    "Expansion",
    "RelationType",
    "credit",
    "define_relation",
    "expand",
    "relate",
    "restore",
]

#: Related entities followed per query entity (``limit=10`` in the ontology spec).
EXPANSION_LIMIT = 10
#: A query that asks about a type of entity as a whole ("Tell me about my customers") asks about a
#: slot, ``type:customer``, which every entity of that type fills: the expansion relates them to it.
TYPE_SLOT = "type:"
IS_A = "is_a"
#: The candidate source name of memories found through expansion.
SOURCE = "ontology"
_MAX_NAME = 64


@dataclass(frozen=True, slots=True)
class Expansion:
    """What the query entities reached: related entity id -> the relations that reached it."""

    via: Mapping[str, tuple[EntityRelation, ...]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, query_entities: Sequence[str], relations: Sequence[EntityRelation],
        typed: Mapping[str, Sequence[str]] | None = None,
    ) -> Expansion:
        """What ``relations`` reach from ``query_entities``, and the entities filling each type
        slot among them (``typed``: slot -> entity ids)."""
        relations = [*relations, *(EntityRelation(slot, IS_A, entity, "type", slot[len(TYPE_SLOT):])
                                   for slot, ids in (typed or {}).items() for entity in ids)]
        asked = set(query_entities)
        via: dict[str, list[EntityRelation]] = {}
        for rel in relations:
            if rel.from_id in asked and rel.to_id not in asked:  # a query entity needs no expansion
                via.setdefault(rel.to_id, []).append(rel)
        return cls({k: tuple(v) for k, v in via.items()})

    def ids(self) -> list[str]:
        return list(self.via)

    def __bool__(self) -> bool:
        return bool(self.via)


def _name(value: object, field_name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field_name, "must be a non-empty string")
    value = value.strip()
    if len(value) > _MAX_NAME or any(c.isspace() for c in value):
        raise ValidationError(field_name, f"must be at most {_MAX_NAME} characters without spaces, got {value!r}")
    return value


def _type_of(entity_id: str, known: Mapping[str, Entity]) -> str:
    """A registered entity's type, else the id's prefix (``customer:acme`` -> ``customer``) as add_entity does."""
    entity = known.get(entity_id)
    return entity.type if entity is not None else entity_id.split(":", 1)[0]


def define_relation(
    source: ContextSource, from_type: str, relation: str, to_type: str, *, user_id: str
) -> RelationType:
    memory = context_of(source)
    user = memory.user(user_id)
    edge = RelationType(_name(from_type, "from_type"), _name(relation, "relation"), _name(to_type, "to_type"))
    memory.store.define_relation(user, edge)
    memory.wrote(user)
    return edge


def relate(source: ContextSource, a: str, relation: str, b: str, *, user_id: str) -> EntityRelation:
    memory = context_of(source)
    user_id = memory.user(user_id)
    from_id = validate_id(a, "from_entity", memory.limits) or ""
    to_id = validate_id(b, "to_entity", memory.limits) or ""
    name = _name(relation, "relation")
    # Only the types are needed: the bounded read, not every alias of up to 10,000 entities.
    known = {e.id: e for e in load_entities(memory.store, user_id)}
    rel = EntityRelation(from_id, name, to_id, _type_of(from_id, known), _type_of(to_id, known))
    if RelationType(rel.from_type, name, rel.to_type) not in set(memory.store.ontology(user_id)):
        raise ValidationError(
            "relation",
            f"the ontology has no {rel.from_type} --{name}--> {rel.to_type}; declare it with define_relation first",
        )
    memory.store.relate_entities(user_id, rel)
    memory.wrote(user_id)
    return rel


def expand(store: Store, user_id: str, entities: Sequence[str], limit: int = EXPANSION_LIMIT) -> Expansion:
    """One store call: the entities one allowed relation away from ``entities``."""
    if not entities:
        return Expansion()
    return Expansion.of(entities, store.related_entities(user_id, list(entities), limit))


def credit(records: Sequence[MemoryRecord], expansion: Expansion) -> list[MemoryRecord]:
    """Records as ranking should see them: naming a related entity counts as naming its source."""
    if not expansion:
        return list(records)
    out: list[MemoryRecord] = []
    for record in records:
        sources = [rel.from_id for e in record.entities for rel in expansion.via.get(e, ())]
        missing = [s for s in dict.fromkeys(sources) if s not in record.entities]
        out.append(replace(record, entities=(*record.entities, *missing)) if missing else record)
    return out


def restore(
    scored: Sequence[Scored], originals: Mapping[str, MemoryRecord], expansion: Expansion, *, reasons: bool = True
) -> list[Scored]:
    """Put the stored records back and say how expansion related each one to the query (not
    ``reasons``: only the records, of items not explained yet)."""
    if not expansion:
        return list(scored)
    if not reasons:
        return [replace(item, record=originals.get(item.record.id, item.record)) for item in scored]
    out: list[Scored] = []
    for item in scored:
        record = originals.get(item.record.id, item.record)
        named = {*record.entities, *([record.subject] if record.subject else [])}
        via = [
            (rel.from_id, f"names {e}, a {rel.to_type}" if rel.relation == IS_A and rel.from_id.startswith(TYPE_SLOT)
             else f"related to {rel.from_id} via {rel.relation}")
            for e in record.entities
            for rel in expansion.via.get(e, ())
            if rel.from_id not in named
        ]
        # The source's own reason would read "found by ontology"; the "related to" reason says more.
        said = [r for r in item.reasons if r != f"found by {SOURCE}"]
        for source, text in dict.fromkeys(via):
            claim = f"mentions {source}"  # true only of the credited copy ranking saw
            if claim in said:
                said[said.index(claim)] = text
            elif text not in said:
                said.append(text)
        out.append(replace(item, record=record, reasons=tuple(said)))
    return out


class EntitiesAccessor:
    """``memory.entities(user_id=...)`` lists entities; ``memory.entities.relate(...)`` relates them."""

    def __init__(self, source: ContextSource) -> None:
        self._context: Context = context_of(source)

    def __call__(self, *, user_id: str) -> builtins.list[Entity]:
        return self._context.store.entities(self._context.user(user_id))

    def relate(self, a: str, relation: str, b: str, *, user_id: str) -> EntityRelation:
        return relate(self._context, a, relation, b, user_id=user_id)

    def define(self, from_type: str, relation: str, to_type: str, *, user_id: str) -> RelationType:
        return define_relation(self._context, from_type, relation, to_type, user_id=user_id)

    def related(
        self, entity_id: str, *, user_id: str, limit: int = EXPANSION_LIMIT
    ) -> builtins.list[EntityRelation]:
        """What ``entity_id`` relates to, as retrieval expands it."""
        return self._context.store.related_entities(self._context.user(user_id), [entity_id], limit)

    def ontology(self, *, user_id: str) -> builtins.list[RelationType]:
        return self._context.store.ontology(self._context.user(user_id))
