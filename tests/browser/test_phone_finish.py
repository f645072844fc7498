"""Issue 47's phone finish, each item at the size where it was seen (390x844, 390x450 with the keyboard open):
lesson 1's check matrix reads as a card per move with the deciding cell on screen, the sequence drawing's labels
read at 12 px or more, touch targets are big enough, and every page changed passes axe in both themes."""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, ViewportSize, expect

from tests.browser.helpers import assert_no_axe_violations, assert_targets_at_least, assert_text_at_least

LESSON = "/lessons/when-the-server-needs-input"
PHONE: ViewportSize = {"width": 390, "height": 844}

#: Each visible narrow sequence drawing's text as drawn: its font size times the drawing's scale on screen.
_SEQ_LABEL_PX = """() => [...document.querySelectorAll('svg.seq-narrow')].filter(s => s.checkVisibility())
  .flatMap(s => { const scale = s.getBoundingClientRect().width / s.viewBox.baseVal.width;
    return [...s.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t =>
      [parseFloat(getComputedStyle(t).fontSize) * scale, t.textContent.trim()]); })"""


def test_the_check_matrix_is_a_card_per_move_with_the_deciding_cell_on_screen(page: Page, axe: Axe) -> None:
    page.set_viewport_size(PHONE)
    page.goto(LESSON)
    matrix = page.locator("#checks-and-clock table.matrix")
    expect(matrix).to_be_visible()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    # "Send it twice": the row is decided by Not already redeemed, the last of the six checks, once off-screen.
    row = matrix.locator("tr[id$='-twice']")
    deciding = row.locator("td.cell[data-check='single-use']")
    deciding.scroll_into_view_if_needed()
    expect(deciding).to_be_in_viewport(ratio=1)
    expect(deciding).to_contain_text("Failed")
    assert deciding.evaluate("c => getComputedStyle(c, '::before').content") == '"Not already redeemed"'
    assert deciding.evaluate("c => getComputedStyle(c, '::before').display") == "block"
    expect(row.locator("td.result")).to_be_in_viewport(ratio=1)
    # every cell of every card lies inside the screen, none clipped ("Not reached" once was)
    outside = matrix.evaluate("""m => [...m.querySelectorAll('tbody td, tbody th')].filter(c => {
        const r = c.getBoundingClientRect();
        return r.left < 0 || r.right > innerWidth || c.scrollWidth > c.clientWidth + 1;
      }).map(c => c.textContent.trim()).slice(0, 5)""")
    assert outside == []
    assert_text_at_least(page, 12, "#checks-and-clock .table-wrap")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)


