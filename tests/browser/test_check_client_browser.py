"""/check-client in a real browser, at 1280x720 and at 390 px, in the light and dark themes: a visitor starts a run,
the lesson's solution client (run over real HTTP in a thread, the 2026-07-28 headers mirrored) is pointed at the
address the page shows, and the rules turn to their verdicts on the page as htmx polls; axe finds nothing, and the
page never scrolls sideways. Without JavaScript the table is there after a reload."""

from __future__ import annotations

import importlib.util
import json
import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from app import create_app
from mrtr_client.mcp_headers import mirrored_headers
from tests.browser.conftest import BROWSER_TEST_CONFIG
from tests.browser.helpers import LiveServer, assert_no_axe_violations, serve
from tests.browser.nojs import assert_no_js_page_accessible

SOLUTION = Path(__file__).resolve().parents[2] / "lessons" / "build-the-client" / "solution" / "client.py"
#: Rules the requests alone hold for the solution (the rest read its output, pasted or not).
HELD = ("ticket-echo", "new-id", "same-request", "multi-round", "state-only-paced", "http-headers")
VIEWPORTS = {"desktop": {"width": 1280, "height": 720}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The app with a run directory of its own, so runs of earlier sessions never count against this one."""
    state = Path(tmp_path_factory.mktemp("client-runs"))
    with serve(create_app({**BROWSER_TEST_CONFIG, "MRTR_CHECK_STATE_DIR": str(state)})) as live:
        yield live


def send_to(url: str) -> Any:
    """The lesson client's `send` over real HTTP, each request's 2026-07-28 headers mirrored from its body."""
    def send(message: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(url, json.dumps(message).encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            **mirrored_headers(message, {})})
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the test's own live server
            return dict(json.loads(response.read()))
    return send


def client_thread(url: str) -> threading.Thread:
    """The lesson's solution, pointed at `url`, running (its pacing sleeps are a few real milliseconds)."""
    spec = importlib.util.spec_from_file_location("browser_lesson_client", SOLUTION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    thread = threading.Thread(target=module.run, args=(send_to(url), time.sleep), daemon=True)
    thread.start()
    return thread


def no_sideways_scroll(page: Page) -> None:
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")


def start_run(page: Page, lab: LiveServer) -> str:
    page.goto(lab.url + "/check-client")
    page.get_by_role("button", name="Start a grading run").click()
    expect(page).to_have_url(re.compile(r"/check-client/[\w-]{32}$"))
    address = page.locator("#client-mcp-url").inner_text()
    assert address == page.url + "/mcp"
    return address


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_client_pointed_at_the_page_is_graded_live(browser: Browser, lab: LiveServer, axe: Axe,
                                                     viewport: str) -> None:
    context = browser.new_context(viewport=VIEWPORTS[viewport])  # type: ignore[arg-type]
    try:
        page = context.new_page()
        page.goto(lab.url + "/check-client")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            assert_no_axe_violations(page, axe)
        page.emulate_media(color_scheme="light")
        address = start_run(page, lab)
        expect(page.locator("#client-summary")).to_contain_text("Waiting for your client")
        thread = client_thread(address)
        for rule in HELD:  # each turns from not run to pass as htmx polls, with no reload
            expect(page.locator(f'tr[data-rule="{rule}"]')).to_have_attribute("data-verdict", "pass",
                                                                               timeout=30_000)
        expect(page.locator("#client-steps-title")).to_contain_text("6 of 6 steps done")
        thread.join(timeout=30)
        expect(page.locator('tr[data-rule="version-retry"]')).to_have_attribute("data-verdict", "not-run")
        no_sideways_scroll(page)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            assert_no_axe_violations(page, axe)
            no_sideways_scroll(page)
    finally:
        context.close()


def test_without_javascript_the_table_is_there_after_a_reload(browser: Browser, lab: LiveServer, axe: Axe) -> None:
    context = browser.new_context(java_script_enabled=False, viewport=VIEWPORTS["phone"])  # type: ignore[arg-type]
    try:
        page = context.new_page()
        address = start_run(page, lab)
        client_thread(address).join(timeout=30)
        expect(page.locator('tr[data-rule="ticket-echo"]')).to_have_attribute("data-verdict", "not-run")
        page.get_by_role("link", name="Refresh the grades").click()
        for rule in HELD:
            expect(page.locator(f'tr[data-rule="{rule}"]')).to_have_attribute("data-verdict", "pass")
        no_sideways_scroll(page)
        assert_no_js_page_accessible(browser, page.url, axe)
    finally:
        context.close()
