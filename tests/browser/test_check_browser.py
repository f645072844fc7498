"""/check in a real browser: the app checks its own /mcp with live progress (htmx), the report has no
axe violations, a refused URL shows its message in place; and without JavaScript the run page
refreshes itself until the report is there."""

from __future__ import annotations

import re

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from moves.catalog import load_moves
from tests.browser.helpers import LiveServer, assert_no_axe_violations

REPORT_TIMEOUT_MS = 90_000  # a whole run on a loaded 2-core machine; expect returns as soon as it is there


def fill(page: Page, url: str) -> None:
    page.get_by_label("MCP endpoint URL").fill(url)
    page.get_by_label("Bearer token of the ticket's owner").fill("bob-token")
    page.get_by_label("Bearer token of a second user").fill("alice-token")
    page.get_by_label("Skip the late move").check()


def test_the_app_checks_its_own_mcp_with_live_progress(page: Page, live_server: LiveServer, axe: Axe) -> None:
    page.goto("/check")
    assert_no_axe_violations(page, axe)

    fill(page, "http://203.0.113.7/mcp")
    page.get_by_role("button", name="Check the server").click()
    error = page.locator("#check-error")
    expect(error).to_contain_text("only checks servers on this machine")
    expect(error).to_be_focused()
    expect(page.get_by_label("Bearer token of the ticket's owner")).to_have_value("")

    fill(page, live_server.url + "/mcp")
    page.get_by_role("button", name="Check the server").click()
    expect(page).to_have_url(re.compile(r"/check/runs/[\w-]+$"))
    status = page.locator("#check-status")
    expect(status).to_contain_text("PASS", timeout=REPORT_TIMEOUT_MS)
    expect(page.locator("#check-progress")).to_have_attribute("data-state", "done")
    expect(page.locator('tr[data-move="stolen"] td.cell')).to_have_attribute("data-outcome", "pass")
    expect(page.locator('tr[data-move="late"]')).to_have_attribute("data-verdict", "skip")
    expect(page.locator('tr[data-probe="same-error"]')).to_have_attribute("data-verdict", "pass")
    assert "bob-token" not in page.content()
    assert_no_axe_violations(page, axe)


def test_without_javascript_the_run_page_refreshes_until_the_report(no_js_page: Page, live_server: LiveServer) -> None:
    page = no_js_page
    page.goto("/check")
    fill(page, live_server.url + "/mcp")
    page.get_by_role("button", name="Check the server").click()
    expect(page).to_have_url(re.compile(r"/check/runs/[\w-]+$"))
    expect(page.locator("#check-status")).to_contain_text("PASS", timeout=REPORT_TIMEOUT_MS)
    expect(page.locator("tr[data-move]")).to_have_count(len(load_moves()))
