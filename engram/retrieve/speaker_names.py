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
off the name's own embedding (``name_vectors``) and compared on what is left. A longer turn keeps
its similarity as it is: there the name is a small part of the vector, and taking it out of every
turn cost LoCoMo dev recall@10 0.816 -> 0.794 (half of it, 0.810).

Multi-speaker chats written blind to the code (three friends' and flatmates' chats over months,
short turns): recall@5/10 0.527/0.645 -> 0.618/0.718; texting with no assistant 0.644/0.728 ->
0.652/0.745; a book club 0.685/0.821 -> 0.694/0.804; LoCoMo dev 0.724/0.816/0.871 ->
0.732/0.813/0.876 at 5/10/25; the scenario set's hit@1 0.72 -> 0.74; chats with an assistant
(no speaker names) unchanged. A limit of 40 characters gained less (0.551/0.703 on the first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from engram.errors import EmbedderError
from engram.ext import Embedder
from engram.ingest.embed import embed_texts
from engram.model import MemoryRecord
from engram.text import speaker_name

__all__ = ["SHORT_TURN", "NameVectors", "without_speakers"]

#: The longest turn (in characters) whose similarity is read with its speaker's name taken out.
SHORT_TURN = 80

Column = npt.NDArray[np.float64]
NamesOf = Callable[[Sequence[str]], Mapping[str, npt.NDArray[np.float64]]]


class NameVectors:
    """Each speaker name's unit vector as the embedder reads it alone, kept for the process (names
    recur from one question to the next): the most recent :attr:`size` names per embedder."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[str, str], npt.NDArray[np.float64]] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, embedder: Embedder, names: Iterable[str]) -> dict[str, npt.NDArray[np.float64]]:
        """``names``' vectors; none when the embedder fails (the similarities are then read as they are)."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, npt.NDArray[np.float64]] = {}
        with self._lock:
            for name in wanted:
                if (vector := self._kept.get((embedder.model_id, name))) is not None:
                    self._kept.move_to_end((embedder.model_id, name))
                    found[name] = vector
        missing = [name for name in wanted if name not in found]
        if missing:
            try:
                fresh = np.asarray(embed_texts(embedder, missing), dtype=np.float64)
            except EmbedderError:
                return {}
            with self._lock:
                for name, vector in zip(missing, fresh, strict=True):
                    found[name] = vector / max(float(np.linalg.norm(vector)), 1e-12)
                    self._kept[(embedder.model_id, name)] = found[name]
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        return found


def without_speakers(cosines: Column, records: Sequence[MemoryRecord], said: Mapping[str, str],
                     voices: frozenset[str], vectors: Mapping[str, object],
                     query_vec: npt.NDArray[np.float32], names_of: NamesOf) -> Column:
    """``cosines`` with those of the short turns said by a speaker in ``voices`` read with the
    speakers' names (``names_of``) projected out of the query's vector and theirs (see the module)."""
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
    # An orthonormal basis of the names' directions, so two speakers named are both taken out.
    basis, _ = np.linalg.qr(np.stack([names[name] for name in dict.fromkeys(
        str(speaker_name(records[at].role)) for at in usable)]).T)

    def off(vector: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        rest = vector - basis @ (basis.T @ vector)
        return rest / max(float(np.linalg.norm(rest)), 1e-12)

    rest_of_query = off(query)
    out = np.array(cosines, dtype=np.float64)
    for at in usable:
        out[at] = float(rest_of_query @ off(np.asarray(vectors[records[at].id], dtype=np.float64).ravel()))
    return out
