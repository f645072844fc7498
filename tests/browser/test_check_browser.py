"""/check in a real browser: the app checks its own /mcp with live progress (htmx), the report has no
axe violations, a refused URL shows its message in place; each move's sequence diagram opens by keyboard
and is axe-clean in the light and dark themes; and without JavaScript the run page refreshes itself
until the report is there."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from app import create_app
from moves.catalog import load_moves
from tests.browser.conftest import BROWSER_TEST_CONFIG
from tests.browser.helpers import LiveServer, assert_no_axe_violations, serve
from tests.check.catalogue import STOLEN
from tests.mutants.harness import running

REPORT_TIMEOUT_MS = 90_000  # a whole run on a loaded 2-core machine; expect returns as soon as it is there


@pytest.fixture(scope="module")
def checker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The app with its own run directory, so runs of earlier sessions never count against this one."""
    state = Path(tmp_path_factory.mktemp("check-runs"))
    with serve(create_app({**BROWSER_TEST_CONFIG, "MRTR_CHECK_STATE_DIR": str(state)})) as live:
        yield live


def fill(page: Page, url: str) -> None:
    page.get_by_label("MCP endpoint URL").fill(url)
    page.get_by_label("Bearer token of the ticket's owner").fill("bob-token")
    page.get_by_label("Bearer token of a second user").fill("alice-token")
    page.get_by_label("Skip the late move").check()


def test_the_app_checks_its_own_mcp_with_live_progress(page: Page, checker: LiveServer, axe: Axe) -> None:
    page.goto(checker.url + "/check")
    assert_no_axe_violations(page, axe)

    fill(page, "http://203.0.113.7/mcp")
    page.get_by_role("button", name="Check the server").click()
    error = page.locator("#check-error")
    expect(error).to_contain_text("only checks servers on this machine")
    expect(error).to_be_focused()
    expect(page.get_by_label("Bearer token of the ticket's owner")).to_have_value("")

    fill(page, checker.url + "/mcp")
    page.get_by_role("button", name="Check the server").click()
    expect(page).to_have_url(re.compile(r"/check/runs/[\w-]+$"))
    status = page.locator("#check-status")
    expect(status).to_contain_text("PASS", timeout=REPORT_TIMEOUT_MS)
    expect(page.locator("#check-progress")).to_have_attribute("data-state", "done")
    expect(page.locator(f'tr[data-move="{STOLEN.slug}"] td.cell')).to_have_attribute("data-outcome", "pass")
    late = next(m.slug for m in load_moves() if m.timing == "past-expiry")
    expect(page.locator(f'tr[data-move="{late}"]')).to_have_attribute("data-verdict", "not-run")
    expect(page.locator(f'tr[data-move="{late}"] td.cell')).to_have_text("not shown")
    expect(page.locator('tr[data-probe="same-error"]')).to_have_attribute("data-verdict", "pass")
    assert "bob-token" not in page.content()
    assert_no_axe_violations(page, axe)


def test_without_javascript_the_run_page_refreshes_until_the_report(no_js_page: Page, checker: LiveServer) -> None:
    page = no_js_page
    page.goto(checker.url + "/check")
    fill(page, checker.url + "/mcp")
    page.get_by_role("button", name="Check the server").click()
    expect(page).to_have_url(re.compile(r"/check/runs/[\w-]+$"))
    expect(page.locator("#check-status")).to_contain_text("PASS", timeout=REPORT_TIMEOUT_MS)
    expect(page.locator("tr[data-move]")).to_have_count(len(load_moves()))


def test_the_reports_diagrams_open_by_keyboard_and_are_axe_clean_in_both_themes(page: Page, checker: LiveServer,
                                                                                axe: Axe) -> None:
    page.goto(checker.url + "/check")
    fill(page, checker.url + "/mcp")
    page.get_by_role("button", name="Check the server").click()
    expect(page.locator("#check-status")).to_contain_text("PASS", timeout=REPORT_TIMEOUT_MS)
    exchanges = page.locator("details.check-exchange")
    expect(exchanges).to_have_count(len(load_moves()))
    stolen = page.locator(f'details[data-exchange="{STOLEN.slug}"]')
    diagram = stolen.locator("svg.seq-wide")
    expect(diagram).to_be_hidden()
    stolen.locator(":scope > summary").focus()
    page.keyboard.press("Enter")
    expect(stolen).to_have_attribute("open", "")
    expect(diagram).to_be_visible()
    expect(diagram.locator("text.seq-label").first).to_have_text("tools/call deploy · id 2")
    expect(diagram.locator("text.seq-label").last).to_contain_text(f"· id {STOLEN.request_id}")
    words = stolen.locator("details.seq-words")
    words.locator(":scope > summary").click()
    expect(words.locator("li").first).to_contain_text("Client (bob) to Replica A via the load balancer")
    for index in range(exchanges.count()):  # every diagram open, so axe sees them all
        if exchanges.nth(index).get_attribute("open") is None:
            exchanges.nth(index).locator(":scope > summary").click()
            expect(exchanges.nth(index).locator("svg.seq-wide")).to_be_visible()
    assert_no_axe_violations(page, axe)
    page.emulate_media(color_scheme="dark")
    assert_no_axe_violations(page, axe)


