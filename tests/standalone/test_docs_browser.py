"""/docs and /__mock__/inspector in a real headless browser (Debian's chromium via playwright).

Skipped only when /usr/bin/chromium is absent; `playwright install` is never needed.
"""

from __future__ import annotations

import re
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


def test_inspector_marks_filters_and_fits_a_normal_window(browser, mock_api) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(mock_api.base_url + "/__mock__/inspector")
    page.wait_for_selector("text=live", timeout=10_000)
    client = mock_api.client()
    ws = mock_api.workspaces.primary
    assert client.get(f"/v1/tickets?workspace_id={ws}&contact_id=ph_emma_clarke"
                      f"&_=1732300000000").status_code == 200
    mock_api.fault(method="GET", path="/v1/models", status=503)
    assert client.get("/v1/models").status_code == 503
    assert client.get("/v1/tickets/xd_nope").status_code == 404
    page.wait_for_function("document.querySelectorAll('tr.entry').length >= 3", timeout=10_000)

    ignored = page.locator("tr.entry", has_text="contact_id=ph_emma_clarke")
    assert ignored.locator(".mark.ignored").inner_text() == "ignored: contact_id, _"
    # The marks stay on screen however long the path is.
    mark_box = ignored.locator(".mark.ignored").bounding_box()
    assert mark_box is not None and mark_box["x"] + mark_box["width"] <= 1280
    faulted = page.locator("tr.entry", has_text="/v1/models")
    assert "fault #" in faulted.locator(".mark.fault").inner_text()
    # The fault's row names the operation; the clock column says it is the mock's, with the
    # wall time beside it (the mock clock is frozen in 2026 here).
    assert faulted.locator("td.op").inner_text() == "listModels"
    headers = page.locator("thead th").all_inner_texts()
    assert "mock clock" in headers and "wall time" in headers
    assert faulted.locator("td.time").inner_text() == "2026-11-01T12:00:00.000Z"
    assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", faulted.locator("td.wall").inner_text())

    # Status (coloured by class) and latency are on screen without scrolling.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    for row in (ignored, faulted):
        for cls in ("status", "ms"):
            box = row.locator(f"td.{cls}").bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280, cls
        assert float(row.locator("td.ms").inner_text()) >= 0
    colour = "el => getComputedStyle(el).backgroundColor"
    ok = ignored.locator("td.status span").evaluate(colour)
    server = faulted.locator("td.status span").evaluate(colour)
    client_error = page.locator("tr.entry", has_text="/v1/tickets/xd_nope") \
        .locator("td.status span").evaluate(colour)
    assert len({ok, server, client_error}) == 3, (ok, server, client_error)

    # Filters: by status class, by method, by path.
    def shown() -> list[str]:
        return page.locator("tr.entry:visible td.path .target").all_inner_texts()

    page.fill("#f-status", "5xx")
    assert all(p.startswith("/v1/models") for p in shown()) and len(shown()) == 1
    page.fill("#f-status", "404")
    assert len(shown()) == 1 and shown()[0].startswith("/v1/tickets/xd_nope")
    page.fill("#f-status", "")
    page.fill("#f-path", "/v1/tickets")
    assert len(shown()) == 2
    page.select_option("#f-method", "POST")
    assert shown() == []
    page.close()
    # The browser asked for /favicon.ico on its own: that never lands in the journal.
    assert not [r for r in mock_api.requests() if r.path.startswith("/favicon")]


def test_inspector_lists_what_the_clock_caused(browser, mock_api) -> None:
    page = browser.new_page()
    page.goto(mock_api.base_url + "/__mock__/inspector")
    page.wait_for_selector("text=live", timeout=10_000)
    mock_api.clock.advance(22 * 3600)  # past 09:00: the concierge's daily cron trigger
    item = page.locator("#caused li", has_text="cron trigger tr_harbor_concierge_precheckin")
    item.wait_for(timeout=10_000)
    assert "2026-11-02T09:00:00.000Z agent_runs" in item.inner_text()
    page.close()


def test_inspector_marks_a_tool_run_and_shows_its_logs(browser, mock_api) -> None:
    """Issue 42 (DECISIONS T15): a custom tool's run, journaled with its logs and time."""
    page = browser.new_page()
    page.goto(mock_api.base_url + "/__mock__/inspector")
    page.wait_for_selector("text=live", timeout=10_000)
    client = mock_api.client()
    made = client.post("/v1/custom-tools", json={
        "workspace_id": mock_api.workspaces.primary, "name": "printing-tool",
        "description": "prints", "language": "python", "parameters": {},
        "code": "def main(**params):\n    print('hello from the tool')\n"
                "    return {'message': 'ok'}\n"}).json()["data"]
    assert client.post(f"/v1/custom-tools/{made['id']}/run", json={}).json()["data"]["success"]
    failing = client.post("/v1/custom-tools/kg_harbor_tides/run",
                          json={"parameters": {"date": "not a date"}}).json()["data"]
    assert failing["success"] is False
    ran = page.locator("tr.entry", has_text=f"/v1/custom-tools/{made['id']}/run")
    ran.wait_for(timeout=10_000)
    assert re.fullmatch(r"tool ran \d+ ms", ran.locator(".mark.tool").inner_text())
    ran.click()
    logs = page.locator(f"tr.entry:has-text('/v1/custom-tools/{made['id']}/run') + tr.detail "
                        "pre.tool-logs")
    assert "hello from the tool" in logs.inner_text()
    failed = page.locator("tr.entry", has_text="/v1/custom-tools/kg_harbor_tides/run")
    failed.wait_for(timeout=10_000)
    assert failed.locator(".mark.tool.failed").inner_text().startswith(
        "tool failed") and "ValueError" in failed.locator(".mark.tool.failed").inner_text()
    page.close()
