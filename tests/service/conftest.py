"""The ``page`` fixture: a real headless Chromium (Debian's, driven by Playwright; never downloaded);
``h`` and ``client``: the service over a fresh store, and in process with a key for u1 and u2.

A missing browser is a skip on a developer's machine and a failure in CI (CI=true), where
scripts/install-browser.sh must have put it in place.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram.ext import Embedder
from tests.service import Harness, harness

CHROMIUM = os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (run scripts/install-browser.sh)")
    pytest.skip(reason)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[object]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        _missing(f"no chromium at {CHROMIUM}")
    profile = tmp_path / "profile"
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        try:
            yield context.new_page()
        finally:
            context.close()


@pytest.fixture
def h(tmp_path: Path, embedder: Embedder) -> Iterator[Harness]:
    """The service over a fresh SQLite store with the real embedder."""
    made = harness(tmp_path, embedder)
    yield made
    made.close()


@pytest.fixture
def client(h: Harness) -> Iterator[TestClient]:
    """``h``'s app in process, with a key for users u1 and u2."""
    with TestClient(h.app, raise_server_exceptions=False) as c:
        c.headers["Authorization"] = f"Bearer {h.key('u1', 'u2')}"
        yield c
