"""A conversation between people tells one event over many turns.

"How does Jon feel about the opening night?" matches "The official opening night is tomorrow", and
Jon's answer comes two turns later: "Thanks, Gina! I'm excited! It's been a wild ride". The turn
that answers shares no word and little meaning with the question; what it shares is the
conversation the best matches are in. So a turn of a conversation between people gains from the
relevance of that conversation's other best turns among the candidates (``same_conversation``).

Only between people: a chat with an assistant is a series of requests, each turn its own subject,
and there the gain lifted the other turns of the session a fact was told in above the fact's other
sessions (LongMemEval dev, user turns recall_all@10 0.929 -> 0.881; every turn 0.849 -> 0.806).
A conversation is one user's session, cut wherever it pauses for more than
:data:`CONVERSATION_PAUSE` (a channel kept as one session for months is many conversations);
messages stored without a session are one stream per agent, cut the same way (LoCoMo dev with its
session ids left out: recall@10 0.720 -> 0.759; 0.810, as with them, once the turns next to each
are read in the stream too). It is one between people when its messages are said by at least two
named people and none by an assistant, nor by a user with no name (a role word such as ``user``);
a system notice or a tool's output takes no part, nor does a memory that is no message.
A named assistant (``{"role": "assistant", "name": "Sol"}``, stored as "Sol") is known by the role
its message was given, kept in the metadata as ``message_role``. Nothing is read from the store:
the candidates a retrieval already ranks are the conversation's turns it knows.

The turns just before and after a message said by someone (read from the store: the messages with
a role in its session, or in its stream without one) give it context (``conversation_context``):
"What did you research?" / "Adoption agencies." In a conversation between people either neighbour
lends its relevance. In a chat with an assistant each side takes a share of the other's: the
reply a share of the turn it follows (with no share, "Which base image should the Docker build
use?", asked and then answered by the assistant, fell out of the top 10), the user's turn most of
the reply after it, which restates what the turn said in passing (:data:`REPLIED_SHARE`), and all of
the assistant's short question it answers ("What should I call you?" / "Alex is fine.") and a
share of a long reply before it when it is as short and asks nothing (:data:`LONG_REPLY_SHARE`):
it answers the reply's question or picks from what the reply offered. A neighbour said more than
:data:`CONVERSATION_PAUSE` away is another conversation's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import timedelta

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.standing import machine_said
from engram.retrieve.turn_roles import among_people, aside, roles, said_by_the_assistant, users_turn

__all__ = ["CAUSE_REPLY_SHARE", "CONVERSATION_PAUSE", "CONVERSATION_TURNS", "HOW_REPLY_SHARE", "LONG_REPLY_SHARE",
           "NAMED_NEXT_TO", "QUESTION_LENGTH", "REPLIED_SHARE", "REPLY_SHARE", "YOURS_REPLY_SHARE", "Lending",
           "answers", "context_support", "conversation_support", "conversations", "is_question", "lenders", "lending",
           "named_next_to", "takes_context", "turned_around"]

#: A conversation's best this-many candidates lend it their relevance: each turn gains their sum
#: over this many, not counting itself (a turn among them, or tied with the last of them, is lent
#: by the others only, so the replies around the best matches catch up with them). One stray match
#: lends little, an episode found by several turns most. LoCoMo dev evidence recall@10 with the
#: gain at 0.4: the best 2 turns 0.783, 3 turns 0.810, 5 turns 0.794; each turn lent by the best 3
#: others (itself never among them) 0.791.
CONVERSATION_TURNS = 3
#: A session's turns further apart than this (between one candidate and the next) are two
#: conversations: a long-lived channel would otherwise lift every turn of it that is a candidate.
CONVERSATION_PAUSE = timedelta(hours=2)
#: The share of the turn it follows that an assistant's reply takes as context (a turn of a
#: conversation between people takes all of either neighbour's). LongMemEval dev with assistant
#: turns recall_all@5/10: no share 0.753/0.871, a third 0.710/0.871, a half 0.699/0.849; user
#: turns, instructions and LoCoMo alike for all three; the everyday set's Docker question (above)
#: 11th with none, 5th with a third.
REPLY_SHARE = 1 / 3
#: ... and for a question of a cause or a reason ("What actually caused acme-logistics to get two
#: bills?", "Why did we drop SQLAlchemy?"): the user tells the symptom, the reply after it the
#: cause. A probe set of long technical chats written blind to the code: recall@5 0.811 -> 0.821
#: (with 1,300 unrelated turns mixed in, recall@10 0.867 -> 0.877); the unread fourth probe file
#: 0.698 -> 0.701 at 5; every dev set, the other probe files, scenarios and everyday questions
#: unchanged. Two thirds gained one more question at 5 but cost an everyday question its first
#: place (a tie at 0.912 against 0.913, broken by a bridge); all of it lost a question at 10.
CAUSE_REPLY_SHARE = 0.5
#: ... and for a question of what the assistant said ("What ceiling did you mention on how big a PR
#: comment can get?"): the user's turn it answered matches the question's topic, the reply holds
#: what was said, so the reply takes most of that turn's relevance (its own voice gains too:
#: ``columns.gains``). Probe files of long assistant chats, written blind to the code, R@5/10/hit@1:
#: coding chats 0.651/0.740/0.270 -> 0.661/0.740/0.320, two others +0.5 to +1.2 at 5 and 10; every
#: dev set, the other probe files, scenarios and everyday questions unchanged. Its context gains as an
#: answer's does (``ANSWER_GAIN``, as for :data:`HOW_REPLY_SHARE`): seventeen probe files R@5, a year of
#: one user's chats with an assistant 0.637 -> 0.648, general-task histories 0.797 -> 0.807, technical
#: chats of an analyst, an Android developer and a security engineer 0.796 -> 0.806, none down ("Which
#: place did you recommend we stay in Savannah?": the user's turn asking for a hotel ranked above it).
YOURS_REPLY_SHARE = 0.8
#: ... and for a question of how something is or was done ("How was I supposed to switch my sleep
#: from nights back to days?", "How did we fix the 502s on deploy?", "What's the stretching routine
#: for my heel, step by step?"): the user asked it in the question's words ("how do I flip from nights
#: to days?") and the reply after it is the how, so the reply takes all of that turn's relevance and
#: gains as an answer does (``ANSWER_GAIN``, not ``CONTEXT_GAIN``; the user's answer to the
#: assistant's question gains so the other way round). Seventeen probe files R@5: a year of one
#: user's chats with an assistant 0.614 -> 0.637 (dense 0.639), long technical chats 0.697 -> 0.712,
#: coding chats of a group 0.718 -> 0.729, general-task histories 0.787 -> 0.797, no question lost;
#: every dev set, the instructions set and everyday questions unchanged. An instruction is no such
#: question ("Add logging to the PDF render step." lost its standing rule's first place to a reply).
HOW_REPLY_SHARE = 1.0
#: The share of an assistant's reply's relevance the person's turn it answers borrows: the reply
#: restates and names what the turn said in passing. "Thyroid bloods came back and they've put her
#: up to 100" answers "What strength of levothyroxine is Mum taking these days?", and only the reply
#: after it ("Noted — levothyroxine goes up from 75 to 100 micrograms") says what went up; "I bought
#: a Lumie sunrise alarm clock" for "What gadget did I get to make getting up easier?" likewise.
#: At 0.2 (its value until 2026-11-30) against 0.8: long personal-assistant chats whose plans keep
#: changing, written blind to the code, R@5/10 0.483/0.608 -> 0.528/0.690 ("why" questions 0.53 ->
#: 0.74 at 10); long general-task histories 0.777/0.833 -> 0.782/0.843; every turn 0.785/0.871 ->
#: 0.785/0.882; user turns, LoCoMo (no assistant) and instructions unchanged; the coding probe files
#: within half a point. 0.5 gained half as much on the first file and nothing on the dev sets.
REPLIED_SHARE = 0.8
#: The share of the entity overlap of the turn next to it that a turn of a chat with an assistant
#: takes as its own, the user's from the assistant's and the reverse, when that turn names one of
#: the query's entities in its own words: "What strength of levothyroxine is Mum taking these
#: days?" names Mum, and the reply "Noted: it goes up from 75 to 100 micrograms" names nobody, as
#: the user's "They've put her up to 100" after the assistant's question about Mum does not. Probe
#: files of assistant chats written blind to the code, recall@5/10: plans that keep changing
#: 0.573/0.710 -> 0.597/0.725, long technical chats 0.677 -> 0.687 at 5 (its questions unread),
#: coding chats 0.828 -> 0.838 at 10; every dev set and the scenario set unchanged. Not between
#: people: there it cost texting and the friends' chats half a point at 10 (a chat's other turns
#: are mostly other talk); a third gained half as much.
NAMED_NEXT_TO = 0.5
#: An assistant's message this short that asks something (a sentence of it ends in a question
#: mark) is a question the user's next turn answers ("What should I call you?" / "Alex is fine.";
#: "Noted. What's your usual order? I can save it." / "Oat flat white."): that turn takes all its
#: relevance as context. Longer advice lends a share (LONG_REPLY_SHARE, below). No dev
#: set moved (LongMemEval's assistant turns are long; 300 and 1,000 characters alike). Six
#: onboarding exchanges written for it ("Which airline do I prefer?"): without it, once the user's
#: turns stopped taking the advice around them, two answers fell out of the top 5; with it all six
#: are in the top 5 (2nd to 4th, after the question), as when every turn took either neighbour's
#: relevance (2nd to 4th with sessions; without them two were missing then too). Demoting the
#: question (counting a third) put four of the six answers first but hid what a question holds
#: itself ("Shall I book the 8pm table at Nopa?" / "Yes please."); the answer now gains more
#: instead (gain_weights.ANSWER_GAIN): four first, the question kept.
QUESTION_LENGTH = 300
#: ... and a share of the relevance of a longer reply, when the user's next turn is as short as such
#: a question and asks nothing itself: it answers the question the reply ends with ("... where
#: should the Parquet files be staged?" / "Separate bucket: gs://vc-dw-staging"), or picks from, or
#: settles, what the reply offered ("Gift ideas around $100: ..." / "Darkroom workshop for the two
#: of us + a 5-pack of Portra. Done."); the reply matches what the answer decides. Read as an answer,
#: such a turn gains ANSWER_GAIN, not CONTEXT_GAIN, of the best context its neighbours lend, so also
#: of the 0.8 it takes of the reply after it, which restates the decision ("Perfect gift. Practical
#: notes: ..."): most of what this measured comes from there (with ANSWER_GAIN on the reply before's
#: share alone, the plans file below kept 0.720 at 10 and personal-assistant histories lost 0.6).
#: Acknowledgements ("ok thanks!", "Perfect, thank you") are no answer. Replies ending in
#: a question alone, first: probe files of long assistant chats written blind to the code R@5/10
#: coding chats 0.738/0.818 -> 0.743/0.828, LongMemEval dev with assistant turns 0.785/0.882 ->
#: 0.785/0.892. Every long reply since: plans that keep changing 0.597/0.720 -> 0.633/0.755,
#: technical chats of an analyst, an Android developer and a security engineer 0.776/0.859 ->
#: 0.796/0.882, personal-assistant histories 0.796/0.883 -> 0.791/0.898, general-task histories
#: 0.797 -> 0.787 at 5; LongMemEval dev every turn 0.796 -> 0.785 at 5 (a question), instructions
#: 0.533 -> 0.567 at 5; user turns, LoCoMo (no assistant) and the other files unchanged. 0.15
#: gained a little less; all of it put lifted answers in place of other evidence.
LONG_REPLY_SHARE = 0.3
#: A question mark (Latin, full-width, Arabic) that ends a sentence: after a word or a closing
#: character, before a space or the end, with only quotes, brackets or emoji between.
_ASKING = re.compile(r"[^\s?？؟][?？؟]+(?=[^\w\s]*(?:\s|$))")
#: What holds question marks without asking: code spans and web addresses ("watch?v=...").
#: A question quoted or answered in the same turn ("You asked 'is it spicy?' It's mild.") still
#: counts: rare in a short turn, and no rule tells it apart safely.
_NOT_PROSE = re.compile(r"`[^`]*`|\S+://\S+|www\.\S+")

Column = npt.NDArray[np.float64]


def conversations(records: Sequence[MemoryRecord]) -> list[list[int]]:
    """The places of each conversation between people's turns among ``records``."""
    sessions: dict[tuple[str, str | None, str | None], list[int]] = {}
    for at, record in enumerate(records):
        if record.kind == "message":  # messages without a session: one stream per agent, cut at its pauses
            agent = record.agent_id if record.session_id is None else None
            sessions.setdefault((record.user_id, record.session_id, agent), []).append(at)
    found = []
    for members in sessions.values():
        members.sort(key=lambda at: records[at].created_at)
        start = 0
        for end in range(1, len(members) + 1):
            if end == len(members) or (records[members[end]].created_at
                                       - records[members[end - 1]].created_at > CONVERSATION_PAUSE):
                talk = _between_people(records, members[start:end])
                if talk:
                    found.append(talk)
                start = end
    return found


