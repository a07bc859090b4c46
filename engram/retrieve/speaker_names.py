"""A short turn's vector is mostly its speaker's name.

A message a person said is embedded behind their name ("Kofi: Poor lad", engram.ingest.embed), so
that "What did Priya think of the trial?" finds her verdict, which never names her. In a short
turn the name is most of what the vector says: "When did Kofi injure himself playing football?"
was closer to "Kofi: Poor lad" (cosine 0.58) and "Kofi: What leg thing" than to "Kofi: Oh that.
Went over on my ankle at five-a-side last Wednesday" (0.49), and every short turn of his ranked
above the answer. Who said a turn is already counted once, by entity overlap (a speaker the
query names counts fully in their own turns).

So when the query names a speaker, the similarity of that speaker's turns of at most
:data:`SHORT_TURN` characters is read with the name taken out of both vectors: each is projected
off the name's own embedding (as a stored text for the turn, as a query for the query) and
compared on what is left. A longer turn keeps
its similarity as it is: there the name is a small part of the vector, and taking it out of every
turn cost LoCoMo dev recall@10 0.816 -> 0.794 (half of it, 0.810).

Multi-speaker chats written blind to the code (three friends' and flatmates' chats over months,
short turns): recall@5/10 0.527/0.645 -> 0.618/0.718; texting with no assistant 0.644/0.728 ->
0.652/0.745; a book club 0.685/0.821 -> 0.694/0.809; LoCoMo dev 0.724/0.816/0.871 ->
0.732/0.813/0.876 at 5/10/25; the scenario set's hit@1 0.72 -> 0.74; chats with an assistant
(no speaker names) unchanged. A limit of 40 characters gained less (0.551/0.703 on the first);
80 was chosen on that file and LoCoMo, so that file no longer measures it blind.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor

import numpy as np
import numpy.typing as npt

from engram.errors import DeadlineExceeded, EmbedderError
from engram.ext import Embedder
from engram.ingest.embed import embed_texts
from engram.model import MemoryRecord
from engram.retrieve.budget import until
from engram.text import speaker_name

__all__ = ["DISTINCT", "LEFT_OVER", "SHORT_TURN", "NameVectors", "without_speakers"]

#: The longest turn (in characters) whose similarity is read with its speaker's name taken out.
SHORT_TURN = 80
#: A vector with less than this share of its length left once the name is out says nothing else.
LEFT_OVER = 0.1
#: A name's direction counts when it is this share of the strongest's (SVD): "Kofi" and "Kofi A."
#: are one direction, not two, the second a chance one.
DISTINCT = 0.1

Column = npt.NDArray[np.float64]
Pair = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]  # as a stored text, as a query
NamesOf = Callable[[Sequence[str]], Mapping[str, Pair]]


class NameVectors:
    """Each speaker name's unit vectors as the embedder reads it alone, as a stored text and as a
    query (an asymmetric model reads the two apart), kept for the scope that asked (names recur
    from one question to the next): the most recent :attr:`size` of them.

    Kept per scope, never shared: how fast a ranking is must not tell one user whether another
    named the same person lately (as ``engram.ingest.embed`` never reuses a vector across users).
    A write to a user drops what was kept for any scope holding them (:meth:`forget`), as every
    other cache of theirs: a forgotten user's speakers' names are kept nowhere."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[tuple[str, ...], str, str], Pair] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, scope: tuple[str, ...], embedder: Embedder, executor: Executor, deadline: float | None,
           names: Iterable[str]) -> dict[str, Pair]:
        """``names``' vectors for ``scope`` (the users a retrieval reads), those not kept embedded on
        ``executor`` and waited for until ``deadline``; a name the embedder failed or was late for
        has none (its speaker's turns keep their similarity)."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, Pair] = {}
        with self._lock:
            for name in wanted:
                if (pair := self._kept.get((scope, embedder.model_id, name))) is not None:
                    self._kept.move_to_end((scope, embedder.model_id, name))
                    found[name] = pair
        missing = [name for name in wanted if name not in found]
        if not missing:
            return found
        try:
            stored, asked = until(executor.submit(lambda: (embed_texts(embedder, missing),
                                                            embed_texts(embedder, missing, as_query=True))),
                                  deadline, "embedding the names of speakers")
        except (EmbedderError, DeadlineExceeded):
            return found
        with self._lock:
            for name, passage, query in zip(missing, stored, asked, strict=True):
                found[name] = (_unit(passage), _unit(query))
                self._kept[(scope, embedder.model_id, name)] = found[name]
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return found


    def forget(self, user_id: str | None = None) -> None:
        """Drop what was kept for every scope holding ``user_id`` (every scope when None)."""
        with self._lock:
            for key in [key for key in self._kept if user_id is None or user_id in key[0]]:
                del self._kept[key]


def without_speakers(cosines: Column, records: Sequence[MemoryRecord], said: Mapping[str, str],
                     voices: frozenset[str], vectors: Mapping[str, object],
                     query_vec: npt.NDArray[np.float32], names_of: NamesOf) -> Column:
    """``cosines`` with those of the short turns said by a speaker in ``voices`` read with the
    speakers' names (``names_of``) projected out of the query's vector and theirs (see the module),
    between 0 and 1; a turn that is nothing but the name is at 0."""
    short = [at for at, record in enumerate(records)
             if said.get(record.id) in voices and len(record.content) <= SHORT_TURN
             and speaker_name(record.role) and vectors.get(record.id) is not None]
    if not short:
        return cosines
    names = names_of([str(speaker_name(records[at].role)) for at in short])
    query = np.asarray(query_vec, dtype=np.float64).ravel()
    usable = [at for at in short if speaker_name(records[at].role) in names
              and np.asarray(vectors[records[at].id]).size == query.size]
    if not usable:
        return cosines
    # One direction per name however it is cased ("Kofi", "KOFI"), two speakers named both taken out.
    chosen = {name.casefold(): names[name] for name in (str(speaker_name(records[at].role)) for at in usable)}
    stored, asked = (_basis([pair[side] for pair in chosen.values()]) for side in (0, 1))
    rest_of_query = query - asked @ (asked.T @ query)
    if np.linalg.norm(rest_of_query) < LEFT_OVER * np.linalg.norm(query):
        return cosines  # the query is hardly more than the name ("Kofi?")
    rest_of_query /= np.linalg.norm(rest_of_query)
    out = np.array(cosines, dtype=np.float64)
    for at in usable:
        turn = np.asarray(vectors[records[at].id], dtype=np.float64).ravel()
        rest = turn - stored @ (stored.T @ turn)
        size = float(np.linalg.norm(rest))
        out[at] = 0.0 if size < LEFT_OVER * float(np.linalg.norm(turn)) else float(rest_of_query @ rest) / size
    return np.clip(out, 0.0, 1.0)


def _unit(vector: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    as_float = np.asarray(vector, dtype=np.float64).ravel()
    return as_float / max(float(np.linalg.norm(as_float)), 1e-12)


def _basis(directions: Sequence[npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    """An orthonormal basis of ``directions`` (as columns), without the directions two nearly equal
    names would add by chance."""
    spans, sizes, _ = np.linalg.svd(np.stack(directions).T, full_matrices=False)
    return np.asarray(spans[:, sizes > DISTINCT * sizes[0]], dtype=np.float64)
