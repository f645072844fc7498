"""The third lesson, "Beyond one question", in a real browser: at 390 px and 1280x720, in both themes, with and
without JavaScript, every live figure visible, no side scrolling, and no axe violation."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import assert_no_axe_violations
from tests.browser.nojs import assert_no_js_page_accessible
from web.site.content import load_course

SLUG = "beyond-one-question"
LESSON = f"/lessons/{SLUG}"
EXCHANGES = [s.id for s in load_course().lesson(SLUG).sections if s.widget == "exchange"]


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 720)], ids=["390px", "1280x720"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_lesson_reads_at_every_size_in_both_themes(page: Page, axe: Axe, width: int, height: int,
                                                       scheme: str) -> None:
    page.set_viewport_size({"width": width, "height": height})
    page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
    page.goto(LESSON)
    expect(page.get_by_role("heading", level=1)).to_have_text("Beyond one question")
    for section in EXCHANGES:
        verdict = page.locator(f"#figure-{section} [data-exchange-ok]")
        expect(verdict).to_have_attribute("data-exchange-ok", "true")
        expect(page.locator(f"#figure-{section} pre.json").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the JSON wraps inside its box
    assert_no_axe_violations(page, axe)


def test_the_home_page_lists_it_after_the_first_lesson(page: Page) -> None:
    page.goto("/")
    links = page.locator("[data-path] > li[data-path-step=lesson]")
    expect(links.nth(1)).to_have_attribute("data-lesson", SLUG)
    page.get_by_role("link", name="Beyond one question").first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Beyond one question")


def test_without_javascript_the_lesson_and_its_quiz_work(no_js_page: Page, browser: Browser, axe: Axe) -> None:
    page = no_js_page
    page.goto(LESSON)
    for section in EXCHANGES:
        expect(page.locator(f"#figure-{section} [data-exchange-ok]")).to_have_attribute("data-exchange-ok", "true")
    q = load_course().lesson(SLUG).questions[0]
    page.locator(f"#q-{q.id}").get_by_label(q.correct_choice.text, exact=True).check()
    page.locator(f"#q-{q.id}").get_by_role("button").click()
    expect(page.locator(f"#feedback-{q.id}")).to_contain_text("Correct.")
    assert_no_js_page_accessible(browser, page.url.split("#")[0].replace(f"/quiz/{SLUG}/{q.id}/answer", LESSON), axe)
