"""Token counts for the budget a prompt section must fit: a real tokenizer, not characters / 4.

Characters / 4 is right for plain English and wrong elsewhere: code, numbers, names and most other
scripts cost far more tokens per character ("東京都庁" is 4 tokens, not 1). The count here is the
default embedder's WordPiece tokenizer (shipped beside it, read offline), which is within a few
percent of the common LLM tokenizers on English and counts other text one token per character or
piece, as they do. Without the ``tokenizers`` package the estimate falls back to characters / 4.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engram.text_memo import TextMemo

__all__ = ["count_many", "count_tokens", "cut_to_tokens"]

_TOKENIZER = Path(__file__).parent / "embedders" / "data" / "all-MiniLM-L6-v2.tokenizer.json"
_lock = threading.Lock()
_loaded: list[Any] = []


def _tokenizer() -> Any | None:
    if not _loaded:
        with _lock:
            if not _loaded:
                try:
                    from tokenizers import Tokenizer

                    made: Any = Tokenizer.from_file(str(_TOKENIZER))
                    made.no_truncation()
                    made.no_padding()
                except Exception:  # no package, or a file it cannot read (tokenizers raises plain Exception)
                    made = None
                _loaded.append(made)
    return _loaded[0]


def count_tokens(text: str) -> int:
    """The tokens ``text`` costs in a prompt (no special tokens)."""
    if not text:
        return 0
    tokenizer = _tokenizer()
    if tokenizer is None:
        return math.ceil(len(text) / 4)
    return _counted(text)


def _count(text: str) -> int:
    tokenizer = _tokenizer()
    assert tokenizer is not None  # only called once count_tokens found one
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


#: A retrieval counts the tokens of the memories it returns: ~45 us each for a chat message, and
#: the next questions return many of the same.
_counted = TextMemo(_count)


#: From this many texts on, one parallel batch beats a call per text (a retrieval's few are faster alone).
BATCH_FROM = 64


def count_many(texts: Sequence[str]) -> list[int]:
    """:func:`count_tokens` of each text."""
    tokenizer = _tokenizer()
    if tokenizer is None or len(texts) < BATCH_FROM:
        return [count_tokens(t) for t in texts]
    return [len(e.ids) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def cut_to_tokens(text: str, tokens: int) -> str:
    """The longest head of ``text`` that costs at most ``tokens``, cut between tokens (a text of
    whitespace alone costs none, so it is kept whole even for 0)."""
    if tokens < 0:
        return ""
    tokenizer = _tokenizer()
    if tokenizer is None:
        return text[: tokens * 4]
    encoding = tokenizer.encode(text, add_special_tokens=False)
    if len(encoding.ids) <= tokens:
        return text
    return text[: encoding.offsets[tokens][0]]