def css_color(page: Page, value: str) -> str:
    return page.evaluate("""v => { const b = document.createElement('b'); b.style.color = v; document.body.append(b);
      const c = getComputedStyle(b).color; b.remove(); return c; }""", value)


def test_the_report_reads_at_a_glance_and_fits_a_phone(page: Page, checker: LiveServer, axe: Axe,
                                                      tmp_path: Path) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(checker.url + "/check")
    url_field = page.get_by_label("MCP endpoint URL")
    expect(url_field).to_have_value(checker.url + "/mcp")  # this app, on its own port, filled in: a click checks it
    expect(page.locator("#check-url-help")).to_contain_text("bob-token")  # the demo tokens its /mcp accepts
    expect(page.locator(".check-note")).to_contain_text("no limit but one check at a time")  # local mode
    fill(page, checker.url + "/mcp")
    page.get_by_role("button", name="Check the server").click()
    status = page.locator("#check-status")
    expect(status).to_contain_text("PASS", timeout=REPORT_TIMEOUT_MS)
    # PASS is drawn as a pass: the ok colour on the status line and on every held verdict
    expect(status.locator("[data-overall]")).to_have_attribute("data-overall", "pass")
    assert status.evaluate("e => getComputedStyle(e).color") == css_color(page, "var(--ok)")
    held = page.locator(f'tr[data-move="{STOLEN.slug}"] td.cell')
    assert held.evaluate("e => getComputedStyle(e).backgroundColor") == page.evaluate(
        "() => { const b = document.createElement('b'); b.style.background = 'var(--ok-bg)'; document.body.append(b);"
        " const c = getComputedStyle(b).backgroundColor; b.remove(); return c; }")
    # same-error with nothing refused compared nothing, and says so
    same = page.locator('tr[data-probe="same-error"]')
    if "no ticket was refused" in same.inner_text():
        expect(same.locator("td.cell")).to_have_text("nothing to compare")
    # the Detail column, which says what to fix, is the widest at 1280 px and nothing is clipped
    widths = page.locator("table.check-matrix").first.locator("thead th").evaluate_all(
        "ths => ths.map(t => t.getBoundingClientRect().width)")
    assert widths[-1] == max(widths)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1280
    # on a phone each move is a card: the detail is on screen, the page never scrolls sideways
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    detail = page.locator(f'tr[data-move="{STOLEN.slug}"] .check-detail')
    box = detail.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    # the exploration's section: what it tried and what held, on screen at 390 px, axe-clean in both themes
    explored = page.locator("#check-explore")
    expect(explored).to_be_visible()
    expect(explored.locator("#check-explore-clean")).to_contain_text("No variation broke an invariant")
    assert_no_axe_violations(page, axe)
    page.emulate_media(color_scheme="dark")
    assert_no_axe_violations(page, axe)
    page.emulate_media(color_scheme="light")
    # a flawed server's finding at 390 px: its exchange opens by keyboard, its JSON wraps inside its block
    with running("content-is-yes") as (url, _server):
        page.goto(checker.url + "/check")
        fill(page, url)
        page.get_by_role("button", name="Check the server").click()
        expect(status).to_contain_text("FAIL", timeout=REPORT_TIMEOUT_MS)
    finding = page.locator('#check-explore article.check-finding[data-invariant="no-means-no"]').first
    expect(finding.locator(".check-finding-fix")).to_be_visible()
    exchange = finding.locator("details.check-exchange")
    exchange.locator(":scope > summary").focus()
    page.keyboard.press("Enter")
    expect(exchange).to_have_attribute("open", "")
    expect(exchange.locator("pre.check-json").first).to_be_visible()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    box = exchange.locator("pre.check-json").last.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    finding.screenshot(path=tmp_path / "check-finding-390.png")
    assert_no_axe_violations(page, axe)
    page.emulate_media(color_scheme="dark")
    finding.screenshot(path=tmp_path / "check-finding-390-dark.png")
    assert_no_axe_violations(page, axe)
