"""The /ui explorer's search in a real headless Chromium (the ``page`` fixture of conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.ext import Embedder
from tests.service import Harness, harness, running


@pytest.fixture
def served(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Harness, str]]:
    h = harness(tmp_path, embedder)
    acme = h.memory.add("Acme prefers NET30 payment terms", user_id="u1", kind="fact",
                        created_at="2024-02-01T09:00:00+00:00")
    note = h.memory.add("Call Acme's finance team before invoicing", user_id="u1", kind="procedure",
                        created_at="2024-02-03T09:00:00+00:00")
    h.memory.link(note.id, acme.id, "about", user_id="u1")
    with running(h.app) as url:
        yield h, url
    h.close()


def test_search_and_open_a_memory(page: object, served: tuple[Harness, str], tmp_path: Path) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    h, url = served
    page.goto(f"{url}/ui")
    expect(page.locator("h1")).to_have_text("Engram memory explorer")
    page.fill("#api-key", h.key("u1"))
    page.click("#key-save")
    expect(page.locator("#key-status")).to_contain_text("key ")
    expect(page.locator("#user")).to_have_value("u1")
    page.click("#tab-search")
    page.fill("#query", "How does Acme pay?")
    page.fill("#as-of", "2024-02-15T10:30:00")
    page.fill("#min-score", "0")
    page.click("#search")
    results = page.locator("#results .memory")
    expect(results.first).to_contain_text("NET30", timeout=20_000)
    expect(results.first.locator(".signals .bar").first).to_be_visible()
    expect(results.first.locator(".reasons li").first).to_be_visible()
    expect(page.locator("#timings")).to_contain_text("ms")
    expect(page.locator("#summary")).to_contain_text("candidates")
    expect(results.first.locator(".rank")).to_have_text("#1")
    compared = page.locator("#compare .compare-row")
    expect(compared).to_have_count(2)
    expect(compared.first).to_contain_text("NET30")
    assert "entity_overlap" in (compared.first.locator(".stack").get_attribute("aria-label") or "")
    expect(page.locator("#query-type")).to_contain_text("type: ")
    expect(page.locator("#strategy")).to_contain_text("strategy: ")
    expect(page.locator("#dropped")).to_contain_text("duplicates (dedup)")
    expect(page.locator("#time-range")).to_have_text("time range: none")
    page.fill("#query", "What did Acme say two weeks ago?")
    page.click("#search")
    expect(page.locator("#time-range")).to_contain_text("time range: 'two weeks ago' = 2024-0")
    expect(results.first.locator(".reasons")).to_contain_text("in time range 'two weeks ago'")
    page.screenshot(path=str(tmp_path / "search.png"), full_page=True)
    results.first.click()
    detail = page.locator("#detail")
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("Links")
    expect(detail).to_contain_text("about")
    assert page.evaluate("sessionStorage.getItem('engram.apiKey')").startswith("egk_")


def test_wrong_key_shows_the_error(page: object, served: tuple[Harness, str]) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    _, url = served
    page.goto(f"{url}/ui")
    page.fill("#api-key", "egk_wrong_key")
    page.click("#key-save")
    expect(page.locator("#error")).to_contain_text("401")


def test_docs_renders_offline_under_the_csp(page: object, served: tuple[Harness, str], tmp_path: Path) -> None:
    """Swagger UI from the installed package lists the operations, with no request leaving the
    origin and nothing refused by the Content-Security-Policy."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    _, url = served
    violations: list[str] = []
    outside: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    page.on("request", lambda req: None if req.url.startswith(url) else outside.append(req.url))
    page.goto(f"{url}/docs")
    expect(page.locator(".opblock-summary-path", has_text="/v1/retrieve").first).to_be_visible(timeout=20_000)
    expect(page.locator(".btn.authorize")).to_be_visible()
    page.locator(".opblock-summary-path", has_text="/v1/me").first.click()
    expect(page.locator(".responses-table").first).to_contain_text("401")
    page.screenshot(path=str(tmp_path / "docs.png"), full_page=True)
    assert outside == [] and violations == [], (outside, violations)
