"""/docs and /__mock__/inspector in a real headless browser (Debian's chromium via playwright).

Skipped only when /usr/bin/chromium is absent; `playwright install` is never needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason=f"{CHROMIUM} is absent (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


def test_docs_page_renders_the_operations_offline(browser, mock_api) -> None:
    page = browser.new_page()
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto(mock_api.base_url + "/docs")
    page.wait_for_selector(".opblock", timeout=20_000)
    summaries = page.locator(".opblock-summary-path").all_inner_texts()
    assert len(summaries) >= 80
    assert any("/v1/tickets/{id}/resolve" in text.replace("\u200b", "") for text in summaries)
    # Nothing but the mock itself was asked for: the page works offline.
    assert fetched and all(url.startswith(mock_api.base_url) or url.startswith("data:")
                           for url in fetched), fetched
    page.close()


def test_inspector_shows_a_request_made_during_the_test(browser, mock_api) -> None:
    page = browser.new_page()
    page.goto(mock_api.base_url + "/__mock__/inspector")
    page.wait_for_selector("text=live", timeout=10_000)
    client = mock_api.client()
    assert client.get("/v1/tickets", params={"workspace_id": mock_api.workspaces.primary,
                                             "status": "pending"}).status_code == 200
    row = page.locator("tr.entry", has_text="/v1/tickets?workspace_id=ws_harborview&status=pending")
    row.wait_for(timeout=10_000)
    assert "200" in row.inner_text() and "listTickets" in row.inner_text()
    page.close()
