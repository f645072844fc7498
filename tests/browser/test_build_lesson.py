"""Walking "Build the ticket checks yourself" in a browser: hints open in order, the solution only on
request, a pasted checker report marks steps done and records them in progress, and every page of
the lesson is axe-clean, with and without JavaScript."""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import assert_no_axe_violations
from tests.browser.nojs import assert_no_js_page_accessible
from tests.lessons.buildkit import BUILD, report_with_steps_done

SLUG = "build-the-checks"
LESSON = f"/lessons/{SLUG}"


def test_hints_open_one_at_a_time_and_the_solution_only_on_request(page: Page, axe: Axe) -> None:
    page.goto(LESSON + "#step-signature")
    step = page.locator("#step-signature")
    hints = [step.locator(f'details[data-hint="{n}"]') for n in (1, 2, 3)]
    solution = step.locator("[data-solution] pre")
    expect(hints[0].locator("> summary")).to_be_visible()
    for hint in hints[1:]:
        expect(hint.locator("> summary")).to_be_hidden()
    expect(solution).to_be_hidden()

    for n, hint in enumerate(hints):
        expect(hint.locator("> p")).to_be_hidden()
        hint.locator("> summary").click()
        expect(hint.locator("> p")).to_be_visible()
        if n + 1 < len(hints):
            expect(hints[n + 1].locator("> summary")).to_be_visible()
        expect(solution).to_be_hidden()  # every hint open, and still no solution

    step.get_by_text("Show this step's solution").click()
    expect(solution).to_be_visible()
    expect(solution).to_contain_text("SIGNER.unsign(rest)")
    expect(page.locator("#step-principal [data-solution] pre")).to_be_hidden()  # only the step asked for
    assert_no_axe_violations(page, axe)


def test_a_pasted_report_marks_steps_done_and_records_them(page: Page, axe: Axe) -> None:
    page.goto(LESSON + "#build-loop")
    page.evaluate("() => window.localStorage.clear()")
    page.reload()
    expect(page.locator("#step-signature [data-step-status]")).to_be_hidden()
    page.get_by_label("Paste what").fill(report_with_steps_done({"signature", "answer"}))
    page.get_by_role("button", name="Mark my steps").click()
    status = page.locator(f"#build-report-{SLUG}")
    expect(status).to_contain_text("2 of 6 steps done")
    expect(page.locator("#step-signature [data-step-status]")).to_be_visible()
    expect(page.locator("#step-answer [data-step-status]")).to_be_visible()
    expect(page.locator("#step-principal [data-step-status]")).to_be_hidden()
    assert sorted(page.evaluate(f"() => window.mrtrProgress.load().steps['{SLUG}']")) == ["answer", "signature"]
    assert_no_axe_violations(page, axe)

    every = {step.id for step in BUILD.steps}
    # Widen htmx's settle delay (20 ms) so a page that records steps only at settle would lose them to the
    # reload below every time, not now and then.
    page.evaluate("() => { window.htmx.config.defaultSettleDelay = 5000; }")
    page.get_by_label("Paste what").fill(report_with_steps_done(every))
    page.get_by_role("button", name="Mark my steps").click()
    expect(status).to_contain_text(f"{len(every)} of {len(every)} steps done")
    # Reload the moment the page says so: the steps must already be saved (no settle delay in between).
    page.reload()
    for step in every:
        expect(page.locator(f"#step-{step} [data-step-status]")).to_be_visible()
    code = page.evaluate("() => window.mrtrProgress.exportCode(window.mrtrProgress.load())")
    imported = page.evaluate("(code) => window.mrtrProgress.importCode(code)", code)
    assert set(imported["data"]["steps"][SLUG]) == every


def test_without_javascript_the_report_form_posts_a_page(browser: Browser, base_url: str) -> None:
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    try:
        page = context.new_page()
        page.goto(LESSON)
        all_but_last = {step.id for step in BUILD.steps[:-1]}
        page.get_by_label("Paste what").fill(report_with_steps_done(all_but_last))
        page.get_by_role("button", name="Mark my steps").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Your checker report")
        expect(page.locator("body")).to_contain_text(f"{len(all_but_last)} of {len(BUILD.steps)} steps done")
        page.get_by_role("link", name="Back to the steps").click()
        expect(page.locator("#step-signature details[data-hint='1'] > summary")).to_be_visible()
    finally:
        context.close()


def test_every_page_of_the_lesson_is_axe_clean(browser: Browser, page: Page, base_url: str, axe: Axe) -> None:
    for url in (LESSON, f"/quiz/{SLUG}", f"{LESSON}/figures/build-loop"):
        page.goto(url)
        assert_no_axe_violations(page, axe)
        assert_no_js_page_accessible(browser, base_url + url, axe)
    page.goto(LESSON)
    page.get_by_label("Paste what").fill("not json")
    page.get_by_role("button", name="Mark my steps").click()
    expect(page.locator(f"#build-report-{SLUG}")).to_contain_text("that is not JSON")
    assert_no_axe_violations(page, axe)
    page.goto("/")
    expect(page.get_by_role("link", name="Build the ticket checks yourself", exact=True)).to_be_visible()
    assert_no_axe_violations(page, axe)