def takes_context(record: MemoryRecord) -> bool:
    """Whether ``record`` may take context from the turns next to it (:func:`context_support`), so
    that they are worth reading: a message with a role, not a notice or a tool's output."""
    return record.kind == "message" and bool(roles(record)[0]) and not aside(record)


def lenders(askers: Sequence[MemoryRecord], next_to: Mapping[str, Sequence[str]],
            turns: Sequence[MemoryRecord]) -> list[str]:
    """The ids of ``turns`` (read as the neighbours of ``askers``) that can lend one of them
    context (:func:`context_support`), so are worth ranking: either neighbour of a turn that may be
    a person's in a conversation between people, the turn before an assistant's reply, the reply
    after a person's turn, the assistant's short question or longer reply before the user's turn; each within
    :data:`CONVERSATION_PAUSE`."""
    found = {t.id: t for t in turns}
    out: dict[str, None] = {}
    for asker in askers:
        for other in (found[t] for t in next_to.get(asker.id, ()) if t in found):
            if _lent(asker, other, among_people(asker)):
                out[other.id] = None
    return list(out)


def turned_around(next_to: Mapping[str, Sequence[str]], turns: Sequence[MemoryRecord]) -> dict[str, tuple[str, ...]]:
    """The turns next to each of ``turns`` that ``next_to`` already knows: a turn read as the
    neighbour of another has that one for its neighbour (what lies beyond it was not read)."""
    wanted = {t.id for t in turns if takes_context(t)}
    out: dict[str, list[str]] = {}
    for asker, others in next_to.items():
        for other in others:
            if other in wanted:
                out.setdefault(other, []).append(asker)
    return {turn: tuple(found) for turn, found in out.items()}


