"""The /ui explorer over a store of a few thousand memories, in a real headless Chromium: browse,
filter, page, the timeline, open, edit, delete (confirmed), a fact's history, add, switching users and
what a search did (the understood time range, query type and strategy, each stage's drops).

Every test checks what a reader sees (the element is visible and holds the right text) and saves a
screenshot into its own tmp_path, the test run's artifacts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engram.embedders import named_embedder
from engram.errors import MemoryNotFound
from tests.service import Harness, harness, running

try:
    from playwright.sync_api import Page, expect
except ImportError:  # conftest's page fixture then fails in CI and skips elsewhere, before any test body
    Page = Any  # type: ignore[misc,assignment]
    expect = None  # type: ignore[assignment]

NOTES = 3000
BASE = datetime(2024, 1, 1, tzinfo=UTC)
KINDS = ("message", "message", "message", "fact", "episode", "procedure", "summary")
LAST_FACT = max(i for i in range(NOTES) if KINDS[i % len(KINDS)] == "fact")


def note(i: int) -> dict[str, Any]:
    """The i-th memory of alice: every 90 minutes from BASE, a kind in turn, every 10th tagged billing."""
    return {
        "user_id": "alice", "content": f"Note {i:04d} about the Acme account", "kind": KINDS[i % len(KINDS)],
        "created_at": (BASE + timedelta(minutes=90 * i)).isoformat(), "session_id": f"s{i // 100}",
        "tags": ["billing"] if i % 10 == 0 else [],
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Harness, str, dict[str, str]]]:
    embedder = named_embedder("hash-64")
    assert embedder is not None
    h = harness(tmp_path_factory.mktemp("explorer"), embedder)
    records = h.memory.add_many([note(i) for i in range(NOTES)])
    old = h.memory.add("Acme pays NET30", user_id="alice", kind="fact", subject="acme", predicate="terms",
                       object="NET30", created_at="2023-12-01T09:00:00+00:00")
    new = h.memory.add("Acme pays NET45", user_id="alice", kind="fact", subject="acme", predicate="terms",
                       object="NET45", created_at="2023-12-02T09:00:00+00:00")
    h.memory.link(records[-1].id, new.id, "about", user_id="alice")
    for i in range(3):
        h.memory.add(f"Bob's memory {i}", user_id="bob", created_at=f"2024-05-0{i + 1}T09:00:00+00:00")
    ids = {"old": old.id, "new": new.id, "last": records[-1].id, "second": records[-2].id}
    with running(h.app) as url:
        yield h, url, ids
    h.close()


def login(page: Page, h: Harness, url: str) -> None:
    page.goto(f"{url}/ui")
    page.fill("#api-key", h.key("alice", "bob"))
    page.click("#key-save")
    expect(page.locator("#user")).to_have_value("alice")
    expect(page.locator("#memory-rows tr").first).to_be_visible(timeout=20_000)


def show(page: Page, *, kind: str = "", tag: str = "", session: str = "", since: str = "", until: str = "",
         status: str = "active") -> None:
    """Set every filter of the browse form (the others to their defaults) and show the first page."""
    page.select_option("#f-kind", kind)
    page.fill("#f-tag", tag)
    page.fill("#f-session", session)
    page.fill("#f-since", since)
    page.fill("#f-until", until)
    page.select_option("#f-status", status)
    page.click("#browse")


def rows(page: Page) -> Any:
    return page.locator("#memory-rows tr")


def test_browse_filters_and_pages(page: Page, served: tuple[Harness, str, dict[str, str]], tmp_path: Path) -> None:
    h, url, _ = served
    login(page, h, url)
    expect(rows(page)).to_have_count(25)
    expect(rows(page).first).to_contain_text("Note 2999")  # newest first
    expect(page.locator("#page-info")).to_have_text("memories 1–25, newest first")
    expect(page.locator("#prev-page")).to_be_disabled()
    page.click("#next-page")
    expect(page.locator("#page-info")).to_have_text("memories 26–50, newest first")
    expect(rows(page).first).to_contain_text("Note 2974")
    page.click("#prev-page")
    expect(rows(page).first).to_contain_text("Note 2999")

    show(page, kind="fact")
    expect(rows(page).nth(1)).to_contain_text(f"Note {LAST_FACT - len(KINDS):04d}")
    kinds = rows(page).locator("td:nth-child(2)").all_inner_texts()
    assert kinds and set(kinds) == {"fact"}

    show(page, tag="billing", session="s12")
    expect(rows(page)).to_have_count(10)  # notes 1200, 1210, ... 1290
    expect(rows(page).first).to_contain_text("Note 1290")
    expect(rows(page).first.locator("td").nth(4)).to_have_text("billing")

    show(page, since="2024-01-02", until="2024-01-02")
    # A local day is 24 hours wherever the browser is: 16 notes 90 minutes apart, near the start.
    expect(rows(page).first).to_contain_text("Note 00")
    expect(rows(page)).to_have_count(16)

    show(page, status="superseded")
    expect(rows(page)).to_have_count(1)
    expect(rows(page).first).to_contain_text("Acme pays NET30")
    expect(rows(page).first.locator("td").nth(2)).to_have_text("superseded")
    show(page, status="all", kind="fact", until="2023-12-31")
    expect(rows(page)).to_have_count(2)
    page.screenshot(path=str(tmp_path / "browse.png"), full_page=True)


def test_timeline_by_kind(page: Page, served: tuple[Harness, str, dict[str, str]], tmp_path: Path) -> None:
    h, url, _ = served
    login(page, h, url)
    chart = page.locator("#timeline-svg")
    expect(chart).to_be_visible()
    expect(page.locator("#timeline-caption")).to_have_text(f"{NOTES + 1} memories by week and kind")
    facts = sum(1 for i in range(NOTES) if KINDS[i % len(KINDS)] == "fact") + 1
    expect(page.locator("#timeline-legend")).to_contain_text(f"fact {facts}")
    expect(page.locator("#timeline-legend")).to_contain_text("procedure")
    assert chart.locator("rect").count() > 50
    assert "memories by week" in (chart.get_attribute("aria-label") or "")
    show(page, kind="procedure")
    expect(page.locator("#timeline-legend")).not_to_contain_text("fact")
    page.screenshot(path=str(tmp_path / "timeline.png"), full_page=True)


def test_open_edit_and_delete(page: Page, served: tuple[Harness, str, dict[str, str]], tmp_path: Path) -> None:
    h, url, ids = served
    login(page, h, url)
    rows(page).first.locator("button.link").click()
    detail = page.locator("#detail")
    expect(detail).to_be_visible()
    expect(page.locator("#detail-content")).to_have_text("Note 2999 about the Acme account")
    expect(detail.locator(".fields")).to_contain_text("sessionId")
    stamp = detail.locator(".fields time").first
    expect(stamp).to_contain_text("ago")
    assert (stamp.get_attribute("title") or "").strip()  # the exact local time on hover
    expect(detail.locator(".links")).to_contain_text("fact: Acme pays NET45")  # the text, not the id
    expect(detail.locator(".links")).not_to_contain_text(ids["new"])

    page.click("#edit-memory")
    page.fill("#edit-content", "Note 2999, corrected: Acme moved to NET60")
    page.fill("#edit-tags", "billing, corrected")
    page.click("#edit-save")
    expect(page.locator("#detail-content")).to_have_text("Note 2999, corrected: Acme moved to NET60")
    expect(rows(page).first).to_contain_text("corrected: Acme moved to NET60")
    assert h.memory.get(ids["last"], user_id="alice").tags == ("billing", "corrected")
    page.screenshot(path=str(tmp_path / "edited.png"), full_page=True)

    rows(page).nth(1).locator("button.link").click()
    expect(page.locator("#detail-content")).to_have_text("Note 2998 about the Acme account")
    page.click("#delete-memory")
    expect(page.locator("#confirm-delete")).to_be_visible()
    expect(page.locator("#confirm-text")).to_contain_text("Note 2998")
    page.screenshot(path=str(tmp_path / "confirm.png"))
    page.click("#confirm-cancel")
    expect(page.locator("#confirm-delete")).to_be_hidden()
    assert h.memory.get(ids["second"], user_id="alice").content.startswith("Note 2998")
    page.click("#delete-memory")
    page.click("#confirm-ok")
    expect(detail).to_be_hidden()
    expect(page.locator("#page-info")).to_contain_text("memories 1–25")
    expect(rows(page).nth(1)).to_contain_text("Note 2997")
    with pytest.raises(MemoryNotFound):
        h.memory.get(ids["second"], user_id="alice")


def test_history_of_a_fact(page: Page, served: tuple[Harness, str, dict[str, str]], tmp_path: Path) -> None:
    h, url, _ = served
    login(page, h, url)
    show(page, status="all", until="2023-12-31")
    expect(rows(page)).to_have_count(2)
    expect(page.locator("#timeline-caption")).to_have_text("2 memories by day and kind")  # the filters' memories
    rows(page).first.locator("button.link").click()
    expect(page.locator("#detail-content")).to_have_text("Acme pays NET45")
    history = page.locator("#detail-history tr")
    expect(history).to_have_count(2)  # oldest first: the superseded value, then the current one
    expect(history.first).to_contain_text("superseded")
    expect(history.first).to_contain_text("NET30")
    expect(history.nth(1)).to_contain_text("active")
    expect(page.locator("#detail .links")).to_contain_text("Acme pays NET30")  # supersedes, as text
    page.screenshot(path=str(tmp_path / "history.png"), full_page=True)


def test_add_a_memory(page: Page, served: tuple[Harness, str, dict[str, str]], tmp_path: Path) -> None:
    h, url, _ = served
    login(page, h, url)
    page.click("#tab-add")
    page.fill("#add-content", "Acme's new CFO is Dana Reyes")
    page.select_option("#add-kind", "fact")
    page.fill("#add-tags", "people, acme")
    page.click("#add-save")
    expect(page.locator("#add-status")).to_contain_text("Added fact memory")
    expect(page.locator("#detail-content")).to_have_text("Acme's new CFO is Dana Reyes")
    expect(page.locator("#detail .fields")).to_contain_text("people, acme")
    page.screenshot(path=str(tmp_path / "added.png"), full_page=True)
    page.click("#tab-browse")
    page.click("#browse")
    expect(rows(page).first).to_contain_text("Acme's new CFO is Dana Reyes")  # added now: the newest
    stored = h.memory.list(user_id="alice", filters={"tags_all": ["people"]})
    assert [r.content for r in stored] == ["Acme's new CFO is Dana Reyes"]


def test_switching_users_closes_the_detail(page: Page, served: tuple[Harness, str, dict[str, str]],
                                          tmp_path: Path) -> None:
    h, url, _ = served
    login(page, h, url)
    rows(page).first.locator("button.link").click()
    expect(page.locator("#detail")).to_be_visible()
    page.fill("#user", "bob")
    page.press("#user", "Enter")
    expect(page.locator("#detail")).to_be_hidden()
    expect(rows(page)).to_have_count(3)
    expect(rows(page).first).to_contain_text("Bob's memory 2")
    expect(page.locator("#timeline-caption")).to_have_text("3 memories by day and kind")
    page.screenshot(path=str(tmp_path / "bob.png"), full_page=True)


def test_search_shows_what_happened(page: Page, served: tuple[Harness, str, dict[str, str]], tmp_path: Path) -> None:
    h, url, _ = served
    login(page, h, url)
    page.click("#tab-search")
    page.fill("#query", "What did the Acme account notes say last week?")
    page.fill("#as-of", "2024-03-15T12:00:00")
    page.fill("#top-k", "5")
    with page.expect_response(lambda r: "/v1/retrieve" in r.url) as answer:
        page.click("#search")
    meta = answer.value.json()["metadata"]
    assert meta["timeRange"] is not None and meta["includedResults"] == 5
    assert meta["beyondTopK"] + meta["mmrRemoved"] > 0  # something was dropped for the panel to show
    # The metadata's range, in UTC whatever the browser's zone: the week before Friday 15 March.
    expect(page.locator("#time-range")).to_have_text(
        re.compile(r"^time range: 'last week' = 2024-03-0\d 00:00 – 2024-03-1\d 23:59 UTC$"))
    expect(page.locator("#query-type")).to_have_text(f"type: {meta['queryType']}")
    expect(page.locator("#strategy")).to_have_text(f"strategy: {meta['strategy']}")
    funnel = page.locator("#funnel")
    expect(funnel).to_be_visible()
    expect(funnel.locator("caption")).to_have_text(f"What happened to the {meta['totalResults']} candidates")
    counts = {"drop-below": "belowMinScore", "drop-dedup": "dedupRemoved", "drop-mmr": "mmrRemoved",
              "drop-topk": "beyondTopK", "drop-budget": "budgetRemoved"}
    for row, name in counts.items():
        expect(page.locator(f"#{row} td").first).to_have_text(f"−{meta[name]}" if meta[name] else "0")
    expect(page.locator("#drop-topk th")).to_have_text("past topK 5")
    expect(page.locator("#drop-budget td").nth(1)).to_have_text(str(meta["includedResults"]))  # left: returned
    expect(page.locator("#results .memory")).to_have_count(5)
    page.screenshot(path=str(tmp_path / "search.png"), full_page=True)