def test_the_matrix_stays_a_table_on_a_wide_screen(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(LESSON)
    expect(page.locator("#checks-and-clock thead th").first).to_be_visible()
    cell = page.locator("#checks-and-clock td.cell").first
    assert cell.evaluate("c => getComputedStyle(c, '::before').content") == "none"  # the column head names it


def test_the_sequence_drawing_labels_read_at_12px_on_a_phone(page: Page) -> None:
    page.set_viewport_size(PHONE)
    page.emulate_media(reduced_motion="reduce")
    page.goto(LESSON)
    expect(page.locator("svg.seq-narrow").first).to_be_attached()
    page.wait_for_load_state("load")
    sizes = page.evaluate(_SEQ_LABEL_PX)
    assert sizes, "no narrow sequence drawing is shown at 390 px"
    small = [(round(px, 1), text) for px, text in sizes if px < 12 - 0.05]
    assert small == [], small


def test_contents_links_and_tool_radios_are_big_enough_to_tap(page: Page, axe: Axe) -> None:
    """WCAG 2.2 asks 24 px; the lesson's contents links (34 px) and the tool picker's radios (21 px) now give 44."""
    page.set_viewport_size(PHONE)
    page.goto(LESSON)
    links = page.locator(".toc a")
    expect(links.first).to_be_visible()
    heights = links.evaluate_all("as => as.map(a => a.getBoundingClientRect().height)")
    assert heights and min(heights) >= 44, heights
    page.goto("/playground")
    radios = page.locator(".pg-tool-picker input[type=radio]")
    expect(radios.first).to_be_visible()
    sizes = radios.evaluate_all("rs => rs.map(r => [r.offsetWidth, r.offsetHeight])")
    assert all(min(size) >= 24 for size in sizes), sizes
    assert_targets_at_least(page, 44, ".pg-tool-picker")
    # keyboard use intact: arrows move between the radios
    radios.first.focus()
    page.keyboard.press("ArrowDown")
    expect(radios.nth(1)).to_be_focused()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_url_mode_figure_shows_its_key_lines_without_sideways_scroll(page: Page, axe: Axe, scheme: str) -> None:
    """Nine of the figure's ten JSON blocks scrolled sideways at 390 px, cutting the -32021 message, the
    out-of-band URL and the final result: every line now wraps (hanging indent) and each key line is on screen
    from its first character to its last; each message's _meta is folded and opens by keyboard."""
    page.set_viewport_size(PHONE)
    page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
    page.goto("/lessons/beyond-one-question")
    figure = page.locator("#figure-url-mode")
    expect(figure.locator("[data-exchange-ok]")).to_have_attribute("data-exchange-ok", "true")
    sideways = figure.locator("pre").evaluate_all(
        "ps => ps.filter(p => p.checkVisibility() && p.scrollWidth > p.clientWidth + 1).length")
    assert sideways == 0
    for key in ("-32021", "This request needs the client capability", "/out-of-band/", '"resultType": "complete"',
                "connected billing"):
        line = figure.locator(".jl", has_text=key).first
        line.scroll_into_view_if_needed()
        box = line.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (key, box)
        assert line.evaluate("l => l.scrollWidth <= l.clientWidth + 1"), key
    meta = figure.locator("details.json-meta").first
    expect(meta.locator("pre")).to_be_hidden()
    meta.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(meta.locator("pre")).to_be_visible()
    expect(meta).to_contain_text("io.modelcontextprotocol/protocolVersion")
    assert_text_at_least(page, 12, "#figure-url-mode")
    assert_no_axe_violations(page, axe)


BUILD_LESSON = "/lessons/build-the-checks"
#: A Python statement whose second line continues the first, indented under it: longer than a phone's editor.
CONTINUED = ("    return hmac.compare_digest(expected_signature_for_this_payload,\n"
             "                               signature_the_client_sent_back_to_us)")


def test_a_continuation_line_keeps_its_indent_in_the_phone_editor(page: Page) -> None:
    """The editor wrapped long lines to column 0, so a continuation looked dedented: now a line never wraps; it
    scrolls inside the editor (the page does not scroll sideways), and the highlighted copy scrolls with it."""
    from tests.browser.helpers import replace_code

    page.set_viewport_size(PHONE)
    page.goto(BUILD_LESSON)
    editor = page.locator("#step-signature [data-editor]")
    expect(editor).to_be_visible()
    replace_code(page, "signature", CONTINUED)
    geometry = editor.evaluate("""a => { const hl = a.closest('.code-editor').querySelector('.code-editor-highlight');
        return {sideways: a.scrollWidth > a.clientWidth,
                highlight: hl.scrollWidth, area: a.scrollWidth}; }""")
    assert geometry["sideways"], geometry  # the long line is scrolled to, not wrapped under the first column
    assert geometry["highlight"] >= geometry["area"] - 1, geometry  # the copy underneath reaches as far
    assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    editor.evaluate("a => { a.scrollLeft = a.scrollWidth; a.dispatchEvent(new Event('scroll')); }")
    end = editor.evaluate("a => a.scrollLeft")
    assert end > 0
    expect(page.locator("#step-signature .code-editor-highlight")).to_have_js_property("scrollLeft", end)
    editor.evaluate("a => { a.scrollLeft = 120; a.dispatchEvent(new Event('scroll')); }")
    expect(editor).to_have_js_property("scrollLeft", 120)
    highlight = page.locator("#step-signature .code-editor-highlight")
    expect(highlight).to_have_js_property("scrollLeft", 120)


def test_after_a_run_the_stuck_run_bar_is_compact_with_the_keyboard_open(page: Page, axe: Axe) -> None:
    """390x450 (a phone with its keyboard up): the stuck bar took 175 px, 39% of the screen, after a run."""
    page.set_viewport_size({"width": 390, "height": 450})
    page.goto(BUILD_LESSON)
    page.locator("[data-action='run-checks']").click()
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-run-state", "done", timeout=90_000)
    page.locator("#step-signature h3").scroll_into_view_if_needed()
    expect(page.locator("[data-build-runner]")).to_have_attribute("data-bar", "stuck")
    bar = page.locator(".build-run-bar")
    expect(bar).to_be_in_viewport(ratio=1)
    box = bar.bounding_box()
    assert box and box["height"] <= 0.2 * 450, box
    assert_text_at_least(page, 14, ".build-run-bar")
    assert_targets_at_least(page, 44, ".build-run-bar")
    expect(page.locator("[data-run-summary]")).not_to_be_empty()  # the whole status is in the report
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)



def test_without_javascript_apply_switches_lands_on_the_replayed_move(no_js_page: Page) -> None:
    """The page reloaded at its top, 8,887 px above the result: the form's action carries the result's fragment."""
    page = no_js_page
    page.set_viewport_size(PHONE)
    page.goto("/playground?move=twice")
    page.locator("#pg-single-use").uncheck()
    page.get_by_role("button", name="Apply switches").click()
    expect(page).to_have_url(re.compile(r"/playground\?.*#pg-result$"))
    assert "move=twice" in page.url
    expect(page.locator("#pg-result")).to_be_in_viewport()
    assert page.evaluate("window.scrollY") > 0


def test_without_javascript_a_refused_report_keeps_the_pasted_text(no_js_page: Page, browser: Browser,
                                                                     axe: Axe) -> None:
    page = no_js_page
    page.set_viewport_size(PHONE)
    page.goto(BUILD_LESSON)
    pasted = '{"moves": [ not quite json'
    page.get_by_label("Paste what").fill(pasted)
    page.get_by_role("button", name="Mark my steps").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Your checker report")
    expect(page.locator("body")).to_contain_text("that is not JSON")
    expect(page.get_by_label("Paste what")).to_have_value(pasted)
    # axe cannot run with JavaScript off: the same post from a page whose own scripts are refused, both themes
    context = browser.new_context(base_url=page.url.split("/lessons/")[0])
    try:
        context.route("**/*.js", lambda route: route.abort())
        seen = context.new_page()
        seen.set_viewport_size(PHONE)
        seen.goto(BUILD_LESSON)
        seen.get_by_label("Paste what").fill(pasted)
        seen.get_by_role("button", name="Mark my steps").click()
        expect(seen.get_by_label("Paste what")).to_have_value(pasted)
        for scheme in ("light", "dark"):
            seen.emulate_media(color_scheme=scheme)
            assert_no_axe_violations(seen, axe)
    finally:
        context.close()