#: Per record, the turns next to it that lend it context: (place among the records, share of that
#: turn's relevance, whether it is the user's answer to the assistant's short question there).
Lending = list[tuple[tuple[int, float, bool], ...]]


def lending(records: Sequence[MemoryRecord], next_to: Mapping[str, Sequence[str]],
            talks: Sequence[Sequence[int]], reply: float = REPLY_SHARE) -> Lending:
    """Who lends each of ``records`` context (``next_to``, said within :data:`CONVERSATION_PAUSE`
    of it): either neighbour in a conversation between people (``talks``, from
    :func:`conversations`); elsewhere the turn before an assistant's reply, the reply after a
    person's turn, and the assistant's short question or longer reply before the user's answer (only those marked
    ``answering``); ``reply``: the share of the turn it follows a reply takes (:data:`REPLY_SHARE`,
    :data:`CAUSE_REPLY_SHARE`). Read once a ranking: whether a turn asks is read once each."""
    people = {at for talk in talks for at in talk}
    place = {r.id: at for at, r in enumerate(records)}
    asked: dict[str, bool] = {}

    def question(record: MemoryRecord) -> bool:
        if record.id not in asked:
            asked[record.id] = is_question(record)
        return asked[record.id]

    out: Lending = []
    for at, record in enumerate(records):
        among = at in people
        answering = not among and not machine_said(record)  # a user's turn takes only an answer's context
        mark = (record.created_at, record.id)
        out.append(tuple((place[t], share, answering and (records[place[t]].created_at, t) < mark)
                         for t in next_to.get(record.id, ()) if t in place
                         if (share := _lent(record, records[place[t]], among, question, reply))))
    return out


