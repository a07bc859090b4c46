"""The second hop: memories about what the best first-pass results mention.

"What's the phone number of Leo's dentist?" finds "Leo sees the same dentist as Dana, Dr. Patel."
but not "Dr. Patel's practice ... phone 503-555-0142": nothing in the question names Dr. Patel.
The entities the best results name, and the question does not, are bridges; memories naming a
bridge are fetched (if the first pass missed them) and gain part of the bridging result's relevance
(``entity_bridge``), as a turn gains from the turn before it.

An entity most candidates name (a conversation's speakers, the company everything is about) is no
bridge: it would lift everything alike. Nor is anyone who speaks among the candidates, however few
of them name her: a colleague in the team chat is common ground, not the thing a result points to
("What happened with Acme in October?" put two chat lines naming Maya above Acme's delivery).
Nor is one that more memories name than the hop reads (:data:`HOP_LIMIT`): its memories are a
topic, not the few facts about a thing, and the hop would see only an arbitrary slice of them (at
100k memories such topics made the hop the slowest stage).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence

from engram.ext import RetrievalReads
from engram.ingest.entities import MENTION
from engram.model import Filters, Hit, MemoryRecord
from engram.retrieve.rank import RELEVANCE_SIGNAL
from engram.retrieve.ranking import Ranking
from engram.retrieve.types import Scored

__all__ = ["COMMON_AMONG", "HOP_LIMIT", "HOP_SEEDS", "bridge_entities", "bridged", "second_hop"]

#: How many of the best first-pass results may bridge.
HOP_SEEDS = 3
#: How many memories the second hop reads.
HOP_LIMIT = 30
#: An entity more of the first :data:`COMMON_AMONG` candidates name than this is common ground, not
#: a bridge: a tool a colleague liked is named in 8 of 77 candidates, and is how "How much does the
#: tool Priya liked cost?" reaches its price (3 kept it from bridging; 10 and 15 alike, with
#: gain_weights.BRIDGEMENTION: LoCoMo dev +0.2 at 10, the rest flat). A share of the candidates (5%)
#: once raised it for many candidates; among 66 it never rose above 10.
COMMON_MIN = 10
#: At most this many bridges, the rarest among the candidates first: the second hop's store read
#: counts the memories naming them, which grows with how common they are.
MAX_BRIDGES = 6
#: Common ground is read among this many candidates, the first loaded (those the sources rank best
#: together): among all that are scored, an entity 10 of 60 named bridged at ``top_k=5`` and not
#: when 100 were scored ("When did Mum have her fall?" lost its answer from the first five).
COMMON_AMONG = 66


def bridge_entities(
    best: Sequence[Scored], candidates: Sequence[MemoryRecord], query_entities: Sequence[str],
    relevance_signal: str, counts: Callable[[list[str], int], Mapping[str, int]] | None = None,
    speakers: Collection[str] = (), words: Collection[str] = (),
) -> dict[str, dict[str, float]]:
    """Bridge entity -> {seed memory id: that seed's relevance}, from the first-pass results: the
    ``best`` (best first; the first :data:`HOP_SEEDS` may bridge) among the ``candidates`` (in the
    order loaded: the first :data:`COMMON_AMONG` say what is common ground).

    ``counts(entities, cap)`` says how many of the user's memories name each entity (up to
    ``cap``; the store's ``entity_counts``): entities more memories name than the hop reads are
    left out. Without it every entity rare among the candidates may bridge.
    ``speakers`` (who speaks among the candidates) never bridge, nor a name that is one of the
    question's own ``words``: "Rush" opening a sentence ("Rush orders are stressful") names an
    entity, but "What's the process for a rush order?" asks about rush orders, not at one remove.
    """
    seeds = [s for s in best[:HOP_SEEDS] if s.tier == 0 and s.signals.get(relevance_signal, 0.0) > 0.0]
    if not seeds:
        return {}
    candidates = candidates[:COMMON_AMONG]
    counts_here = Counter(e for record in candidates for e in set(record.entities))
    # Named by more than half the candidates is common ground however few they are (a small user).
    common = min(COMMON_MIN, len(candidates) // 2)
    asked = set(query_entities) | set(speakers) | {MENTION + word for word in words}
    out: dict[str, dict[str, float]] = {}
    for seed in seeds:
        for entity in set(seed.record.entities) - asked:
            if counts_here[entity] <= common:
                out.setdefault(entity, {})[seed.record.id] = seed.signals[relevance_signal]
    if counts is not None and out:
        named = counts(sorted(out), HOP_LIMIT + 1)
        out = {e: seeds_of for e, seeds_of in out.items() if named.get(e, 0) <= HOP_LIMIT}
    keep = sorted(out, key=lambda e: (counts_here[e], -max(out[e].values()), e))[:MAX_BRIDGES]
    return {e: out[e] for e in keep}


def bridged(
    named: Mapping[str, Sequence[str]], bridges: Mapping[str, Mapping[str, float]]
) -> dict[str, tuple[float, str]]:
    """Memory id -> (best bridging relevance, the bridge entity) for memories naming a bridge.

    ``named`` maps a memory to the entities it names. A seed is not its own bridge: the bonus says
    another strong result leads here.
    """
    out: dict[str, tuple[float, str]] = {}
    for memory_id, entities in named.items():
        for entity in entities:
            for seed, relevance in bridges.get(entity, {}).items():
                if seed != memory_id and relevance > out.get(memory_id, (0.0, ""))[0]:
                    out[memory_id] = (relevance, entity)
    return out


def second_hop(
    reads: RetrievalReads, user_id: str, ranking: Ranking, entities: tuple[str, ...], filters: Filters,
    speakers: Collection[str] = (), words: Collection[str] = (),
) -> tuple[Mapping[str, Mapping[str, float]], list[Hit]]:
    """The second hop's bridge entities and the memories naming them (none without bridges)."""
    bridges = bridge_entities(
        ranking.best(HOP_SEEDS), ranking.records, entities, RELEVANCE_SIGNAL,
        lambda ids, cap: reads.entity_counts(user_id, ids, cap), speakers, words,
    )
    return bridges, (reads.by_entities(user_id, list(bridges), HOP_LIMIT, filters) if bridges else [])
