"""The build lesson's "Run the checks" in real Chromium: the learner's server and the checker's moves run on
Pyodide in a Web Worker, from the app's own origin only.

The verdicts each run must show come from `moves.check.check_source` on the same source, which
tests/lessons/test_build_in_page.py holds equal to the stdio checker's, so no move, count or verdict is named
here. Each test keeps one page, so Pyodide loads once per test (cold) and the later runs are warm.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import BrowserContext, Page, Route, expect

from moves.check import check_source
from tests.browser.helpers import assert_no_axe_violations, replace_code
from tests.lessons.buildkit import BUILD, CATALOGUE, SHOWABLE

SLUG = "build-the-checks"
LESSON = f"/lessons/{SLUG}"
#: A cold run downloads and starts Pyodide (about 12 MB) on a machine other tests share.
COLD = 90_000
WARM = 30_000


def expected(source: str) -> tuple[dict[str, str], dict[str, bool]]:
    report = check_source(source, moves=CATALOGUE)["report"]
    return ({r["move"]: r["verdict"] for r in report["moves"]}, {p["probe"]: p["ok"] for p in report["probes"]})


@pytest.fixture
def offsite(context: BrowserContext, base_url: str) -> Iterator[list[str]]:
    """Every request the page or its worker makes that is not for the app's origin: refused, and listed."""
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


def open_lesson(page: Page) -> None:
    page.goto(LESSON + "#build-loop")
    page.evaluate("() => window.localStorage.clear()")
    page.reload()
    expect(page.locator("[data-action='run-checks']")).to_be_visible()


def run(page: Page, timeout: float = WARM) -> None:
    page.locator("[data-action='run-checks']").click()
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-run-state", "done", timeout=timeout)


def assert_verdicts(page: Page, source: str) -> None:
    moves, probes = expected(source)
    for slug, verdict in moves.items():
        expect(page.locator(f'[data-move="{slug}"][data-verdict="{verdict}"]')).to_be_visible()
    for slug, ok in probes.items():
        row = page.locator(f'[data-probe="{slug}"]')
        expect(row).to_be_visible()
        expect(row).to_have_attribute("data-verdict", "pass" if ok else ("not-run" if slug == "same-error" else "fail"))
    summary = page.locator("[data-run-summary]")
    expect(summary).to_contain_text(check_source(source, moves=CATALOGUE)["summary"])


def test_the_starter_each_step_and_the_solution_get_the_checkers_verdicts(page: Page, offsite: list[str]) -> None:
    open_lesson(page)
    run(page, COLD)
    assert_verdicts(page, BUILD.starter)
    report = page.locator(f"#build-report-{SLUG}")
    expect(report).to_contain_text(f"0 of {len(BUILD.steps)} steps done")
    for step in BUILD.steps:
        expect(page.locator(f"#step-{step.id} [data-step-status]")).to_be_hidden()

    for n, step in enumerate(BUILD.steps):
        if n:
            page.locator(f"#step-{BUILD.steps[n - 1].id} [data-action='reset-step']").click()
        replace_code(page, step.id, step.solution)
        run(page)
        assert_verdicts(page, BUILD.partial({step.id}))
        for slug in step.moves:  # the step's own list shows them green too
            expect(page.locator(f'#step-{step.id} [data-step-move="{slug}"][data-verdict="pass"]')).to_be_visible()
        expect(report).to_contain_text(f"1 of {len(BUILD.steps)} steps done")
        expect(page.locator(f"#step-{step.id} [data-step-status]")).to_be_visible()

    for step in BUILD.steps:
        replace_code(page, step.id, step.solution)
    run(page)
    assert_verdicts(page, BUILD.solution)
    # The lesson's server serves deploy alone: a move that needs a second asking tool is not run, never passed.
    not_shown = len(CATALOGUE) - len(SHOWABLE)
    expect(page.locator('[data-move][data-verdict]:not([data-verdict="pass"])')).to_have_count(not_shown)
    expect(page.locator('[data-move][data-verdict="not-run"]')).to_have_count(not_shown)
    expect(page.locator('[data-move][data-verdict="pass"]')).to_have_count(len(SHOWABLE))
    expect(report).to_contain_text(f"{len(BUILD.steps)} of {len(BUILD.steps)} steps done")
    recorded = page.evaluate(f"() => window.mrtrProgress.load().steps['{SLUG}']")
    assert sorted(recorded) == sorted(s.id for s in BUILD.steps)

    # The learner's copy is kept in this browser: a reload brings it back, and the starter is one click away.
    page.reload()
    expect(page.locator("#step-signature [data-editor]")).to_have_value(BUILD.step("signature").solution)
    page.locator("#step-signature [data-action='reset-step']").click()
    expect(page.locator("#step-signature [data-editor]")).to_have_value(BUILD.step("signature").stub)
    assert offsite == []


