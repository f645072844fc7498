"""Progress kept in the browser: recorded from the lesson, the playground and the quiz, shown on the
home page, exported and imported as a checked code, and reset."""

from __future__ import annotations

import re

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser.helpers import assert_no_axe_violations
from tests.web.helpers import stopped_move
from web.site.content import load_course

SLUG = "when-the-server-needs-input"
LESSON = load_course().lesson(SLUG)
STOLEN = stopped_move("principal")


def stat(page: Page, name: str, lesson: bool = True):  # noqa: ANN201
    scope = page.locator(f'[data-progress-lesson="{SLUG}"]') if lesson else page.locator("[data-progress-panel]")
    return scope.locator(f'[data-stat="{name}"]')


def test_without_javascript_the_panel_says_so(browser: Browser, base_url: str) -> None:
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    try:
        page = context.new_page()
        page.goto("/")
        expect(page.locator("[data-progress-nojs]")).to_contain_text("needs JavaScript")
        expect(page.locator("[data-progress-ui]")).to_be_hidden()
    finally:
        context.close()


def test_progress_is_recorded_shown_exported_reset_and_imported(page: Page, axe: Axe) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto("/")
    expect(page.locator("[data-progress-nojs]")).to_be_hidden()
    expect(stat(page, "sections")).to_have_text("0")

    # Sections read: scroll the first three into view.
    page.goto(f"/lessons/{SLUG}")
    for section in LESSON.sections[:3]:
        page.locator(f"section#{section.id}").scroll_into_view_if_needed()
        page.wait_for_function("([l, s]) => (mrtrProgress.load().sections[l] || []).includes(s)",
                               arg=[SLUG, section.id])

    # A playground move.
    page.goto("/playground")
    page.locator(f'button[data-move="{STOLEN.slug}"]').click()
    expect(page.locator(f'[data-result="{STOLEN.slug}"]')).to_be_visible()
    page.wait_for_function("(slug) => mrtrProgress.load().moves[slug] === 'refused'", arg=STOLEN.slug)

    # Two quiz answers, one right and one wrong.
    page.goto(f"/quiz/{SLUG}")
    for q, right in zip(LESSON.questions[:2], (True, False), strict=True):
        choice = q.answer if right else next(c.id for c in q.choices if c.id != q.answer)
        item = page.locator(f"#q-{q.id}")
        item.get_by_label(q.choice(choice).text, exact=True).check()
        item.get_by_role("button", name=re.compile("Check answer")).click()
        expect(page.locator(f"#feedback-{q.id} [data-question]")).to_be_visible()
    page.wait_for_function("(l) => Object.keys(mrtrProgress.load().quiz[l] || {}).length === 2", arg=SLUG)

    page.goto("/")
    expect(stat(page, "sections")).to_have_text("3")
    expect(stat(page, "answered")).to_have_text("2")
    expect(stat(page, "correct")).to_have_text("1")
    expect(stat(page, "moves", lesson=False)).to_have_text("1")
    assert_no_axe_violations(page, axe)

    page.get_by_role("button", name="Show my progress code").click()
    code = page.locator("#progress-code-out")
    expect(code).to_have_value(re.compile(r"^mrtr-progress\.[A-Za-z0-9_-]+$"))
    saved = code.input_value()

    page.get_by_role("button", name="Reset my progress").click()
    page.get_by_role("button", name="Yes, erase it").click()
    expect(stat(page, "sections")).to_have_text("0")
    expect(stat(page, "moves", lesson=False)).to_have_text("0")

    field = page.get_by_label("Paste a progress code")
    status = page.locator("[data-progress-status]")
    for bad, message in [("hello", "not an MRTR Lab progress code"),
                         (saved[:-6], "Copy it again"),
                         (saved[:20] + ("A" if saved[20] != "A" else "B") + saved[21:], "Copy it again")]:
        field.fill(bad)
        page.get_by_role("button", name="Load this progress").click()
        expect(status).to_contain_text(message)
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(stat(page, "sections")).to_have_text("0")

    field.fill(saved)
    page.get_by_role("button", name="Load this progress").click()
    expect(status).to_have_text("Progress loaded.")
    expect(stat(page, "sections")).to_have_text("3")
    expect(stat(page, "correct")).to_have_text("1")
    expect(stat(page, "moves", lesson=False)).to_have_text("1")


def test_import_checks_the_checksum_and_the_version(page: Page) -> None:
    page.goto("/")
    result = page.evaluate("""() => {
      const good = mrtrProgress.exportCode({sections: {"a-b": ["c"]}, moves: {}, quiz: {}});
      const body = JSON.parse(atob(good.slice(14).replace(/-/g, "+").replace(/_/g, "/")));
      const forge = (obj) => "mrtr-progress." + btoa(JSON.stringify(obj)).replace(/\\+/g, "-")
        .replace(/\\//g, "_").replace(/=+$/, "");
      return {
        good: mrtrProgress.importCode(good),
        edited: mrtrProgress.importCode(forge({...body, data: {...body.data, moves: {"a-move": "completed"}}})),
        future: mrtrProgress.importCode(forge({...body, v: 2})),
        shape: mrtrProgress.importCode(forge({...body, data: {sections: 1, moves: {}, quiz: {}}})),
      };
    }""")
    assert result["good"] == {"data": {"sections": {"a-b": ["c"]}, "moves": {}, "quiz": {}}}
    assert "checksum" in result["edited"]["error"]
    assert "format 2" in result["future"]["error"]
    assert "valid progress" in result["shape"]["error"]


def test_no_copy_button_until_there_is_a_progress_code(page: Page) -> None:
    page.goto("/")
    expect(page.locator("[data-progress-ui]")).to_be_visible()
    copy = page.locator("#progress button.copy")
    expect(copy).to_be_hidden()
    page.get_by_role("button", name="Show my progress code").click()
    expect(page.locator("#progress-code-out")).to_be_visible()
    expect(copy).to_be_visible()