def context_support(records: Sequence[MemoryRecord], relevance: Column, lent: Lending) -> Column:
    """Per record, the relevance its neighbouring turns lend it (:func:`lending`): the best of
    their relevance, each times its share; 0 for the rest."""
    around = np.zeros(len(records), dtype=np.float64)
    for at, lenders_of in enumerate(lent):
        around[at] = max((share * float(relevance[by]) for by, share, _ in lenders_of), default=0.0)
    return around


def answers(records: Sequence[MemoryRecord], lent: Lending, close: Callable[[str, str], bool]) -> npt.NDArray[np.bool_]:
    """Per record, whether it is the user's answer to the assistant's short question next to it
    (:func:`lending`) and ``close`` to it in meaning: "Shall I remind you on Tuesday?" / "I bought
    milk." is a turn that ignored the question, not its answer."""
    return np.fromiter((any(answering and close(records[at].id, records[by].id) for by, _, answering in lenders_of)
                        for at, lenders_of in enumerate(lent)), dtype=bool, count=len(records))


def named_next_to(records: Sequence[MemoryRecord], own: Column, named_by: Sequence[AbstractSet[str]],
                  asked: AbstractSet[str], said: Mapping[str, str], neighbors: Mapping[str, Sequence[str]],
                  talks: Sequence[Sequence[int]]) -> Column:
    """Per record, :data:`NAMED_NEXT_TO` of the best entity overlap (``own``, without a description or
    a bridge) of the turns next to it that name one of the query's entities (``asked``) in their own
    words, not only by who says them (``named_by``, ``said``), on the other side of
    a chat with an assistant (the user's turn beside the assistant's, said within
    :data:`CONVERSATION_PAUSE`), else 0: never between people (``talks``, :func:`conversations`)."""
    out = np.zeros(len(records), dtype=np.float64)
    if not asked or not own.any():  # no turn names the query's entities: nothing to pass on
        return out
    place = {record.id: at for at, record in enumerate(records)}
    people = {at for talk in talks for at in talk}
    for at, record in enumerate(records):
        mine = users_turn(record)
        if at in people or not (mine or said_by_the_assistant(record)):
            continue
        for other in neighbors.get(record.id, ()):
            by = place.get(other)
            if by is None or by in people or abs(records[by].created_at - record.created_at) > CONVERSATION_PAUSE:
                continue
            other_side = (said_by_the_assistant if mine else users_turn)(records[by])
            if other_side and (named_by[by] - {said.get(other)}) & asked:
                out[at] = max(out[at], NAMED_NEXT_TO * float(own[by]))
    return out