def test_an_endless_loop_ends_with_the_time_out_and_the_page_still_works(page: Page, offsite: list[str]) -> None:
    open_lesson(page)
    runner = page.locator("[data-build-runner]")
    page.evaluate("() => document.querySelector('[data-build-runner]').setAttribute('data-timeout', '2')")
    stub = BUILD.step("signature").stub
    replace_code(page, "signature", stub.replace("    return True", "    while True:\n        pass", 1))
    page.locator("[data-action='run-checks']").click()
    expect(runner).to_have_attribute("data-run-state", "timed-out", timeout=COLD)
    expect(page.locator("[data-run-error]")).to_contain_text("did not answer within 2 s")
    expect(page.locator("[data-run-error]")).to_contain_text("endless loop")
    # Still working: the editor takes the fix, and the next run (a fresh worker) reports every move.
    page.locator("#step-signature [data-action='reset-step']").click()
    # The real time-out again: 2 s is for the loop above, not for a sound run on a machine six people share.
    page.evaluate("() => document.querySelector('[data-build-runner]').setAttribute('data-timeout', '10')")
    run(page, COLD)
    assert_verdicts(page, BUILD.starter)
    expect(page.locator("[data-run-error]")).to_be_empty()
    assert offsite == []


def test_a_server_that_cannot_start_says_which_line_and_step(page: Page) -> None:
    open_lesson(page)
    replace_code(page, "expiry", BUILD.step("expiry").stub.replace("return True", "return (", 1))
    page.locator("[data-action='run-checks']").click()
    runner = page.locator("[data-build-runner]")
    expect(runner).to_have_attribute("data-run-state", "error", timeout=COLD)
    expect(page.locator("[data-run-error]")).to_contain_text("SyntaxError at line")
    expect(page.locator("[data-run-error]")).to_contain_text("step 3 (check_expiry)")


def test_keyboard_only_axe_clean_in_both_themes_and_no_sideways_scroll_on_a_phone(page: Page, axe: Axe) -> None:
    open_lesson(page)
    editor = page.locator("#step-principal [data-editor]")
    editor.focus()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("def check_principal(claims):\n")
    page.keyboard.press("Tab")  # Tab indents inside the editor
    page.keyboard.type('return claims.get("sub") == PRINCIPAL\n')
    expect(editor).to_have_value('def check_principal(claims):\n    return claims.get("sub") == PRINCIPAL\n')
    page.keyboard.press("Shift+Tab")  # outdents the empty line: nothing to take away, focus stays
    expect(editor).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")  # Escape, then Tab, leaves the editor
    expect(editor).not_to_be_focused()
    page.locator("[data-action='run-checks']").focus()
    page.keyboard.press("Enter")
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-run-state", "done", timeout=COLD)
    expect(page.locator('[data-move="stolen"][data-verdict="pass"]')).to_be_visible()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)
    page.set_viewport_size({"width": 390, "height": 844})
    page.emulate_media(color_scheme="light", reduced_motion="reduce")
    for where in ("#step-signature", "#build-run-title"):
        page.locator(where).scroll_into_view_if_needed()
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), where
    assert_no_axe_violations(page, axe)


