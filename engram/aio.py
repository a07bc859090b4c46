"""``AsyncMemory``: every method of ``MemoryAPI`` (a ``Memory``'s or an ``EngramClient``'s) as a coroutine.

There is one implementation, the synchronous one; each awaited call runs it in a worker thread
(``asyncio.to_thread``), so the event loop keeps serving while a retrieval embeds, queries SQLite
or waits on PostgreSQL or HTTP. No method is written twice: an async twin of each method would
be a second copy of every signature, docstring and rule to keep in step (Mem0's ``main.py`` holds
both twins in 3,800 lines). The price is a thread per call in flight, which the stores already
allow: the HTTP service calls one ``Memory`` from many threads the same way.

Each method is an :class:`Awaited` descriptor made from the Protocol's own method, so a type checker
reads the real parameters and return type (``await memory.retrieve(...)`` is a ``Retrieval``) from
``MemoryAPI`` itself; only ``add``, whose result type depends on its argument, spells out its two
overloads, and ``tests/test_aio.py`` checks they are the Protocol's.

>>> async with AsyncMemory("demo.db") as memory:                         # doctest: +SKIP
...     await memory.add([{"role": "user", "content": "I love sci-fi"}], user_id="alice")
...     (await memory.search("Which genre do I love?", user_id="alice"))["results"]
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import os
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar, Unpack, cast, overload

from engram.api import MemoryAPI
from engram.conversation import Messages
from engram.memory import Memory
from engram.model import MemoryFields, MemoryRecord

__all__ = ["AsyncEngramClient", "AsyncMemory", "Awaited"]

P = ParamSpec("P")
R = TypeVar("R")

# The classes read as instances: ``_API.retrieve`` is, at run time, the Protocol's function (its name and
# docstring), and to a type checker a bound method, whose parameters ``Awaited`` takes as its own.
_API = cast(MemoryAPI, MemoryAPI)
_MEMORY = cast(Memory, Memory)


class Awaited(Generic[P, R]):
    """``Awaited(_API.retrieve)`` on a class: on an instance, that method of ``instance.sync`` as a
    coroutine function with the same parameters, run in a worker thread."""

    def __init__(self, method: Callable[P, R]) -> None:
        self.name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method

    def __set_name__(self, owner: type[Any], name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} awaits {self.name}: the names must agree")

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Awaited[P, R]: ...

    @overload
    def __get__(self, instance: AsyncMemory, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(
        self, instance: AsyncMemory | None, owner: type[Any]
    ) -> Awaited[P, R] | Callable[P, Coroutine[Any, Any, R]]:
        if instance is None:
            return self
        method: Callable[P, R] = getattr(instance.sync, self.name)

        @functools.wraps(method)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call


class AsyncMemory:
    """``await memory.<method>(...)`` for every method of ``MemoryAPI``, and ``ingest``.

    ``AsyncMemory(path_or_url, **options)`` opens a ``Memory`` as ``Memory(path_or_url, **options)``
    would; ``AsyncMemory(memory=...)`` wraps one already open (a ``Memory`` or an ``EngramClient``).
    ``memory.sync`` is the wrapped object, for what only a ``Memory`` has (tuning, the ontology):
    ``await asyncio.to_thread(memory.sync.tune, ...)``.
    """

    def __init__(self, path_or_url: str | os.PathLike[str] | None = None, *, memory: MemoryAPI | None = None,
                 **options: Any) -> None:
        self.sync: MemoryAPI = memory if memory is not None else Memory(path_or_url, **options)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    close = Awaited(_API.close)

    # -- writes
    @overload
    async def add(
        self, content: str, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]
    ) -> MemoryRecord: ...

    @overload
    async def add(
        self, content: Messages, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]
    ) -> builtins.list[MemoryRecord]: ...

    async def add(
        self, content: str | Messages, *, user_id: str, kind: str = "message", **fields: Unpack[MemoryFields]
    ) -> MemoryRecord | builtins.list[MemoryRecord]:
        """``MemoryAPI.add``: a text is one memory; a chat message or a list of them, one memory each."""
        add: Callable[..., MemoryRecord | builtins.list[MemoryRecord]] = self.sync.add
        return await asyncio.to_thread(add, content, user_id=user_id, kind=kind, **fields)

    add_many = Awaited(_API.add_many)
    update = Awaited(_API.update)
    delete = Awaited(_API.delete)
    forget_user = Awaited(_API.forget_user)
    delete_all = Awaited(_API.delete_all)
    reset = Awaited(_API.reset)
    link = Awaited(_API.link)
    add_entity = Awaited(_API.add_entity)
    feedback = Awaited(_API.feedback)
    #: ``Memory.ingest``'s parameters; an ``EngramClient`` takes the paths, user, tags, topic, note and force.
    ingest = Awaited(_MEMORY.ingest)

    # -- reads
    get = Awaited(_API.get)
    list = Awaited(_API.list)
    links = Awaited(_API.links)
    history = Awaited(_API.history)
    stats = Awaited(_API.stats)
    retrieve = Awaited(_API.retrieve)
    search = Awaited(_API.search)
    get_all = Awaited(_API.get_all)
    recall = Awaited(_API.recall)
    recall_temporal = Awaited(_API.recall_temporal)
    recall_by_kind = Awaited(_API.recall_by_kind)
    recall_linked = Awaited(_API.recall_linked)
    get_document = Awaited(_API.get_document)
    document_versions = Awaited(_API.document_versions)


class AsyncEngramClient(AsyncMemory):
    """An ``EngramClient`` whose methods are coroutines: ``EngramClient(base_url, api_key, **options)``."""

    def __init__(self, base_url: str, api_key: str, **options: Any) -> None:
        from engram.client import EngramClient

        super().__init__(memory=EngramClient(base_url, api_key, **options))
