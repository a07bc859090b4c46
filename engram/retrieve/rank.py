"""Stage 3 scoring: every candidate gets all signals, one calibrated score and readable reasons.

Two fusions are offered. ``signals`` (the default) puts relevance first and the other evidence on
top of it:

* **relevance** = ``a * meaning + (1 - a) * keywords``: ``meaning`` is the cosine similarity mapped
  through the embedder's similarity range (:func:`engram.retrieve.signals.calibrated_similarity`),
  ``keywords`` the keyword source's BM25 as a share of the query's words (both in [0, 1]); ``a`` is
  ``1 - keyword_weight`` for hybrid search, 1 for semantic and 0 for keyword search.
* **context** = the weighted mean of the evidence signals that apply to this query: entity overlap
  when the query names entities, temporal relevance when it has a time scope (or asks for what is
  recent), importance and reinforcement always. A signal that does not apply gives its weight back.
* **strength** = ``relevance * (1 + b * (context - 0.5))``, times the summary boost, where ``b``
  is the applicable evidence weights' share of all applicable weights (the strategy's semantic
  weight stands for relevance). Evidence moves a relevant memory up or down by at most half of
  ``b``; it never lifts an irrelevant one, so ``min_score`` means "not relevant" on any data.
* **score** = the strength up to :data:`SCORE_KNEE`, then bending towards 1 without reaching it
  (:func:`displayed`): neither relevance nor score has a ceiling to tie at, and results are
  ordered by strength, then relevance.

This keeps the specified signals, strategies and weights but departs from its plain weighted sum, which
let importance and recency (the same for most memories) dilute relevance, and let a memory with no
similarity at all pass the score floor on importance alone. ``rrf`` is reciprocal rank fusion over
the candidate sources, for comparison. Both fill every signal so a result can always be explained.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial

import numpy as np
import numpy.typing as npt

from engram.config import SIGNALS, RetrievalConfig
from engram.model import MemoryRecord, TimeRange
from engram.ontology import TYPE_SLOT
from engram.retrieve.asked_value import holds_asked_value
from engram.retrieve.columns import Known, base_signals, calibrated, facet_sentences, gains, lasting
from engram.retrieve.episodes import (
    CAUSE_REPLY_SHARE,
    HOW_REPLY_SHARE,
    REPLY_SHARE,
    YOURS_REPLY_SHARE,
    answers,
    context_support,
    conversation_support,
    conversations,
    lending,
    named_next_to,
)
from engram.retrieve.fusion import (
    MEANING_LOW_SLACK,
    MEANING_REACH,
    SCORE_KNEE,
    displayed,
    fuse,
    meaning_share,
    reach,
    rrf_score,
)
from engram.retrieve.gain_weights import (
    AHEAD_GAIN,
    ANSWER_GAIN,
    ASK_GAIN,
    BRIDGE_GAIN,
    BRIDGE_MENTION,
    CONTEXT_GAIN,
    CONVERSATION_GAIN,
    DESCRIBES_GAIN,
    LATEST_GAIN,
    LATEST_WORDS,
    NEWEST_GAIN,
    PAST_CURRENT,
    PAST_GAIN,
    RULE_GAIN,
    STANDING_GAIN,
    TYPE_GAIN,
    VALUE_GAIN,
    VOICE_GAIN,
)
from engram.retrieve.identity import described as describing
from engram.retrieve.in_range import (
    RANGE_MATCH,
    SCOPE_TRUST,
    TIMELESS_KINDS,
    apply_min_score,
    in_range_first,
    pointed_at,
)
from engram.retrieve.keyword_evidence import (
    KEYWORD_FULL_SHARE,
    KEYWORD_LENGTH,
    KEYWORD_LENGTH_POWER,
    KEYWORD_LENGTH_POWER_OWN,
    keyword_evidence,
    without_meaning,
)
from engram.retrieve.later import decisions, later_tellings
from engram.retrieve.latest import Asked, conversation_recency, echoes
from engram.retrieve.mentioned import named_inside, reaches_ahead
from engram.retrieve.names import as_speakers, first_names
from engram.retrieve.newest import Newest, newest_first
from engram.retrieve.past import superseded
from engram.retrieve.ranking import (
    AHEAD_SIGNAL,
    ASK_SIGNAL,
    CONTEXT_SIGNAL,
    CONVERSATION_SIGNAL,
    DESCRIBES_SIGNAL,
    LATER_SIGNAL,
    LATEST_SIGNAL,
    NEWEST_SIGNAL,
    PAST_SIGNAL,
    RULE_SIGNAL,
    STANDING_SIGNAL,
    TYPE_SIGNAL,
    VALUE_SIGNAL,
    VOICE_SIGNAL,
    Ranking,
)
from engram.retrieve.signals import DEFAULT_SIMILARITY_RANGE, semantic_similarity, type_boost
from engram.retrieve.speaker_names import NamesOf, without_speakers
from engram.retrieve.standing import closest_rules, governing_rules, said_of_themselves
from engram.retrieve.turn_roles import said_by_the_assistant

__all__ = [
    "AHEAD_GAIN", "AHEAD_SIGNAL", "ALL_SIGNALS", "ANSWER_GAIN", "ASK_GAIN", "ASK_SIGNAL", "BRIDGE_GAIN",
    "BRIDGE_MENTION",
    "BRIDGE_SIGNAL", "CONTEXT_GAIN", "CONTEXT_SIGNAL", "CONTEXT_SIGNALS", "CONVERSATION_GAIN", "CONVERSATION_SIGNAL",
    "DESCRIBES_GAIN", "DESCRIBES_SIGNAL",
    "KEYWORD_FULL_SHARE", "KEYWORD_LENGTH", "KEYWORD_LENGTH_POWER", "KEYWORD_LENGTH_POWER_OWN", "KEYWORD_SIGNAL",
    "LATER_SIGNAL", "LATEST_GAIN", "LATEST_SIGNAL",
    "MEANING_LOW_SLACK", "MEANING_REACH", "NEWEST_GAIN", "NEWEST_SIGNAL", "PAST_GAIN", "PAST_SIGNAL", "RANGE_MATCH",
    "RELEVANCE_SIGNAL", "RULE_GAIN", "RULE_SIGNAL", "SCOPE_TRUST", "SCORE_KNEE", "STANDING_GAIN", "STANDING_SIGNAL",
    "TIMELESS_KINDS",
    "TYPE_GAIN", "TYPE_SIGNAL", "VALUE_GAIN", "VALUE_SIGNAL", "VOICE_GAIN", "VOICE_SIGNAL", "apply_min_score",
    "as_speakers", "displayed", "fuse", "in_range_first", "meaning_share", "pointed_at", "rank",
]

KEYWORD_SIGNAL = "keyword_relevance"
RELEVANCE_SIGNAL = "relevance"
BRIDGE_SIGNAL = "entity_bridge"
#: The evidence that rides on relevance, in SIGNALS order after semantic similarity.
CONTEXT_SIGNALS: tuple[str, ...] = SIGNALS[1:]
#: The five strategy signals plus keyword relevance and the fused relevance, in report order.
ALL_SIGNALS: tuple[str, ...] = (
    *SIGNALS, KEYWORD_SIGNAL, CONTEXT_SIGNAL, BRIDGE_SIGNAL, ASK_SIGNAL, VOICE_SIGNAL, STANDING_SIGNAL, RULE_SIGNAL,
    TYPE_SIGNAL, LATEST_SIGNAL, DESCRIBES_SIGNAL, NEWEST_SIGNAL, VALUE_SIGNAL, PAST_SIGNAL, AHEAD_SIGNAL,
    CONVERSATION_SIGNAL, LATER_SIGNAL, RELEVANCE_SIGNAL,
)

# The order a result's signals are listed in (its explanation's order).
_SIGNAL_ORDER = (
    *SIGNALS, KEYWORD_SIGNAL, RELEVANCE_SIGNAL, CONTEXT_SIGNAL, BRIDGE_SIGNAL, ASK_SIGNAL, VOICE_SIGNAL,
    STANDING_SIGNAL, RULE_SIGNAL, TYPE_SIGNAL, LATEST_SIGNAL, DESCRIBES_SIGNAL, NEWEST_SIGNAL, VALUE_SIGNAL,
    PAST_SIGNAL, AHEAD_SIGNAL, CONVERSATION_SIGNAL, LATER_SIGNAL,
)


def rank(
    records: Sequence[MemoryRecord],
    *,
    query_vec: npt.NDArray[np.float32] | None,
    vectors: Mapping[str, npt.NDArray[np.float32]],
    query_entities: Sequence[str],
    time_range: TimeRange | None,
    now: datetime,
    weights: Mapping[str, float],
    keyword_scores: Mapping[str, float],
    sources: Mapping[str, Sequence[str]],
    source_ranks: Mapping[str, Mapping[str, int]],
    config: RetrievalConfig,
    recency: bool = False,
    similarity_range: tuple[float, float] = DEFAULT_SIMILARITY_RANGE,
    neighbors: Mapping[str, Sequence[str]] | None = None,
    bridges: Mapping[str, tuple[float, str]] | None = None,
    speakers: Mapping[str, str] | None = None,
    asks: bool = False,
    speaking: Sequence[str] = (),
    requests: bool = False,
    procedural: bool = False,
    profile: str | None = None,
    latest: Asked | None = None,
    described: Sequence[str] = (),
    permission: bool = False,
    newest: Newest | None = None,
    value: str | None = None,
    past: bool | tuple[str, ...] = False,
    days_only: bool = False,
    yours: bool = False,
    cause: bool = False,
    how: bool = False,
    outcome: bool = False,
    known: Known | None = None,
    facets: Mapping[str, npt.NDArray[np.float32]] | None = None,
    rules: Sequence[str] | None = None,
    entity_weights: Mapping[str, float] | None = None,
    speaker_names: NamesOf | None = None,
) -> Ranking:
    """Score every record; best first, ties by id. ``min_score`` is left to the caller.

    ``weights`` are the query strategy's weights; ``config.weights``, when set, overrides them
    signal by signal. Temporal relevance applies when there is a ``time_range`` or the query asks
    for what is recent (``recency``); entity overlap when some candidate names a query entity. A
    record's candidate entities are its ``entities`` plus its ``subject`` (a fact's subject is its
    entity). ``neighbors`` maps a memory to the turns just
    before and after it in its conversation: a turn next to a relevant candidate gains
    ``CONTEXT_GAIN`` of that candidate's own relevance (``conversation_context``; in a chat with an
    assistant a reply takes a share of the turn it follows, the user's turn most of the reply after
    it and, as an answer gaining ``ANSWER_GAIN``, the assistant's short question or a share of a
    longer reply before it: :mod:`engram.retrieve.episodes`; when the query asks ``how`` something is
    or was done, a reply takes all of the turn it follows, as an answer; asked what the assistant
    said, most of it). ``bridges`` maps
    a memory to the relevance of a top result it shares an entity with, and that entity: it gains
    ``BRIDGE_GAIN`` of it (``entity_bridge``, the second hop). ``speakers`` maps a memory to the
    entity of who said it: a query entity that speaks counts fully only in its own memories.
    ``asks`` (the query asks what was asked) lets questions gain ``ASK_GAIN`` (``asked``): the
    questions of the query's speaking entities when it names any, else any question not the
    assistant's. ``speaking`` names the entities whose words the query asks for: their own
    messages gain ``VOICE_GAIN`` (``voice``). ``requests`` (the query asks for something to be done
    or suggested) lets the user's standing instructions and preferences gain ``STANDING_GAIN`` of
    their own meaning (``standing``), as ``procedural`` (the query asks how something is done) lets
    procedures; ``profile`` (the user, when the query asks what is known of them) lets what that
    user said of themselves, and their facts, gain it whatever their meaning;
    ``facets`` (the vectors of a memory's standing sentences, read for requests only) lets such a
    memory's meaning be its closest sentence's. ``latest`` (the user and the query, when it asks
    about the last conversation) lets a memory gain ``LATEST_GAIN`` of its conversation's recency;
    ``described`` (the name the query asks who they are) lets what describes them gain ``DESCRIBES_GAIN``;
    ``permission`` (the query asks whether something may be done) lets the standing statements of
    whoever it names who speaks among the candidates gain as a request's do; ``newest`` (the query
    asks for the newest of something) lets what fits it gain ``NEWEST_GAIN`` of how new it is among
    what fits (``newest``, engram.retrieve.newest). ``rules`` (given for a request the user's rules govern:
    the user's standing statements whose closest sentence is closest to it, the standing source's)
    with the procedures ranked here, in order of similarity (``governing_rules``), lets the first of
    them ranked gain ``RULE_GAIN``, each next ``RULE_SHARE`` of the one before, to the ``RULE_KEEP``-th
    (``closest_rule``), when the query has a vector to be close to. ``known``
    keeps the signals the second hop does not change between a query's rankings; ``entity_weights``
    how telling each query entity is (engram.retrieve.specific); ``speaker_names`` the vectors of
    speakers' names, taken out of their short turns' similarity (engram.retrieve.speaker_names).
    """
    strategy = dict(weights)
    if config.weights is not None:
        strategy.update(config.weights)
    w = [float(strategy.get(name, 0.0)) for name in SIGNALS]
    share = meaning_share(config.search_type, config.keyword_weight)
    said = speakers or {}
    own_words: dict[str, set[str]] = {}  # speaker -> the entities their own turns name
    for record in records:
        if record.id in said:
            own_words.setdefault(said[record.id], set()).update(record.entities)
    query_entities = as_speakers(query_entities, frozenset(said.values()), own_words)
    speaking = as_speakers(speaking, frozenset(said.values()), own_words)
    voices = frozenset(query_entities) & frozenset(said.values())
    short = first_names(query_entities, records, frozenset(said.values()))
    # Each signal is one array over the records: per-record Python was a third of a small user's
    # retrieval. The signals the second hop does not change are computed once a query (``known``).
    seen = known if known is not None else Known()
    (cosines, raw_keywords, overlaps, temporal, importance, reinforced), named_by = base_signals(
        records, query_vec=query_vec, vectors=vectors, keyword_scores=keyword_scores,
        query_entities=query_entities, time_range=time_range, now=now, said=said, voices=voices,
        known=seen, facets=facets, first_names=short, entity_weights=entity_weights,
    )
    keywords = keyword_evidence(raw_keywords, records, yours)
    if speaker_names is not None and voices and query_vec is not None:  # "Kofi: Poor lad" is mostly "Kofi"
        cosines = without_speakers(cosines, records, said, voices, vectors, query_vec, speaker_names)
    meaning = calibrated(cosines, reach(cosines, similarity_range), ceiling=False)
    if query_vec is not None:  # one common word of the question in a short message about something else
        embedded = np.fromiter((vectors.get(r.id) is not None for r in records), dtype=bool, count=len(records))
        keywords = without_meaning(keywords, meaning, records, embedded)
    relevance = share * np.minimum(meaning, 1.0) + (1.0 - share) * keywords
    # What says who the query's person is names them, by whatever name ("Priya Nair" for "Priya").
    describes = describing(records, described)
    own, overlaps = overlaps, np.maximum(overlaps, describes) if described else overlaps  # own: what each names
    # Entity overlap is evidence only if some candidate names a query entity: a name no memory
    # carries ("EPs") would otherwise lower every score alike and push relevant ones under min_score.
    applicable = (bool(overlaps.any()), time_range is not None or recency, True, True)
    if applicable[0] and bridges:
        # A memory a top result leads to is about the query's entities at one remove: "How much does
        # the tool Priya liked cost?" is answered by "Ledgerly costs $39 a month", which names no Priya.
        one_remove = np.fromiter((record.id in bridges for record in records), dtype=bool, count=len(records))
        overlaps = np.where(one_remove, np.maximum(overlaps, BRIDGE_MENTION), overlaps)
    # What each signal weighs in this retrieval, as reported: relevance's weight split between its
    # two parts, and the evidence weights that apply (the others gave theirs back).
    evidence = [weight if applies else 0.0 for weight, applies in zip(w[1:], applicable, strict=True)]
    total = w[0] + sum(evidence) or 1.0
    reported = {"semantic_similarity": w[0] * share / total, KEYWORD_SIGNAL: w[0] * (1.0 - share) / total}
    for name, weight in zip(CONTEXT_SIGNALS, evidence, strict=True):
        reported[name] = weight / total
    talks = conversations(records)  # the conversations between people among the candidates
    named = overlaps  # what a turn names itself ("newest" reads it); "Noted: up to 100 mcg" takes Mum's below
    overlaps = np.maximum(overlaps, named_next_to(records, own, named_by, set(query_entities), said, neighbors or {},
                                                  talks))
    lent = lending(records, neighbors or {}, talks,
                   HOW_REPLY_SHARE if how else max(CAUSE_REPLY_SHARE if cause else REPLY_SHARE,
                                                   YOURS_REPLY_SHARE if yours else 0.0))
    around = context_support(records, relevance, lent)
    via, asked, spoke, stands = gains(records, bridges or {}, said, voices, asks, speaking,
                                      requests or profile is not None,
                                      seen.holds if profile is None
                                      else partial(said_of_themselves, user_id=profile), assistant=yours)
    # "Redo the start of the antagonist's chapter": the user's rules closest to a request govern it
    rule = np.zeros(len(records))
    if rules is not None and requests and query_vec is not None:  # a request the user's rules govern
        rule = closest_rules(governing_rules(rules, records, cosines), records)
    if permission and voices and not stands.any():  # "Can I phone Maya after 7?": her rules answer it
        stands = np.fromiter((said.get(r.id) in voices and seen.standing_of(r) for r in records), dtype=np.float64,
                             count=len(records))
    if procedural:  # "What's the process for a rush order?": a procedure is the answer it asks for
        stands = np.maximum(stands, np.fromiter((r.kind == "procedure" for r in records), dtype=np.float64,
                                                count=len(records)))
    slots = [e for e in query_entities if e.startswith(TYPE_SLOT)]
    typed = np.fromiter((any(slot in named for slot in slots) for named in named_by), dtype=np.float64,
                        count=len(records)) if slots else np.zeros(len(records), dtype=np.float64)
    recent = conversation_recency(records, latest, now) if latest is not None else np.zeros(len(records))
    # "When did Acme last order?": the newest of what fits it
    # "What's Alice's email?": what holds an e-mail address, as far as it is relevant
    holds = holds_asked_value(records, value) * np.minimum(relevance, 1.0) if value else np.zeros(len(records))
    # What the user told of later that retells a best match (a renegotiated offer, a moved date)
    later = later_tellings(records, relevance, vectors, similarity_range, now, outcome)
    later = np.where(later > relevance, later, 0.0)  # reported only where it lifts
    relevance = np.maximum(relevance, later)
    # "What was my old gym?": what no longer holds, as far as it is relevant, before what replaced it
    was = np.zeros(len(records))
    if past:
        older, current = superseded(records, time_range, now, past)
        was = older * np.minimum(relevance, 1.0)
        relevance = np.where(current, relevance * PAST_CURRENT, relevance)
    # "What do I have next week?", "What happened on Sunday?": what names a day in the scope, said before
    # or after it (as far as it is relevant, unless the question says nothing but when of days to come)
    ahead = np.zeros(len(records))
    if time_range is not None and not time_range.vague and now is not None:
        ahead = np.array(named_inside(records, time_range, now), dtype=np.float64).reshape(len(records))
        ahead = ahead if days_only and reaches_ahead(time_range, now) else ahead * np.minimum(relevance, 1.0)
    new = np.zeros(len(records))
    if newest is not None:
        new = newest_first(records, newest, named=named, meaning=meaning, keywords=keywords, now=now,
                           names_someone=bool(query_entities), time_range=time_range)
        fit = new > 0
        if fit.any():  # what fits is relevant enough: how new it is orders it
            relevance = np.where(fit, float(relevance[fit].max()), relevance)
    if latest is not None:  # the newest questions first; the query's own words say little
        asked = asked * recent
        relevance = relevance * LATEST_WORDS * (1.0 - echoes(records, latest))
    # No ceiling: a memory closer in meaning than a "clear match" (the similarity range's top), or
    # a relevant one that also gains from its context, keeps that lead in the order. Neighbours
    # and bridges pass on relevance read up to a full match, as before.
    together = conversation_support(records, relevance, talks)  # a conversation between people's other best turns
    # A user's answer to the assistant's question (closer to it in meaning than unrelated texts), or the rest
    bottom = similarity_range[0]
    answered = answers(records, lent, lambda a, b: semantic_similarity(vectors.get(a), vectors.get(b)) > bottom)
    if how or yours:  # the reply to the user's turn that asked how, or what the assistant said, answers it
        answered |= np.fromiter((said_by_the_assistant(r) for r in records), dtype=bool, count=len(records))
    # What the user decided, for a question of the outcome: the reply after it restates it in the question's words.
    decided = decisions(records) & ~answered if outcome else np.zeros(len(records), dtype=bool)
    answered |= decided
    gain = np.where(answered, ANSWER_GAIN, CONTEXT_GAIN)
    relevance = (relevance + share * (meaning - np.minimum(meaning, 1.0))
                 + gain * around + CONVERSATION_GAIN * together + BRIDGE_GAIN * via + ASK_GAIN * asked
                 + VOICE_GAIN * spoke
                 + STANDING_GAIN * stands * (np.minimum(meaning, 1.0) if profile is None else lasting(records, seen))
                 + RULE_GAIN * rule
                 + TYPE_GAIN * typed + LATEST_GAIN * recent + DESCRIBES_GAIN * describes + NEWEST_GAIN * new
                 + VALUE_GAIN * holds + PAST_GAIN * was + AHEAD_GAIN * ahead)

    used_weights: dict[str, float] = reported
    columns = [cosines, overlaps, temporal, importance, reinforced, keywords, displayed(relevance), around, via,
               asked, spoke, stands, rule, typed, recent, describes, new, holds, was, ahead, together, later]
    values = [column.tolist() for column in columns]
    names: tuple[str, ...] = _SIGNAL_ORDER
    ids = [record.id for record in records]
    if config.fusion == "rrf":
        scores = [rrf_score(record.id, source_ranks, config.rrf_k) for record in records]
        used_weights = {"rrf": 1.0}
        names, values = (*names, "rrf"), [*values, scores]
        order = [at for *_, at in sorted(zip([-s for s in scores], ids, range(len(ids)), strict=True))]
    else:
        boost = np.array([type_boost(record.kind) for record in records], dtype=np.float64)
        context = np.column_stack([overlaps, temporal, importance, reinforced]).reshape(len(records), 4)
        strength = fuse(relevance, context, np.array(w), np.array(applicable), boost)
        scores = displayed(strength).tolist()
        # Best first by strength, then by relevance: the id decides only between equals in both.
        order = np.lexsort((np.array(ids, dtype=object), -relevance, -strength)).tolist() if ids else []
    return Ranking(
        records=records, scores=scores, names=names, columns=values, weights=used_weights, order=order,
        vectors=vectors, sources=sources, query_entities=query_entities, named_by=named_by,
        time_range=time_range, bridges=bridges or {}, sentences=facet_sentences(records, facets or {}, seen),
        procedural=procedural, answered=frozenset(r.id for r, a in zip(records, answered, strict=True) if a),
        value=value, decided=frozenset(r.id for r, d in zip(records, decided, strict=True) if d),
    )
