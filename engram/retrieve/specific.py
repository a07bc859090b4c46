"""How much naming an entity tells: "Mum" in a chat about moving Mum into a care home is named by
two memories in five, so a memory naming her is barely more likely the answer to "What strength of
levothyroxine is Mum taking these days?" than one that does not; "Ada" in a chat that names her
twice picks the memories about her.

An entity's weight in the entity signal falls with the share of the user's memories that name it,
as a word's weight falls with its document frequency in BM25: full up to :data:`COMMON_SHARE`,
then ``log(1 / share) / log(1 / COMMON_SHARE)``, so 0.77 at 5%, 0.41 at 20%, 0.21 at 44% and 0
when every memory names it. The share is read among the user's :data:`NEWEST` newest memories
(every memory said after the one before them, so the same ones on every backend; one bounded read
however many the user has: ``Store.entity_shares``); a user with fewer than :data:`LEAST` is read
as having that many. Who speaks is exempt: a speaker's own turns are what
"What did Caroline say about the adoption?" asks for, however much she talks.

Long personal-assistant chats whose plans keep changing, written blind to the code, R@5/10
0.498/0.640 -> 0.528/0.690 (beside the assistant's reply lending its user turn more:
:data:`engram.retrieve.episodes.REPLIED_SHARE`); long general-task histories 0.762/0.835 ->
0.782/0.843; LoCoMo dev 0.728 -> 0.724 at 5; the other dev sets and probe files within half a
point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

__all__ = ["COMMON_SHARE", "COUNTED", "LEAST", "NEWEST", "UNWEIGHTED", "entity_weights", "read_entity_weights"]

#: The share of memories at which naming an entity starts to tell less.
COMMON_SHARE = 0.02
#: How many of the user's newest memories the share is read among (~0.5 ms at 100k memories).
NEWEST = 500
#: At most this many of a query's names are counted (a statement's terms are bounded); the rest
#: count fully.
COUNTED = 32
#: A user with fewer memories is read as if they had this many: three memories that all name
#: Alice say nothing yet about how common she is.
LEAST = 100
#: Every name counts fully (no share could be read).
UNWEIGHTED: Mapping[str, float] = MappingProxyType({})


def entity_weights(counts: Mapping[str, int], size: int) -> dict[str, float]:
    """Each entity's weight in the entity signal, from how many of ``size`` memories name it."""
    out = {}
    for entity, count in counts.items():
        share = count / max(size, LEAST)
        out[entity] = 1.0 if share <= COMMON_SHARE else max(0.0, math.log(1.0 / share) / math.log(1.0 / COMMON_SHARE))
    return out


def read_entity_weights(reads: object, user_id: str, entities: Sequence[str]) -> Mapping[str, float]:
    """:func:`entity_weights` of (the first :data:`COUNTED` of) ``entities`` among the user's
    :data:`NEWEST` newest memories; every name counts fully with a store that cannot count them
    (``entity_shares`` is newer than the store protocol)."""
    shares = getattr(reads, "entity_shares", None)
    if not entities or shares is None:
        return UNWEIGHTED
    counts, size = shares(user_id, list(dict.fromkeys(entities))[:COUNTED], NEWEST)
    return entity_weights(counts, size)