def conversation_support(records: Sequence[MemoryRecord], relevance: Column,
                         talks: Sequence[Sequence[int]] | None = None) -> Column:
    """Per record, the sum of its conversation's :data:`CONVERSATION_TURNS` best ``relevance``
    values (each read between 0 and 1) but its own, over :data:`CONVERSATION_TURNS`, when that
    conversation is between people (``talks``, from :func:`conversations`); 0 for the rest."""
    n = len(records)
    code = np.full(n, -1, dtype=np.int64)
    for number, turns in enumerate(conversations(records) if talks is None else talks):
        code[list(turns)] = number
    talks_count = int(code.max(initial=-1)) + 1
    support = np.zeros(n, dtype=np.float64)
    inside = np.flatnonzero(code >= 0)
    if not len(inside):
        return support
    # One array pass over every conversation at once (a retrieval ranks twice, ~170 candidates).
    values = np.clip(np.nan_to_num(relevance[inside], nan=0.0), 0.0, 1.0)
    codes = code[inside]
    order = np.lexsort((-values, codes))
    first = np.searchsorted(codes[order], codes[order], side="left")
    best = order[np.arange(len(order)) - first < CONVERSATION_TURNS]  # each conversation's best turns
    lent = np.bincount(codes[best], weights=values[best], minlength=talks_count)
    least = np.full(talks_count, np.inf)
    np.minimum.at(least, codes[best], values[best])
    # A turn among the best is lent by the others only (equal values alike, whatever their order).
    mine = lent[codes]
    support[inside] = np.where(values >= least[codes], mine - values, mine) / CONVERSATION_TURNS
    return support


