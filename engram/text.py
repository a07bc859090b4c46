"""Word-level text helpers shared by the keyword index, query understanding and evaluation.

The keyword index of every backend is built from :func:`index_terms` and searched with
:func:`query_terms`, both computed here in Python: English Snowball stems, stop words dropped, so
"ordered" finds "order" and every backend indexes and scores exactly the same terms.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import Stemmer

__all__ = [
    "ASIDE_ROLES",
    "ROLE_WORDS",
    "STOPWORDS",
    "TIME_UNITS",
    "TIME_WORDS",
    "KeywordPlan",
    "bm25",
    "bm25_idf",
    "index_terms",
    "keyword_terms",
    "memory_terms",
    "plan_keywords",
    "query_terms",
    "speaker_name",
    "words",
]

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "he'd", "he'll", "he's", "her", "here", "here's", "hers", "herself", "him", "himself", "his", "how", "how's", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "let's", "me", "more", "most", "mustn't", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "shan't", "she", "she'd", "she'll", "she's", "should", "shouldn't", "so", "some", "such", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "they'd", "they'll", "they're", "they've", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "wasn't", "we", "we'd", "we'll", "we're", "we've", "were", "weren't", "what", "what's", "when", "when's", "where", "where's", "which", "while", "who", "who's", "whom", "why", "why's", "with", "won't", "would", "wouldn't", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves", "s", "t", "d", "ll", "m", "re", "ve", "just", "also", "will", "shall", "may", "might", "must", "tell", "know"]
)


#: Relative time words: in a query they scope time ("last week", "recently"), which the time
#: signal handles; as keywords they would match any memory that happens to say "last" or "recently".
TIME_WORDS = frozenset(
    ["ago", "last", "next", "past", "previous", "recent", "recently", "lately", "earlier", "later", "today", "tonight", "yesterday", "tomorrow", "since"]
)

#: Units of time: part of a time scope after a relative word ("last week", "this morning", "a few
#: days ago"), but what is asked about elsewhere ("How many hours did I drive?" is answered by "I
#: drove for five hours"), so they are dropped only inside a scope.
TIME_UNITS = frozenset(
    ["day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years", "hour", "hours", "minute", "minutes", "morning", "evening", "afternoon", "night"]
)
_NUMBER_WORDS = frozenset(["a", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "several", "few", "couple"])
_SCOPE_BEFORE_UNIT = frozenset(["last", "next", "past", "previous", "this", "coming", "few", "couple", "recent", "every", "each"])

#: Words that frame a question ("How many ...?", "How much ...?", "... in total", "... combined")
#: and say nothing about what is asked for: dropped from a query's keywords, as stop words are
#: (memories still index them). "total" only after "in": "the total cost" may be what was said.
QUESTION_WORDS = frozenset(["many", "much", "combined", "altogether"])

#: Roles that name a part in a conversation, not a person.
ROLE_WORDS = frozenset(["user", "assistant", "system", "tool", "ai", "human", "bot", "agent", "function", "developer", "model"])
#: Of those, the roles of the user's own words.
USER_ROLES = frozenset(["user", "human"])
#: Of those, the roles of turns that take no part in a conversation and do not end it: a notice, a
#: tool's output (they are no turn of it either way).
ASIDE_ROLES = frozenset(["system", "tool", "function", "developer"])

# Letters and digits only: "_" and punctuation separate terms on every backend's tokenizer too.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
_MAX_TERM_CHARS = 64
_stemmers = threading.local()  # PyStemmer objects keep a cache and are not safe across threads

# BM25 constants (Robertson's usual ones, as FTS5 and Lucene use).
K1 = 1.2
B = 0.75


def _stem(tokens: list[str]) -> list[str]:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return list(stemmer.stemWords(tokens))


def speaker_name(role: str | None) -> str | None:
    """The role when it names a person ("Priya"), None for conversational roles ("user")."""
    if not role or not role.strip() or role.strip().casefold() in ROLE_WORDS:
        return None
    return role.strip()


def index_terms(text: str, role: str | None = None) -> list[str]:
    """The terms a memory is indexed under, in order, repeats kept (they are term frequencies).

    Stop words are dropped and words stemmed; a speaker's name (a role that names a person) is
    indexed too, so "What did Priya say?" finds what Priya said in her own words.
    """
    name = speaker_name(role)
    source = f"{name} {text}" if name else text
    tokens = [t for t in _TERM.findall(source.casefold()) if t not in STOPWORDS and len(t) <= _MAX_TERM_CHARS]
    return _stem(tokens)


def memory_terms(content: str, role: str | None = None, *labels: str | None) -> list[str]:
    """The terms a stored memory is indexed under: :func:`index_terms` of its content, then the
    words of its structured fields (a fact's subject, predicate and object, a procedure's trigger
    and action) that the content does not already hold, once each.

    People ask with the predicate's words: "When is Linda's birthday?" of "Mum (Linda) turns 70 on
    December 12." (predicate "birthday"), "What is Dana's diet?" of "Dana is vegetarian" (of 33
    facts in the everyday scenario set, 15 have predicate words their text lacks). Words the
    content holds are not counted again, so a label never inflates a term's frequency.
    """
    terms = index_terms(content, role)
    given = " ".join(label.replace("_", " ") for label in labels if label)
    if given:
        have = set(terms)
        terms += [t for t in dict.fromkeys(index_terms(given)) if t not in have]
    return terms


def query_terms(text: str, *, limit: int = 32) -> list[str]:
    """Distinct stemmed terms of a query: stop words, relative time words and question framing
    ("how many") dropped.

    Falls back to every word when nothing is left ("What happened last week?" still searches). The
    limit keeps a pasted paragraph from turning into a query that scans the whole index.
    """
    tokens = [t for t in _TERM.findall(text.casefold()) if len(t) <= _MAX_TERM_CHARS]
    content = [t for i, t in enumerate(tokens) if t not in STOPWORDS and not _framing(tokens, i)]
    chosen = content or [t for t in tokens if t not in STOPWORDS] or tokens
    return list(dict.fromkeys(_stem(chosen)))[:limit]


def _framing(tokens: list[str], i: int) -> bool:
    """Whether the query's ``i``-th word scopes time or frames the question rather than naming
    what is asked about."""
    word = tokens[i]
    if word in TIME_WORDS or word in QUESTION_WORDS:
        return True
    before = tokens[i - 1] if i else ""
    if word in TIME_UNITS:
        after = tokens[i + 1 : i + 3]
        counted = before.isdigit() or before in _NUMBER_WORDS
        if counted and i > 1:
            before = tokens[i - 2]  # "the past three months"
        # "What day of the week ...?" asks for a day by name: the memory says "Tuesday".
        of_unit = i > 2 and tokens[i - 2 : i] == ["of", "the"] and tokens[i - 3] in TIME_UNITS
        return before in _SCOPE_BEFORE_UNIT or after[:1] == ["ago"] or after == ["of", "the"] or of_unit
    if (word.isdigit() or word in _NUMBER_WORDS) and i + 1 < len(tokens) and tokens[i + 1] in TIME_UNITS:
        return _framing(tokens, i + 1)  # "3 days ago", "the past three months"
    if word == "number" and before and before not in STOPWORDS and before not in _NUMBER_WORDS:
        # "What's my policy number?": the number is what is asked for, in digits no word matches;
        # "number" alone matches "bib number 4471". Not "the number of ...", a count.
        return tokens[i + 1 : i + 2] != ["of"]
    return word == "total" and before == "in"


def bm25_idf(docs: float, df: float) -> float:
    """Lucene's BM25 IDF, ``log(1 + (N - df + 0.5) / (df + 0.5))``: never negative, so a word that
    half of a small memory holds still counts a little instead of pulling scores down."""
    return math.log(1.0 + (max(docs, df) - df + 0.5) / (df + 0.5))


def bm25(tf: Iterable[tuple[float, float]], length: float, avg_length: float) -> float:
    """Okapi BM25 of one document: ``tf`` pairs each matched term's frequency with its IDF."""
    norm = K1 * (1.0 - B + B * length / max(avg_length, 1e-9))
    return sum(idf * f * (K1 + 1.0) / (f + norm) for f, idf in tf)