def test_a_run_says_what_it_means_for_the_learners_step_and_moves_them_on(page: Page) -> None:
    open_lesson(page)
    status = page.locator("[data-run-status]")
    first, second = BUILD.steps[0], BUILD.steps[1]
    run(page, COLD)  # the starter: the learner is on step 1, and only step 1 is a failure
    expect(status).to_contain_text(f"Step 1 not done: FAIL on {', '.join(first.moves)}")
    for step in BUILD.steps[1:]:
        for slug in step.moves:
            item = page.locator(f'#step-{step.id} [data-step-move="{slug}"]')
            expect(item).to_have_attribute("data-verdict", "todo")
            expect(item).to_contain_text("not yet")
    expect(page.locator(f'#step-{first.id} [data-step-move="{first.moves[0]}"]')).to_contain_text("failed")

    replace_code(page, first.id, first.solution)
    run(page)
    moves, _ = expected(BUILD.partial({first.id}))
    held = sum(v == "pass" for v in moves.values())
    expect(status).to_contain_text(f"Step 1 done: the {first.id} check holds. {held} of {len(moves)} moves hold so "
                                   f"far; next: step 2, {second.id}.")
    expect(status).not_to_contain_text("FAIL")
    heading = page.locator(f"#step-{second.id} h3")
    expect(heading).to_be_focused()  # moved on: the next step is where the reader is
    expect(heading).to_be_in_viewport()
    expect(page.locator(f"#step-{second.id}")).to_have_attribute("data-current", "true")
    # Typing in a later step makes it the learner's step: still failing, it is the one the bar names.
    replace_code(page, "expiry", BUILD.step("expiry").stub + "\n")
    run(page)
    expect(status).to_contain_text("Step 3 not done: FAIL on late")


def test_python_starts_loading_when_the_learner_reaches_an_editor_from_addresses_cached_for_good(
        page: Page, offsite: list[str]) -> None:
    events: list[str] = []
    headers: dict[str, str] = {}

    def seen(response) -> None:  # noqa: ANN001 - playwright's Response
        path = urlsplit(response.url).path
        if path.startswith("/build-runner/"):
            events.append(path)
            headers[path] = response.headers.get("cache-control", "")

    page.on("response", seen)
    page.goto(LESSON)  # the top of the lesson: no editor on screen yet
    expect(page.locator("[data-action='run-checks']")).to_be_attached()
    runner = page.locator("[data-build-runner]")
    expect(runner).not_to_have_attribute("data-preload", re.compile("."))
    page.locator("#step-signature [data-editor]").scroll_into_view_if_needed()
    expect(runner).to_have_attribute("data-preload", "ready", timeout=COLD)  # nobody pressed anything
    assert any(p.endswith("pyodide.asm.wasm") for p in events) and any("/checker-" in p for p in events)
    for path, value in headers.items():  # versioned or hashed addresses, cached for a year
        assert "immutable" in value and "max-age=31536000" in value, (path, value)
    run(page)  # already loaded: the press runs the checks at once, and the time is counted from it
    expect(page.locator("[data-run-status]")).to_contain_text("s from the press")
    assert_verdicts(page, BUILD.starter)
    assert offsite == []


def test_a_check_that_refuses_everyone_is_not_done_and_the_next_step_is_told_why(page: Page) -> None:
    """check_signature written as `return False` refuses the tampered move, and the honest retry too: step 1 is
    not done, and a right step 2 is told that an earlier step broke the honest flow, never blamed for it."""
    open_lesson(page)
    status = page.locator("[data-run-status]")
    first, second = BUILD.steps[0], BUILD.steps[1]
    replace_code(page, first.id, first.solution.splitlines()[0] + "\n    return False\n")
    run(page, COLD)
    expect(status).to_contain_text("Step 1 not done: the honest flow no longer completes (FAIL on honest")
    expect(page.locator("[data-run-summary]")).to_contain_text("Not held: honest (fail)")
    replace_code(page, second.id, second.solution)
    run(page)
    expect(status).to_contain_text("Step 2 not done: the honest flow no longer completes")
    graded = page.locator(f"[data-build-result='{second.id}']")
    expect(graded).to_contain_text("an earlier step, step 1 (check_signature), broke the honest flow")
    expect(graded).not_to_contain_text("FAIL")
