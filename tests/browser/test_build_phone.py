"""The build lesson's editor and report where learners use them: a phone with the keyboard open (390x450), a phone
(390x844), a projector-sized laptop (1024x768) and a laptop (1280x720), in both themes.

The "Run the checks" bar never covers the editor being typed in, a 40-character line shows whole on a phone, and
nothing the learner reads or presses is small: text at least 14 px, controls at least 24 px, the run's report
included (one real run, on Pyodide, per test that needs it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.browser.helpers import assert_no_axe_violations, assert_targets_at_least, assert_text_at_least
from tests.lessons.buildkit import BUILD

LESSON = "/lessons/build-the-checks"
COLD = 90_000
SIZES = {"phone-keyboard": (390, 450), "phone": (390, 844), "projector": (1024, 768), "laptop": (1280, 720)}

#: After two animation frames the page has handled the scroll or focus (its bar is placed once a frame).
SETTLED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
OVERLAP = """(id) => {
  const bar = document.querySelector('.build-run-bar').getBoundingClientRect();
  const box = document.querySelector('#step-' + id + ' .code-editor').getBoundingClientRect();
  const bottom = window.visualViewport.offsetTop + window.visualViewport.height;
  const seen = (r) => r.bottom > 0 && r.top < bottom;
  return seen(bar) && seen(box) && bar.top < box.bottom && bar.bottom > box.top;
}"""


def open_lesson(page: Page, size: tuple[int, int]) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(LESSON)
    page.evaluate("() => window.localStorage.clear()")
    page.reload()
    expect(page.locator("[data-action='run-checks']")).to_be_visible()


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_the_run_bar_never_covers_the_editor_being_typed_in(page: Page, size: tuple[int, int]) -> None:
    open_lesson(page, size)
    bar = page.locator(".build-run-bar")
    for step in BUILD.steps:
        editor = page.locator(f"#step-{step.id} [data-editor]")
        editor.click()
        page.keyboard.press("ControlOrMeta+End")
        page.keyboard.type("\n# a note")
        page.evaluate(SETTLED)
        assert not page.evaluate(OVERLAP, step.id), (step.id, size)
        # Scrolling while typing (the keyboard stays up): wherever the editor goes, the bar is not over it.
        for dy in (-150, -150, -150, 600):
            page.evaluate(f"window.scrollBy(0, {dy})")
            page.evaluate(SETTLED)
            assert not page.evaluate(OVERLAP, step.id), (step.id, size, dy)
    # Away from the editors the bar is stuck at the bottom again, in view.
    page.locator("#build-loop, h2").first.click()
    page.locator(f"#step-{BUILD.steps[0].id} h3").scroll_into_view_if_needed()
    page.evaluate(SETTLED)
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-bar", "stuck")
    expect(bar).to_be_in_viewport()


def test_a_phone_shows_forty_characters_of_a_line_and_scrolls_the_rest(page: Page) -> None:
    open_lesson(page, SIZES["phone"])
    editor = page.locator("#step-signature [data-editor]")
    fits = page.evaluate("""(area) => {
      const style = getComputedStyle(area);
      const probe = document.createElement('span');
      probe.style.font = style.font;
      probe.style.whiteSpace = 'pre';
      probe.textContent = 'x'.repeat(40);
      document.body.append(probe);
      const forty = probe.getBoundingClientRect().width;
      probe.remove();
      const inner = area.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      return {forty, inner, size: parseFloat(style.fontSize), sideways: area.scrollWidth - area.clientWidth};
    }""", editor.element_handle())
    assert fits["forty"] <= fits["inner"], fits
    assert fits["size"] >= 14, fits
    # A longer line does not wrap (wrapped to column 0, a Python continuation looked dedented): it scrolls inside
    # the editor, and the page itself never scrolls sideways (tests/browser/test_phone_finish.py types one).
    assert editor.evaluate("a => getComputedStyle(a).whiteSpace") == "pre", fits
    # The highlighted copy under the text has the same lines, so the caret sits on its letters.
    heights = page.evaluate("""(area) => [area.scrollHeight,
      area.closest('.code-editor').querySelector('.code-editor-highlight').scrollHeight]""", editor.element_handle())
    assert heights[0] == heights[1], heights


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_after_a_run_every_text_is_14px_and_every_target_24px(page: Page, axe: Axe, size: tuple[int, int],
                                                              tmp_path: Path) -> None:
    open_lesson(page, size)
    page.locator("[data-action='run-checks']").click()
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-run-state", "done", timeout=COLD)
    expect(page.locator("[data-move]:not([hidden])")).not_to_have_count(0)
    assert_text_at_least(page, 14, ".figure-build")
    assert_targets_at_least(page, 24, ".figure-build")
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.locator("#build-run-title").scroll_into_view_if_needed()
        page.screenshot(path=tmp_path / f"build-report-{size[0]}x{size[1]}-{scheme}.png")
        assert_no_axe_violations(page, axe)
