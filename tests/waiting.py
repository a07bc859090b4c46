"""Waiting in tests for what a background thread does (a save, a build)."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(check: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Whether ``check()`` held within ``timeout`` seconds, looked at every 20 ms."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