@dataclass(frozen=True, slots=True)
class KeywordPlan:
    """What a keyword search scores, the same on every backend: the ``terms`` to match (rarest first,
    while their postings stay within the budget), each term's IDF over the user's memories, and the
    ``ideal`` score a query's scores are divided by."""

    terms: list[str]
    idf: dict[str, float]
    ideal: float
    postings: int


def plan_keywords(terms: Sequence[str], df: Mapping[str, int], docs: float, budget: int) -> KeywordPlan | None:
    """None when no term occurs in the user's memories. Words none of them hold count in the ideal
    too: a memory matching one ordinary word of a query about something never stored is a weak match."""
    present = sorted((t for t in terms if df.get(t, 0) > 0), key=lambda t: (df[t], t))
    if not present:
        return None
    chosen: list[str] = []
    postings = 0
    for term in present:  # rare terms carry almost all of BM25's weight
        if chosen and postings + df[term] > budget:
            break
        chosen.append(term)
        postings += df[term]
    idf = {t: bm25_idf(docs, df[t]) for t in chosen}
    return KeywordPlan(chosen, idf, sum(bm25_idf(docs, df.get(t, 0)) for t in terms), postings)


def words(text: str) -> list[str]:
    """Lowercased word tokens (Unicode letters and digits)."""
    return _WORD.findall(text.lower())


def keyword_terms(text: str, *, limit: int = 32) -> list[str]:
    """Distinct content words in order, stopwords dropped; falls back to all words if none remain.

    The limit keeps a pasted paragraph from turning into a query that scans the whole index.
    """
    all_words = words(text)
    terms: list[str] = []
    for word in all_words:
        if word not in STOPWORDS and word not in terms:
            terms.append(word)
    if not terms:
        terms = list(dict.fromkeys(all_words))
    return terms[:limit]
