""""Build the client's loop" in real Chromium: the learner's client and the client checker's grading flows run
together on Pyodide in the build lesson's Web Worker, from the app's own origin only, graded step by step (the
rules plus the honest flows), with progress kept across a reload; at 390 px with the keyboard open and at
1280x720, in both themes, and readable without JavaScript.

The verdicts come from web/build/client_run.py on the same source (tests/lessons/test_client_lesson.py grades it in
CPython), so no count of rules is named here. The times a run took are printed (the lesson's budget: a cold
first verdict under 6 s on a phone, warm under 1 s), never asserted: this machine is shared.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from tests.browser.helpers import assert_no_axe_violations, assert_targets_at_least, assert_text_at_least, replace_code
from tests.browser.nojs import assert_no_js_page_accessible
from web.build.client_run import run_source
from web.build.routes import load_build
from web.site.content import DEFAULT_ROOT

SLUG = "build-the-client"
LESSON = f"/lessons/{SLUG}"
BUILD = load_build(DEFAULT_ROOT / SLUG)
assert BUILD is not None
COLD = 90_000
WARM = 30_000
SIZES = {"phone-keyboard": (390, 450), "laptop": (1280, 720)}


@pytest.fixture
def offsite(context: BrowserContext, base_url: str) -> Iterator[list[str]]:
    """Every request the page or its worker makes off the app's origin: refused, and listed."""
    origin = urlsplit(base_url)[:2]
    seen: list[str] = []

    def guard(route: Route) -> None:
        if urlsplit(route.request.url)[:2] == origin:
            route.continue_()
        else:
            seen.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    yield seen


def open_lesson(page: Page, size: tuple[int, int]) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(LESSON + "#build-loop")
    page.evaluate("() => window.localStorage.clear()")
    page.reload()
    expect(page.locator("[data-action='run-checks']")).to_be_visible()


def run(page: Page, timeout: float) -> str:
    """Press Run and wait for the verdict; returns the seconds the page says the run took from the press."""
    page.locator("[data-action='run-checks']").click()
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-run-state", "done", timeout=timeout)
    status = page.locator("[data-run-status]").inner_text()
    found = re.search(r"\(([\d.]+) s from the press\)", status)
    assert found, status
    return found[1]


def assert_verdicts(page: Page, source: str) -> None:
    report = run_source(source)["report"]
    assert isinstance(report, dict)
    for row in [*report["rules"], report["honest"]]:
        expect(page.locator(f'tr[data-move="{row["rule"]}"][data-verdict="{row["verdict"]}"]')).to_be_visible()


def write_solution(page: Page) -> None:
    for step in BUILD.steps:
        replace_code(page, step.id, step.solution)


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_the_starter_passes_no_step_the_solution_every_step_and_it_is_kept(
        page: Page, axe: Axe, size: tuple[int, int], offsite: list[str], tmp_path: Path) -> None:
    open_lesson(page, size)
    report = page.locator(f"#build-report-{SLUG}")
    cold = run(page, COLD)
    assert_verdicts(page, BUILD.starter)
    expect(report).to_contain_text(f"0 of {len(BUILD.steps)} steps done")
    expect(report).to_contain_text("new-id: fail")

    write_solution(page)
    warm = run(page, WARM)
    assert_verdicts(page, BUILD.solution)
    expect(report).to_contain_text(f"{len(BUILD.steps)} of {len(BUILD.steps)} steps done")
    print(f"\n[client lesson {size[0]}x{size[1]}] first verdict {cold} s (cold), solution {warm} s (warm)")
    assert offsite == []

    assert_text_at_least(page, 14, ".figure-build")
    assert_targets_at_least(page, 24, ".figure-build")
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.locator("#build-run-title").scroll_into_view_if_needed()
        page.screenshot(path=tmp_path / f"client-{size[0]}x{size[1]}-{scheme}.png")
        assert_no_axe_violations(page, axe)

    # Kept in this browser: after a reload the code and the done steps are still there.
    page.reload()
    for step in BUILD.steps:
        expect(page.locator(f"#step-{step.id} [data-step-status]")).to_be_visible()
    expect(page.locator(f"#step-{BUILD.steps[0].id} [data-editor]")).to_have_value(BUILD.steps[0].solution)


def test_a_wrong_step_says_which_rule_and_why(page: Page) -> None:
    open_lesson(page, SIZES["laptop"])
    write_solution(page)
    retry = BUILD.steps[0]
    replace_code(page, retry.id, retry.solution.replace('"id": new_id()', '"id": 1'))
    run(page, COLD)
    expect(page.locator('tr[data-move="new-id"]')).to_have_attribute("data-verdict", "fail")
    expect(page.locator("[data-run-status]")).to_contain_text("Step 1 not done")
    expect(page.locator(f"#build-report-{SLUG}")).to_contain_text("retried with an id it had used before")


def test_the_lesson_reads_without_javascript(browser: Browser, base_url: str, axe: Axe) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(base_url + LESSON)
        for step in BUILD.steps:
            expect(page.locator(f"#step-{step.id} h3")).to_be_visible()
            expect(page.locator(f"#step-{step.id} [data-editor]")).to_be_hidden()
        expect(page.get_by_text("mrtr check-client --command").first).to_be_visible()
        expect(page.locator("a[href='/check-client']").first).to_be_visible()
    finally:
        context.close()
    assert_no_js_page_accessible(browser, base_url + LESSON, axe)
