"""htmx never needs an inline style here: with its indicator styles off (the htmx-config meta tag in
templates/_head_meta.html) and the indicator classes styled by static/css/site.css, the quick checks and the
playground raise no Content-Security-Policy violation, on load or as htmx requests come and go. Violations are
taken from the browser's own `securitypolicyviolation` events, whatever the console makes of them."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from web.site.content import load_course

LESSONS = [lesson.slug for lesson in load_course().lessons]
#: Every violation the document reports, kept where the test can read it.
RECORD = """window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(
  `${e.violatedDirective} ${e.sourceFile}:${e.lineNumber} ${e.sample}`));"""


def violations(page: Page) -> list[str]:
    found: list[str] = page.evaluate("window.__violations")
    return found


@pytest.mark.parametrize("slug", LESSONS)
def test_a_quick_check_raises_no_csp_violation_as_it_is_answered(page: Page, slug: str) -> None:
    page.add_init_script(RECORD)
    page.goto(f"/quiz/{slug}")
    page.wait_for_load_state("load")
    question = page.locator(".question").filter(has=page.locator("input[type=radio]")).first
    question.locator("input[type=radio]").first.check()
    question.locator("button[type=submit]").first.click()
    expect(question.locator(".feedback")).not_to_be_empty()
    assert page.locator("head style").count() == 0  # htmx inserted no stylesheet of its own
    assert violations(page) == []


def test_the_playground_raises_no_csp_violation_as_moves_and_switches_swap(page: Page) -> None:
    page.add_init_script(RECORD)
    page.goto("/playground")
    page.wait_for_load_state("load")
    for slug in ("tampered", "twice"):
        page.locator(f"[data-move='{slug}']").click()
        expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", slug)
    page.locator("#pg-single-use").click()
    expect(page).to_have_url(re.compile(r"[?&]single_use=0(&|$)"))
    assert page.locator("head style").count() == 0
    assert violations(page) == []
