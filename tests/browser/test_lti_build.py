"""The build lesson launched from a course platform, in real Chromium: the learner writes a step in the page, runs
the checks there (Pyodide in a Web Worker), and the course gets the grade, sent as self-reported, from this browser
session only.

The platform is tests/lti/platform.py (lti1p3platform; its key set, token, score and auth endpoints on loopback):
the tool's OIDC redirect reaches its auth page, whose launch form the learner submits as on a course site.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.browser.conftest import BROWSER_TEST_CONFIG
from tests.browser.helpers import LiveServer, assert_no_axe_violations, replace_code, serve
from tests.lessons.buildkit import BUILD
from tests.lti.platform import Platform, running_platform

ITEM = "build/build-the-checks"
#: A cold run downloads and starts Pyodide (about 12 MB) on a machine other tests share.
COLD = 90_000
WARM = 30_000


@pytest.fixture(scope="module")
def lti_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Platform]]:
    """The real app with one platform registered, and that platform's services."""
    from app import create_app

    with running_platform("http://tool.invalid") as platform:  # the platform never calls the tool's pages
        config = {**BROWSER_TEST_CONFIG, "MRTR_STATE_DIR": str(tmp_path_factory.mktemp("lti") / "state"),
                  "MRTR_LTI_PLATFORMS": json.dumps([platform.tool_entry()])}
        with serve(create_app(config)) as live:
            with urllib.request.urlopen(f"{live.url}/lti/jwks", timeout=10) as response:
                platform.registration.set_tool_key_set(json.load(response))  # as a platform given the JWKS URL
            yield live, platform


def launch_in_browser(page: Page, live: LiveServer, platform: Platform, *,
                      ready: str = "[data-action='run-checks']") -> None:
    """The platform's login initiation, its signed launch posted from its own page, and the tool's activity page."""
    platform.browser_launch = (f"{live.url}/lti/launch", ITEM)
    query = urlencode({"iss": platform.base, "login_hint": "learner-1", "target_link_uri": f"{live.url}/lti/launch",
                       "lti_message_hint": "resource-1", "client_id": platform.registration.get_client_id()})
    page.goto(f"{live.url}/lti/login?{query}")
    page.get_by_role("button", name="Open the activity").click()
    expect(page.locator(ready)).to_be_visible()


def run(page: Page, timeout: float) -> None:
    page.locator("[data-action='run-checks']").click()
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-run-state", "done", timeout=timeout)


def test_a_step_run_in_the_page_is_graded_and_sent_to_the_course_from_this_session_only(
        context: BrowserContext, page: Page, axe: Axe, lti_site: tuple[LiveServer, Platform]) -> None:
    live, platform = lti_site
    platform.scores.clear()
    launch_in_browser(page, live, platform)
    csp = page.evaluate("() => fetch(location.href).then(r => r.headers.get('Content-Security-Policy'))")
    assert "'unsafe-inline'" not in csp and "script-src 'self' 'wasm-unsafe-eval';" in csp
    steps = len(BUILD.steps)
    expect(page.locator("#lti-score")).to_contain_text("goes to your course when you finish")

    first = BUILD.steps[0]
    replace_code(page, first.id, first.solution)
    run(page, COLD)
    grade = page.locator("#lti-build-grade")
    expect(grade.locator("[data-lti-graded='run']")).to_have_text(f"1 of {steps} steps done in this run.")
    expect(grade.locator(f"li[data-step='{first.id}']")).to_have_attribute("data-done", "true")
    expect(page.locator("#lti-score")).to_have_text(f"Your course has your score: 1 of {steps}.")
    [score] = platform.scores
    assert (score["scoreGiven"], score["scoreMaximum"], score["activityProgress"]) == (1, steps, "InProgress")
    assert "self-reported" in score["comment"] and "from the in-page run" in score["comment"]
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)

    # The same page without the launch's session (its cookies gone, as for anyone holding the ?launch= address):
    # the run still shows its verdicts, the tool refuses the grade and the page says why; nothing is sent.
    for step in BUILD.steps[1:]:
        replace_code(page, step.id, step.solution)
    context.clear_cookies()
    run(page, WARM)
    expect(grade.locator("[data-lti-error='403']")).to_contain_text("another browser session")
    assert len(platform.scores) == 1
    expect(page.locator("#lti-score")).to_have_text(f"Your course has your score: 1 of {steps}.")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing scrolls sideways
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390


def test_without_javascript_the_pasted_report_form_still_grades(browser: Browser,
                                                                lti_site: tuple[LiveServer, Platform]) -> None:
    live, platform = lti_site
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        launch_in_browser(page, live, platform, ready="form[action*='build-report']")
        expect(page.locator("[data-action='run-checks']")).to_be_hidden()  # the in-page run needs JavaScript
        page.get_by_label("The checker's --json report").fill("not a report")
        page.get_by_role("button", name="Check my steps").click()
        expect(page.locator("#lti-build-grade").get_by_role("alert")).to_contain_text("that is not JSON")
    finally:
        context.close()
