"""The ``page`` fixture: a real headless Chromium (Debian's, driven by Playwright; never downloaded).

A missing browser is a skip on a developer's machine and a failure in CI (CI=true), where
scripts/install-browser.sh must have put it in place.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

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
