"""Word-level text helpers shared by the keyword index, query understanding and evaluation."""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "keyword_terms", "words"]

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "he'd", "he'll", "he's", "her", "here", "here's", "hers", "herself", "him", "himself", "his", "how", "how's", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "let's", "me", "more", "most", "mustn't", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "shan't", "she", "she'd", "she'll", "she's", "should", "shouldn't", "so", "some", "such", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "they'd", "they'll", "they're", "they've", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "wasn't", "we", "we'd", "we'll", "we're", "we've", "were", "weren't", "what", "what's", "when", "when's", "where", "where's", "which", "while", "who", "who's", "whom", "why", "why's", "with", "won't", "would", "wouldn't", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves", "s", "t", "d", "ll", "m", "re", "ve", "just", "also", "will", "shall", "may", "might", "must", "tell", "know"]
)


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
