"""Worker threads shared by everything in a process: one pool per name, made on first use.

A forked child inherits the parent's pool objects but not their threads, and such a pool never
starts another one: work handed to it would wait forever. Each process therefore makes its own.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["process_pool"]

_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_LOCK = threading.Lock()


def process_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """This process's pool ``name`` (its threads' name prefix), of ``workers`` threads."""
    with _LOCK:
        held = _POOLS.get(name)
        if held is None or held[0] != os.getpid():
            held = _POOLS[name] = (os.getpid(), ThreadPoolExecutor(workers, thread_name_prefix=name))
        return held[1]
