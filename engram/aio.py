"""``AsyncMemory``: every method of a ``Memory`` (or of an ``EngramClient``) as a coroutine.

There is one implementation, the synchronous one; each awaited call runs it in a worker thread
(``asyncio.to_thread``), so the event loop keeps serving while a retrieval embeds, queries SQLite
or waits on PostgreSQL or HTTP. No method is written twice: an async twin of each method would
be a second copy of every signature, docstring and rule to keep in step (Mem0's ``main.py`` holds
both twins in 3,800 lines). The price is a thread per call in flight, which the stores already
allow: the HTTP service calls one ``Memory`` from many threads the same way.

>>> async with AsyncMemory("demo.db") as memory:                         # doctest: +SKIP
...     await memory.add([{"role": "user", "content": "I love sci-fi"}], user_id="alice")
...     (await memory.search("Which genre do I love?", user_id="alice"))["results"]
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from engram.api import MemoryAPI

__all__ = ["AsyncEngramClient", "AsyncMemory"]


class AsyncMemory:
    """``await memory.<method>(...)`` for every public method of the wrapped ``MemoryAPI``.

    ``AsyncMemory(path_or_url, **options)`` opens a ``Memory`` as ``Memory(path_or_url, **options)``
    would; ``AsyncMemory(memory=...)`` wraps one already open (a ``Memory`` or an ``EngramClient``).
    Attributes that are not methods (``config``, ``store``) are the wrapped object's own.
    """

    def __init__(self, path_or_url: str | os.PathLike[str] | None = None, *, memory: MemoryAPI | None = None,
                 **options: Any) -> None:
        if memory is None:
            from engram.memory import Memory

            memory = Memory(path_or_url, **options)
        self.sync: MemoryAPI = memory

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.sync, name)
        if name.startswith("_") or not callable(value):
            return value
        return _in_thread(value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *(n for n in dir(self.sync) if not n.startswith("_"))})

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _in_thread(method: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(method, *args, **kwargs)

    return call


class AsyncEngramClient(AsyncMemory):
    """An ``EngramClient`` whose methods are coroutines: ``EngramClient(base_url, api_key, **options)``."""

    def __init__(self, base_url: str, api_key: str, **options: Any) -> None:
        from engram.client import EngramClient

        super().__init__(memory=EngramClient(base_url, api_key, **options))
