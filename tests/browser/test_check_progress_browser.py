"""/check while a full check runs, in a real browser at 1280x720 and 390x844, light and dark: the page says how
long it will take, rows appear as their moves end, and a countdown shows the late moves' wait (they wait beside the
others, so the rows keep coming while it counts down); nothing is clipped, axe finds nothing. The app's tickets live
120 s here, so the run is still waiting when the test ends (the app's server stops with the module)."""

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

MOVES = load_moves()
IN_TIME = [m.slug for m in MOVES if m.timing == "in-time"]
#: A run of the in-time moves on a loaded 2-core machine; expect returns as soon as they are there.
ROWS_TIMEOUT_MS = 60_000
SHOTS = Path(__file__).resolve().parents[2] / "instance" / "screenshots"


@pytest.fixture(scope="module")
def slow_checker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The app, its tickets living 120 s and its own run directory (one check at a time on a local app)."""
    state = Path(tmp_path_factory.mktemp("check-progress"))
    config = {**BROWSER_TEST_CONFIG, "MRTR_CHECK_STATE_DIR": str(state), "MRTR_TICKET_TTL": 120}
    with serve(create_app(config)) as live:
        yield live


def test_a_full_check_shows_its_plan_rows_as_they_end_and_a_countdown(page: Page, slow_checker: LiveServer,
                                                                       axe: Axe) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(slow_checker.url + "/check")
    expect(page.locator("#check-skip-late-help")).to_contain_text("tickets live 120 s, so checking it takes about")
    page.get_by_label("MCP endpoint URL").fill(slow_checker.url + "/mcp")
    page.get_by_label("Bearer token of the ticket's owner").fill("bob-token")
    page.get_by_label("Bearer token of a second user").fill("alice-token")
    page.get_by_role("button", name="Check the server").click()
    expect(page).to_have_url(re.compile(r"/check/runs/[\w-]+$"))
    plan = re.compile(r"^About \d+(\.5)? min: .*the ticket lives 1[12]\d s")
    expect(page.locator("#check-plan")).to_contain_text(plan)
    countdown = page.locator("#check-wait-left")
    expect(countdown).to_have_text(re.compile(r"^1 min \d+ s left$"))
    # every in-time move's row is there while the late moves still wait: they ran beside the wait
    for slug in IN_TIME:
        expect(page.locator(f'tr[data-move="{slug}"]')).to_have_count(1, timeout=ROWS_TIMEOUT_MS)
    expect(page.locator("#check-progress")).to_have_attribute("data-state", "running")
    expect(countdown).to_be_visible()
    expect(page.locator("#check-status")).to_contain_text(f"of {len(MOVES)} moves played")
    # The bar beside it shows moves played too (not the late wait, which once drew 24% beside "22 of 24 played").
    # Bar and status are read in one script: the page swaps them every second.
    played, total, bar = page.evaluate("""() => {
        const m = document.getElementById('check-status').textContent.match(/(\\d+) of (\\d+) moves played/);
        const bar = document.getElementById('check-moves-bar');
        return [Number(m[1]), Number(m[2]), [bar.value, bar.max]]; }""")
    assert total == len(MOVES) and played >= len(IN_TIME) and bar == [played, total]
    # The page swaps its progress region every second while the run goes on: the plan is kept (hx-preserve), the
    # wait bar is drawn anew, so the boxes are measured in one script, never across a swap.
    plan_node = page.locator("#check-plan").element_handle()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1280, 720), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
        boxes = page.evaluate("""() => ['check-plan', 'check-moves-bar'].map(id => {
            const box = document.getElementById(id).getBoundingClientRect();
            return {x: box.x, width: box.width};
        })""")
        for box in boxes:
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, boxes
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.locator("#check-plan").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"check-progress-{width}-{scheme}.png"))
            assert_no_axe_violations(page, axe)
    # Still the very paragraph the first poll found, after many polls: the plan was never drawn anew.
    expect(page.locator("#check-status")).to_contain_text("moves played")
    assert plan_node is not None and plan_node.evaluate("node => node.isConnected && node.id === 'check-plan'")
