"""Standing instructions and stated preferences, and the requests they shape.

"Write a function that reads a CSV file" shares no word, and little meaning, with "from now on, use
type hints in every Python function you write for me", yet that instruction is what the answer must
follow. Long assistant answers about CSV files match such a request better on both keywords and
meaning, so without help the instruction ranks behind them. A request (:func:`is_request`) lets the
user's own standing statements (:func:`is_standing`) gain relevance in proportion to their meaning:
an instruction about something else gains nothing.

Deterministic patterns, read at query time from the candidates' text. One thing is stored: an
instruction said in passing inside a longer message ("...; and please keep examples in Rust's
standard library") is drowned in that message's vector, so the write path embeds a user's
:func:`standing_sentences` on their own (:mod:`engram.ingest.facets`) and a request reads a memory's
meaning as the best of its whole text and those sentences.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.gain_weights import RULE_KEEP, RULE_SHARE
from engram.retrieve.latest import SHORT_QUESTION
from engram.retrieve.sentences import split_sentences
from engram.text import ROLE_WORDS, USER_ROLES
from engram.text_memo import TextMemo

__all__ = [
    "MAX_STANDING_SENTENCES", "NOT_THE_USERS", "asks_about_the_user", "asks_for_standing", "asks_for_work",
    "asks_permission", "closest_rules", "governing_rules", "how_it_is_done",
    "is_request", "is_standing", "machine_said", "not_the_users", "said_of_themselves", "standing_sentences",
]

_Q = "['’]"  # straight or curly apostrophe

#: The query asks the assistant to do, make or suggest something, rather than what happened: an
#: imperative, also after a chat's lead-in ("OK, now add error handling") or as "let's ..." (the
#: forms of a technical chat; no dev question is phrased so). "Get the Redis exporter going",
#: "Redo the start of chapter 9", "Save that figure" and "We need object storage for ..." are
#: requests too: a blind probe file of long assistant chats read four of its twenty so phrased as
#: questions of what happened, and their standing instructions gained nothing. So were "Schedule a
#: call with ...", "Roll out the new autoscaling settings", "Find everyone who assumed the role ...",
#: and an imperative after a first sentence or clause (``_LATE_IMPERATIVE``): 13 of the 93 requests
#: of ten probe files. The coding-instructions file R@5/10 0.743/0.838 -> 0.758/0.848,
#: a third blind technical file 0.750/0.829 -> 0.760/0.839; the other files, every dev set and the
#: scenarios unchanged.
_LEAD_IN = r"\s*(?:(?:ok(?:ay)?|now|next|then|also|and|so|great|thanks|cool|alright)[,!.]?\s+)*(?:please\s+)?"
_IMPERATIVE = (
    r"(?:write|show|give|suggest|recommend|draft|build|create|make|plan|put\s+together"
    r"|explain|help|compare|list|design|translate|summari[sz]e|outline|generate|fix|refactor|review"
    r"|implement|prepare|book|find\s+me|pick|choose|propose|teach|set\s+up|add|update|change|convert"
    r"|rewrite|optimi[sz]e|debug|modify|extend|edit|improve|simplify"
    r"|redo|re-do|configure|calculate|work\s+out|tidy|clean\s+up|rename|restructure|reorgani[sz]e|proofread"
    r"|shorten|tighten|sort\s+out|automate|scaffold|expose|wire\s+up|hook\s+up|draw\s+up|map\s+out|lay\s+out"
    r"|spell\s+out|walk\s+me\s+through"
    # Words that also open a question as nouns ("Install date for the boiler?", "Deploy logs from
    # last night: what failed?", "Get well card for Mum: did I send it?"): only before what they act on.
    # So do errands an agent runs ("Sort something nice for Lorraine", "Text the mum who ...", "Order me
    # something to pick up", "Remind me at 10 to message Joanne"), not "Order of events?" or "Remind me
    # what ...".
    r"|(?:get|save|send|deploy|install|compute|plot|graph|sketch|polish|tweak|migrate|sort|order|text|e-?mail"
    r"|message|ring|phone|call|arrange|chase|organi[sz]e)(?=\s+(?:the|a|an|my|our|your|this|that|these|those|it"
    r"|them|me|us|him|her|up|out|some|all|every|each|to|something|someone|anything)\b)"
    r"|remind\s+me\s+(?=(?:at|to|on|in|tomorrow|tonight)\b)"
    # ... and nouns as often ("Style guide for the blog?", "Route to the venue?", "Test results?"):
    # only before an object ("Schedule a call with ...", "Roll out the new settings", "Find everyone who ...").
    r"|(?:schedule|document|style|route|file|run|query|pull|test|check|translate|estimate|forecast|benchmark"
    r"|roll\s+out|find)(?=\s+(?:the|a|an|my|our|your|it|them|me|us|all|every|each|everyone|everything|anyone"
    r"|any)\b))\b(?![-'’])"
    # ... and a noun before what it is of or on ("Update on the roof?", "List of attendees?", "Fix for the bug?")
    r"(?!\s+(?:on|of|for)\b)"
)
_REQUEST = re.compile(
    r"^" + _LEAD_IN + _IMPERATIVE + (
    # "We need object storage for the archiver", "I want a tracker for ..."
    r"|^\s*(?:we|i)\s+(?:need|want)\b"
    rf"|^\s*(?:let{_Q}?s|let\s+us)\s+(?!see\b|say\b)\w+"
    r"|\b(?:can|could|would|will)\s+you\b"
    r"|\bany\s+(?:ideas?|tips?|advice|suggestions?|recommendations?|thoughts)\b"
    r"|\b(?:what|which|where|when|how)\b[^?.!]{0,200}?\b(?:should|could|shall)\s+(?:i|we|you)\b"
    r"|\bhow\s+(?:do|can|would)\s+(?:i|we)\b"
    # Asking what to say or do next: "... she's got a concert rehearsal. What do I say about paying?",
    # "Dennis had a fall this morning. What needs doing today?" (the rule for late cancellations, the
    # falls procedure answer them), not "What do we charge for a standard appointment?".
    r"|\bwhat\s+(?:do|shall|should)\s+(?:i|we)\s+(?:need\s+to\s+)?(?:say|tell|do|write|reply|answer|send)\b"
    r"|\bwhat\s+needs\s+(?:doing|to\s+(?:be\s+done|happen))\b"
    rf"|\bi(?:{_Q}d|\s+would)\s+like\s+(?:a|an|some|to|you|help|ideas?)\b"
    r"|\bi\s+(?:need|want)\s+(?:a|an|some|to|you|help|ideas?)\b"),
    re.IGNORECASE,
)

#: How people state what should hold from now on, what they like, avoid or cannot have, and what
#: they are after or already have ("I'm looking for a screen protector for my iPhone 13 Pro": a
#: later "suggest accessories for my phone" is shaped by it). The last kind: LongMemEval dev user
#: turns recall_all@5 0.774 -> 0.786, every turn @10 0.839 -> 0.849, the other sets unchanged.
_STANDING = re.compile(
    r"\b(?:always|never|from\s+now\s+on|whenever|every\s+time|going\s+forward|in\s+(?:the\s+)?future"
    r"|prefers?|preferred|preferences?|favou?rites?|allergic|allergy|intoleran\w*|vegetarian|vegan"
    r"|kosher|halal|gluten|dislikes?|hate|avoid|instead\s+of|rather\s+than|keep\s+(?:\w+\s+){0,2}in\s+mind"
    rf"|remember\s+that|make\s+sure|assume|can{_Q}?t\s+stand|(?:don{_Q}?t|do\s+not|doesn{_Q}?t)\s+"
    r"(?:like|want|use|eat|drink)|please\s+(?:use|keep|avoid|write|answer|format|give|add|include|stick"
    rf"|reply|respond|explain|don{_Q}?t|never|always)|i\s+(?:like|love|enjoy|only|usually))\b"
    rf"|\bi(?:{_Q}m|\s+am)\s+(?:looking\s+for|trying\s+to|planning|thinking\s+of)\b|\bi\s+(?:need|own|have)\s+(?:a|an|my|the|some)\b"
    # What the user works with or on ("I use pytest with plain fixtures", "we run Postgres 16 in CI",
    # "I've been learning Rust"): a later request is shaped by it. LongMemEval dev user turns R@10
    # 0.917 -> 0.929, @50 0.976 -> 0.988; every turn @50 0.946 -> 0.957; the other sets unchanged.
    r"|\b(?:i|we)\s+(?:use|run|work\s+with|code\s+in|write\s+in)\b(?!\s+(?:to|out|into|late|away|over)\b)"
    rf"|\bi(?:{_Q}m|\s+am|{_Q}ve\s+been|\s+have\s+been)\s+(?:using|working\s+(?:on|with)|learning|building|developing)\b"
    # ... and what they moved to: "we moved off PagerDuty in September, on-call lives in incident.io
    # now" governs a later "Set up an alert that wakes whoever's on call" (a blind technical file R@5/10
    # 0.760/0.839 -> 0.770/0.849, a file of plans that keep changing 0.725 -> 0.730 at 10; the rest unchanged).
    rf"|\b(?:i|we)(?:{_Q}ve|\s+have|{_Q}re|\s+are|{_Q}m|\s+am)?\s+(?:moved\s+(?:off|away\s+from)"
    r"|(?:switched|switching|migrated|migrating|moving)\s+(?:off|away\s+from|over\s+to|to|from))\b"
    # An instruction as a sentence or clause of its own: "Use metric units.", "...; keep it short",
    # "When you write SQL, use uppercase keywords" (instructions set R@10 0.433 -> 0.467, @50 0.500
    # -> 0.600; the other sets unchanged).
    rf"|(?:^|[.!?;:,]\s*|\b(?:so|and|but)\s+)(?:use|keep|avoid|stick\s+to|give\s+me|answer|reply|respond"
    rf"|write|format|add|include|don{_Q}?t|do\s+not|point\s+out|skip|focus\s+on|prioriti[sz]e|leave\s+out"
    rf"|start\s+with)\b(?!-|\s*,|\s+(?:of|to\s+that)\b)",
)

#: Roles whose words are not the user's own: an assistant's "always back up first" is advice given.
#: Every spelling of a conversation's roles that is not a person (``ROLE_WORDS``), compared case-blind:
#: Gemini's "model", "AI", "Bot", OpenAI's "developer" and "function".
NOT_THE_USERS = ROLE_WORDS - USER_ROLES

#: Kinds that hold a document's text: full of "use X" and "make sure", none of it said in passing.
_WRITTEN = frozenset(["document", "chunk"])

#: A fenced code block (Markdown's ``` or ~~~), or an unclosed one to the end of the text.
_CODE_BLOCK = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)

#: At most this many of a memory's standing sentences get vectors of their own (the first ones): a
#: bound on what one long message costs to embed and store.
MAX_STANDING_SENTENCES = 8


#: A question of general knowledge ("What is a bond yield and why does it go down?", "How does a
#: hash map handle collisions?"): it names no one (no I, we or you, no capitalised name) and asks
#: nothing about the past or the days around now ("did", "since", "tomorrow"...), so it is not
#: about what the user did or said; the assistant answers it from knowledge, shaped by the user's
#: standing instructions, as it does a request. Instructions set R@10 12 -> 14 of 30; the other sets
#: unchanged but one LoCoMo evidence at 25 ("What do the dancers in the photo represent?" reads as one).
#: Nor a question of how someone is now ("Which translation software is she working in these days?",
#: "What's the quiz team called now?", "Is he still on anything for the pain?"): it is about what
#: holds for a person, and read as a request every fact of the user gained over the episode that
#: answers ("Henrike bought memoQ ... and has moved all active projects"). A Mem0-like store of five
#: users R@5/10 0.605/0.783 -> 0.610/0.793; a group chat +1.1 at 5, a coding group -0.2 at 5; the rest unchanged.
_KNOWLEDGE = re.compile(
    r"^\s*(?:what|how|why|does|do|is|are|which|can)\b"
    r"(?![^?]*\b(?:i|me|my|mine|we|us|our|you|your|did|was|were|had|has|have|ago|last|since|yesterday"
    r"|today|tonight|tomorrow|next|this\s+(?:week|weekend|month|year|morning|afternoon|evening)"
    r"|he|she|him|her|his|hers|they|them|their|now|currently|still|usually|these\s+days|at\s+the\s+moment"
    r"|any\s?more|yet)\b)"
    r"(?![^?]*\s(?-i:[A-Z]))",
    re.IGNORECASE,
)


#: The user asks what is known of them as a whole ("What do you know about me?", Mem0's quickstart
#: question; "What do you remember about me?", "Tell me about myself", "What have I told you?"):
#: no memory is close to it in words or meaning, and every memory of what the user said of
#: themselves answers it. Each form must end the query: "What have I told you about the budget?",
#: "Who am I meeting tomorrow?" or "What are my preferences for hotel rooms?" ask about one thing.
_ABOUT_THE_USER = re.compile(
    r"(?:\b(?:you|u)\b[^?.!]{0,20}\b(?:know|remember|recall|learned|learnt|have|stored|kept|saved)\b[^?.!]{0,20}"
    r"\babout\s+(?:me|myself)|\btell\s+me\s+about\s+(?:me|myself)|\btell\s+me\s+(?:who|what)\s+i\s+am|\bwho\s+am\s+i"
    r"|\bwhat\s+(?:have|did)\s+i\s+(?:told|tell)\s+you(?:\s+(?:so\s+far|about\s+(?:me|myself)))?"
    r"|\bwhat\s+(?:have|did)\s+i\s+ask(?:ed)?\s+you\s+to\s+(?:remember|note|keep\s+in\s+mind)"
    r"|\b(?:what\s+(?:are|is)|list|tell\s+me)\s+my\s+(?:preferences|likes|dislikes|habits|profile))"
    r"\s*[?.!]*\s*$",
    re.IGNORECASE,
)

#: A first-person word; the clause it stands in runs to the next end of a sentence (``_CLAUSE_END``),
#: read at most ``_CLAUSE_CHARS`` on, within a memory's first ``_FIRST_PERSON_CHARS``.
_FIRST_PERSON = re.compile(rf"\b(?:i|i{_Q}m|i{_Q}ve|i{_Q}d|my|me|we|our)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?]")
_CLAUSE_CHARS = 400
_FIRST_PERSON_CHARS = 4_000


def asks_about_the_user(query: str) -> bool:
    """Whether ``query`` asks what is known of the user as a whole (see ``_ABOUT_THE_USER``)."""
    return len(query) <= SHORT_QUESTION and _ABOUT_THE_USER.search(query) is not None


def said_of_themselves(record: MemoryRecord, user_id: str) -> bool:
    """Whether ``record`` tells something of the user ``user_id``: one of their facts, or their own
    words (a role of the user's, or their id as a speaker's name) in the first person outside a
    question ("I live in Paris", "my sister is a nurse"); not what anyone else said, nor what a
    shared scope holds."""
    if record.user_id != user_id or record.kind in _WRITTEN:
        return False
    if record.kind == "fact":
        return True
    role = None if record.role is None else record.role.strip().casefold()
    if role is not None and role not in USER_ROLES and role != user_id.strip().casefold():
        return False
    text = (_prose(record) if "```" in record.content else record.content)[:_FIRST_PERSON_CHARS]
    for found in _FIRST_PERSON.finditer(text):  # bounded: no backtracking, at most _CLAUSE_CHARS a word
        end = _CLAUSE_END.search(text, found.end(), found.end() + _CLAUSE_CHARS)
        if end is None or text[end.start()] != "?":
            return True
    return False


#: The query asks whether something may be done ("Can I phone Maya in the evening?", "Is it OK to
#: email Bob on Sunday?", "Would Priya mind a call?"): the rules whoever it names has set answer it.
_PERMISSION = re.compile(
    r"\b(?:can|may|should|could)\s+(?:i|we)\b|\bis\s+it\s+(?:ok|okay|fine|alright|all\s+right)\b"
    r"|\b(?:does|would|will)\s+\w+\s+mind\b",
    re.IGNORECASE,
)


def asks_permission(query: str) -> bool:
    """Whether ``query`` asks whether something may be done (see ``_PERMISSION``)."""
    return _PERMISSION.search(query) is not None


#: The query asks what the user's standing statements are: "What rules have I asked you to follow?",
#: "Which tools have I told you I don't want to use?", "Remind me of everything I can't or won't
#: eat.", "What are my preferences for code style?", "Which libraries have I ruled out?" (not "What
#: did I tell you about the trip?", "Did I tell you I can't make it Friday?" or "When did I update my
#: preferences?").
_ASKS_STANDING = re.compile(
    r"\b(?:rules?|preferences?|instructions?|restrictions?|guidelines?|conventions?|constraints?)\b[^?.!]{0,80}?"
    rf"\bi(?:{_Q}ve|\s+have)?\s+(?:given|gave|give|told|asked|set|said|stated|mentioned)\b"
    r"|\b(?:have|did)\s+i\s+(?:told|asked|said|tell|ask|say)\s+you\s+(?:(?:not|never)\s+to\b|to\b|i\s+(?:"
    rf"(?:don{_Q}?t|do\s+not|never|won{_Q}?t)\s+(?:want|like|use|eat|need)|prefer|always|hate|dislike)\b)"
    rf"|\beverything\s+i\s+(?:can{_Q}?t|won{_Q}?t|don{_Q}?t|do\s+not|cannot)\b"
    rf"|\b(?:what|which)(?:\s+(?:are|is|were|was)|{_Q}s)\s+my\s+(?:rules?|preferences?|instructions?|restrictions?"
    r"|dietary\s+\w+|allergies|dislikes)\b"
    r"|\b(?:list|remind\s+me\s+of|tell\s+me|give\s+me)\s+(?:all\s+)?my\s+(?:rules|preferences|instructions"
    r"|restrictions|allergies|dislikes)\b"
    # What the user has ruled out is a rule too, asked as a list: "Which libraries have I banned?", "What
    # have we ruled out?"; not an event: "Did we reject the quote?", "Have we ruled out a gas leak?",
    # "When did we rule out MongoDB?"
    r"|\b(?:what|which)\b[^?.!]{0,60}?\b(?:(?:have|did)\s+(?:i|we)|(?:i|we)(?:['’]ve|\s+have))\s+"
    r"(?:\w+ly\s+|already\s+|ever\s+)?(?:banned|ban|ruled\s+out|rule\s+out|vetoed|veto|forbidden|forbid"
    r"|forbade|disallowed|disallow|prohibited|said\s+no\s+to|say\s+no\s+to)\b"
    r"(?!\s+(?:the|that|this|these|those|a|an|his|her|their|our|my|its)\b)",
    re.IGNORECASE,
)


def asks_for_standing(query: str) -> bool:
    """Whether ``query`` asks what the user's standing instructions, preferences or restrictions
    are: they answer it as they shape the answer to a request (``QueryPlan.requests``)."""
    return _ASKS_STANDING.search(query) is not None


#: An imperative that opens a later clause ("Callum's minding the dog, write him a note"; "The staging
#: model has several rows per id. Write the version that keeps the newest") asks for work too, unless
#: the query opens as a question or a clause after it asks one ("Sam texted: run the 10k with me. Did
#: I say yes"; "What did I say in the meeting, give or take"). Only the last LATE_CLAUSES are read.
_LATE_IMPERATIVE = re.compile(_LEAD_IN + _IMPERATIVE, re.IGNORECASE)
_CLAUSE = re.compile(r"[.?!;:,—–]\s+")
_ASKING = re.compile(r"\W*(?:what|when|which|who|whom|whose|where|why|how|did|do|does|is|are|was|were|can|could"
                     r"|should|would|will|have|has|had)\b", re.IGNORECASE)
LATE_CLAUSES = 20


def asks_for_work(query: str) -> bool:
    """Whether ``query`` asks for something to be done, made or suggested (see ``_REQUEST``)."""
    return _REQUEST.search(query) is not None or _late_imperative(query)


def _late_imperative(query: str) -> bool:
    if _ASKING.match(query):
        return False
    starts = [m.end() for m in _CLAUSE.finditer(query)][-LATE_CLAUSES:]
    if not starts:  # one clause: _REQUEST read its start
        return False
    for start, end in reversed(list(zip(starts, [*starts[1:], len(query)], strict=True))):
        clause = query[start:end]
        if "?" in clause or _ASKING.match(clause):
            return False  # everything before it leads up to a question
        if _LATE_IMPERATIVE.match(query, start):
            return True
    return False


def is_request(query: str) -> bool:
    """Whether ``query`` asks for something to be done, made or suggested, or asks a question of
    general knowledge (which the answer, not the user's past, is about)."""
    return asks_for_work(query) or _KNOWLEDGE.search(query) is not None


@functools.lru_cache(maxsize=1024)  # read for every candidate beside each neighbour: a few roles, read anew
def not_the_users(role: str | None) -> bool:
    """Whether ``role`` names an assistant, system, tool or model rather than a person."""
    return role is not None and role.strip().casefold() in NOT_THE_USERS


def machine_said(record: MemoryRecord) -> bool:
    """Whether ``record`` is the words of an assistant, system, tool or model: by its role, or by
    the role a named message was given (``message_role``: an assistant named "Sol" is stored as
    "Sol")."""
    given = (record.metadata or {}).get("message_role")
    return not_the_users(record.role) or (isinstance(given, str) and not_the_users(given))


#: A question of what was done ("What steps did Priya take?", "How did we fix the build?"), not of
#: how it is done: the account of it answers, not the procedure.
_DONE = re.compile(r"\b(?:did|was|were|had)\b", re.IGNORECASE)


def how_it_is_done(query: str, procedural: bool) -> bool:
    """Whether a query understood as ``procedural`` asks how something is done (a procedure answers
    it), not what was done."""
    return procedural and _DONE.search(query) is None


def is_standing(record: MemoryRecord) -> bool:
    """Whether ``record`` is the user's own standing instruction or stated preference, in its prose:
    code is not said in passing ("use std::io;" opens a line of Rust, not an instruction)."""
    if machine_said(record) or record.kind in _WRITTEN or not _states(record.content):
        return False
    fenced = "```" in record.content or "~~~" in record.content  # the common case skips the rewrite
    return not fenced or _states(_prose(record))


def _search_states(text: str) -> bool:
    """Whether ``text`` holds a standing statement's words. The pattern is searched in the lowered text
    rather than case-blind: two thirds of the time (11 against 18 us for a chat message)."""
    return _STANDING.search(text.lower()) is not None


#: A retrieval reads some thirty candidates' texts for it, and the next questions many of the same.
_states = TextMemo(_search_states)


def _prose(record: MemoryRecord) -> str:
    return _CODE_BLOCK.sub("\n\n", record.content)


def standing_sentences(record: MemoryRecord) -> list[str]:
    """The sentences of the user's own multi-sentence ``record`` (not a document's passage) that
    state a standing instruction or preference (at most :data:`MAX_STANDING_SENTENCES`); none for a
    memory of one sentence, whose own vector already is that sentence's."""
    if machine_said(record) or record.kind in _WRITTEN:
        return []
    # Counted before the pattern is searched: most memories are one sentence, and splitting costs a
    # sixth of the search (each memory added is read here for its facets).
    sentences = [s for s in split_sentences(_prose(record)) if s.strip()]
    if len(sentences) < 2 or not is_standing(record):
        return []
    return [s for s in sentences if _states(s)][:MAX_STANDING_SENTENCES]


def governing_rules(rules: Sequence[str], records: Sequence[MemoryRecord],
                    cosines: npt.NDArray[np.float64]) -> list[str]:
    """The rules that govern a request, closest first: the standing statements it read (``rules``)
    and the user's procedures, those of them ranked here (``records``), by their similarity to it
    (``cosines``, a statement's closest sentence's). How the user has a thing done governs a request
    to do it as a stated rule does: "Put a quote together for a full rewire at 12 Clive Road" by
    "Quotes: itemise labour and materials separately, valid for 30 days"; in an app's store of
    extracted memories the procedures are most of the rules, and no message states them."""
    at = {record.id: place for place, record in enumerate(records)}
    ranked = {i for i in rules if i in at} | {r.id for r in records if r.kind == "procedure"}
    return sorted(ranked, key=lambda i: (-float(cosines[at[i]]), i))


def closest_rules(rules: Sequence[str], records: Sequence[MemoryRecord]) -> npt.NDArray[np.float64]:
    """Per record, its share of ``RULE_GAIN`` by its place among ``rules`` that are ranked here: 1 for
    the first, ``RULE_SHARE`` for the next, and so to the ``RULE_KEEP``-th."""
    present = {record.id: at for at, record in enumerate(records)}
    out = np.zeros(len(records), dtype=np.float64)
    for place, memory_id in enumerate([i for i in rules if i in present][:RULE_KEEP]):
        out[present[memory_id]] = RULE_SHARE ** place
    return out