def _lent(asker: MemoryRecord, other: MemoryRecord, people: bool,
          question: Callable[[MemoryRecord], bool] | None = None, reply: float = REPLY_SHARE) -> float:
    """The share of its relevance ``other``, a turn next to ``asker``, lends it: all of either
    side's in a conversation between people (``people``); elsewhere :data:`REPLY_SHARE` of the
    turn before an assistant's reply, all of the assistant's short question before the user's turn
    that does not ask something itself (:data:`LONG_REPLY_SHARE` of a longer reply, before a turn
    as short), :data:`REPLIED_SHARE` of the assistant's reply after a
    person's turn; none from further than :data:`CONVERSATION_PAUSE`.
    ``question`` reads whether a turn asks something (:func:`is_question`, or a memo of it)."""
    if abs(other.created_at - asker.created_at) > CONVERSATION_PAUSE:
        return 0.0
    if people:
        return 1.0
    if aside(asker):
        return 0.0
    if (other.created_at, other.id) > (asker.created_at, asker.id):  # the reply to a person's turn
        return REPLIED_SHARE if said_by_the_assistant(other) and not machine_said(asker) else 0.0
    if (other.created_at, other.id) == (asker.created_at, asker.id):
        return 0.0
    if machine_said(asker):
        return reply
    question = question or is_question
    if _asks(other, question) and not question(asker):
        return 1.0
    if len(asker.content.strip()) <= QUESTION_LENGTH < len(other.content.strip()) and said_by_the_assistant(other) \
            and not question(asker) and not _courtesy(asker):
        return LONG_REPLY_SHARE
    return 0.0


def _asks(record: MemoryRecord, question: Callable[[MemoryRecord], bool] | None = None) -> bool:
    """Whether ``record`` is an assistant's short turn that asks something ("Which airline do you
    usually fly with?", also "Noted. What's your usual order? I can save it."), which the user's
    next turn answers unless it asks something itself."""
    return (machine_said(record) and not aside(record) and len(record.content.strip()) <= QUESTION_LENGTH
            and (question or is_question)(record))


_COURTESY = frozenset([
    "ok", "okay", "k", "thanks", "thank", "you", "thx", "ty", "cheers", "great", "perfect", "cool", "nice", "lovely",
    "brilliant", "awesome", "got", "it", "will", "do", "sounds", "good", "noted", "alright", "amazing", "wonderful",
])


def _courtesy(record: MemoryRecord) -> bool:
    """Whether ``record`` says nothing but thanks or agreement ("ok thanks!", "Perfect, thank you 🙂")."""
    words = re.findall(r"[^\W\d_]+", record.content.casefold())
    return all(w in _COURTESY for w in words)


def is_question(record: MemoryRecord) -> bool:
    """Whether a sentence of ``record`` ends in a question mark ("...? 🙂", "...？", "...؟" too),
    code and web addresses left out."""
    return _ASKING.search(_NOT_PROSE.sub(" ", record.content)) is not None


def _between_people(records: Sequence[MemoryRecord], members: list[int]) -> list[int]:
    """The turns of ``members`` said by people, if they are a conversation between people, else none."""
    turns, people = [], set()
    for at in members:
        record = records[at]
        role = roles(record)[0]
        if not role or aside(record):
            continue
        if not among_people(record):
            return []  # a chat with an assistant, or a turn of one
        turns.append(at)
        people.add(role)
    return turns if len(people) >= 2 and len(turns) >= 2 else []
