"""Issue 24 in a real browser: what a room, a phone and a course author see.

Measured, not guessed: the computed size of every piece of text in the deck's diagram at projector sizes,
where the step-through's changed arrow and caption land after "Next step", and that no page scrolls sideways
on a 390 px phone.
"""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Locator, Page, expect

from tests.browser.helpers import assert_no_axe_violations

LESSON = "/lessons/when-the-server-needs-input"
FIGURE = "figure.roundtrip"

#: The smallest text a room can read on a projector (CSS px at the deck's size).
ROOM_MIN_PX = 16


def diagram_text_sizes(page: Page) -> list[tuple[str, float]]:
    """Every text of the shown slide's diagram with its rendered size: font size times the SVG's scale."""
    return page.evaluate("""() => {
      const svg = document.querySelector('[data-slide]:not([hidden]) .seq svg.seq-wide');
      const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      const texts = [...svg.querySelectorAll('text')].map(
        t => [t.textContent.trim(), parseFloat(getComputedStyle(t).fontSize) * scale]);
      const html = [...document.querySelectorAll('[data-slide]:not([hidden]) .seq :is(li, summary)')]
        .filter(e => e.getClientRects().length)
        .map(e => [e.textContent.trim(), parseFloat(getComputedStyle(e).fontSize)]);
      return texts.concat(html);
    }""")


CHECK_TEXT_JS = """([parts, minPx]) => [...document.querySelectorAll(
    `[data-slide]:not([hidden]) .big-checks :is(${parts})`)].map(
    e => [e.textContent.trim(), parseFloat(getComputedStyle(e).fontSize)]).filter(([, px]) => px < minPx)"""


def check_text_sizes(page: Page, parts: str = ".check-title, .check-word") -> list[tuple[str, float]]:
    """The shown slide's check titles and words (Passed, Failed, ...) drawn under ROOM_MIN_PX."""
    return [(text, round(px, 1)) for text, px in page.evaluate(CHECK_TEXT_JS, [parts, ROOM_MIN_PX])]


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720), (1920, 1080)], ids=["1024x768", "1280x720", "1920x1080"])
@pytest.mark.parametrize("step", range(1, 7))
def test_the_decks_diagram_reads_from_the_back_of_a_room(page: Page, size: tuple[int, int], step: int) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"/demo/step/{step}")
    slide = page.locator("[data-slide]:not([hidden])")
    expect(slide.locator(".seq-wide")).to_be_visible()
    expect(page.locator("#deck")).to_have_attribute("data-fit", re.compile(r"^\d"))  # demo.js has fitted the slide
    sizes = diagram_text_sizes(page)
    assert len(sizes) > 5
    small = [(text, round(px, 1)) for text, px in sizes if px < ROOM_MIN_PX]
    assert not small, f"diagram text under {ROOM_MIN_PX} px at {size}: {small}"
    # the checks beside or under it are not shrunk below it to make room, their words (Passed, ...) included
    assert check_text_sizes(page) == [], f"check text under {ROOM_MIN_PX} px at {size}"
    # the step's arrows are all drawn, and the slide still fits the screen
    assert slide.locator(".seq-wide .seq-msg").count() == slide.locator("ol.seq-text > li").count()
    assert page.evaluate("document.scrollingElement.scrollHeight") <= size[1]
    assert page.evaluate("document.scrollingElement.scrollWidth") <= size[0]


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720)], ids=["1024x768", "1280x720"])
def test_every_slides_checks_read_from_the_back_of_a_room(page: Page, size: tuple[int, int]) -> None:
    """Each check's name and its word (Passed, Failed, Not reached, ...) on every slide that shows the checks:
    at least ROOM_MIN_PX. The words were 14.5 px at 1280x720 (checks.css draws them at 0.85 of the name), and
    the names on the move and switch slides 15.9 px, once demo.js had scaled the slide to fit."""
    from moves.catalog import load_moves
    from web.demo.routes import SWITCHES

    page.emulate_media(reduced_motion="reduce")
    page.set_viewport_size({"width": size[0], "height": size[1]})
    words: set[str] = set()
    for url in ([f"/demo/step/{n}" for n in range(1, 7)] + [f"/demo/move/{m.slug}" for m in load_moves()]
                + [f"/demo/switch/{key}" for key, *_ in SWITCHES]):
        page.goto(url)
        expect(page.locator("#deck")).to_have_attribute("data-fit", re.compile(r"^\d"))
        assert check_text_sizes(page) == [], f"{url} at {size}"
        words |= set(page.locator("[data-slide]:not([hidden]) .big-checks .check-word").all_inner_texts())
    assert {"Passed", "Failed", "Not reached"} <= words, words  # the test saw every kind it is about


LABELS_IN_BOXES_JS = """svg => [...svg.querySelectorAll('.seq-party')].map(g => {
    const t = g.querySelector('.seq-party-name').getBoundingClientRect();
    const b = g.querySelector('.seq-box').getBoundingClientRect();
    // the box's own border (up to 4 units wide when its party answers) is drawn half inside it
    const m = 2 * b.width / g.querySelector('.seq-box').width.baseVal.value;
    return [g.dataset.party, t.left >= b.left + m && t.right <= b.right - m && t.top >= b.top + m
      && t.bottom <= b.bottom - m, [t.left, t.right, t.top, t.bottom].map(Math.round),
      [b.left, b.right, b.top, b.bottom].map(Math.round)]; })"""


@pytest.mark.parametrize("size", [(1024, 768), (1280, 720), (390, 844)], ids=["1024x768", "1280x720", "390x844"])
def test_every_lane_label_lies_inside_its_box(page: Page, size: tuple[int, int]) -> None:
    """The parties' names in the deck's diagram (and the lesson's, the same drawing) stay inside their boxes:
    "Redeemed store" was wider than its box at every size."""
    page.emulate_media(reduced_motion="reduce")
    page.set_viewport_size({"width": size[0], "height": size[1]})
    layout = "wide" if size[0] > 640 else "narrow"
    for url in [f"/demo/step/{n}" for n in range(1, 7)] + [LESSON]:
        page.goto(url)
        scope = "[data-slide]:not([hidden])" if url.startswith("/demo") else FIGURE  # the lesson: its shown step
        svg = page.locator(f"{scope} .seq svg.seq-{layout}:visible").first
        expect(svg).to_be_visible()
        labels = svg.evaluate(LABELS_IN_BOXES_JS)
        assert len(labels) == 5
        outside = [label for label in labels if not label[1]]
        assert outside == [], f"{url} at {size}: label [left, right, top, bottom] outside its box: {outside}"


def in_viewport(locator: Locator) -> bool:
    return locator.evaluate("""e => {
      const r = e.getBoundingClientRect();
      return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight
        && r.left >= 0 && r.right <= window.innerWidth;
    }""")


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["1280x720", "390x844"])
def test_after_next_step_the_changed_arrow_and_its_caption_are_on_screen(page: Page, size: tuple[int, int]) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(LESSON)
    figure = page.locator(FIGURE)
    layout = "wide" if size[0] > 640 else "narrow"
    controls = figure.locator("[data-stepper-controls]")
    expect(controls).to_be_visible()
    # the sticky controls stay one row: a small part of a phone's screen
    assert controls.bounding_box()["height"] <= 90
    for step in range(2, 7):
        figure.get_by_role("button", name="Next step").click()
        expect(figure.locator("[data-step-status]")).to_contain_text(f"Step {step} of 6")
        shown = f"{FIGURE} .rt-step[data-step='{step}']"
        for part in (f"{shown} .rt-step-title", f"{shown} .rt-caption"):
            assert in_viewport(page.locator(part)), f"{part} is off screen at {size}"
        arrows = page.locator(f"{shown} .seq-{layout} .seq-msg")
        assert arrows.count() >= 1
        for i in range(arrows.count()):
            assert in_viewport(arrows.nth(i)), f"arrow {i + 1} of step {step} is off screen at {size}"
            assert arrows.nth(i).get_attribute("data-seq-step") == str(step)
        # nothing hides under the sticky controls
        assert page.locator(f"{shown} .rt-step-title").bounding_box()["y"] >= controls.bounding_box()["y"] + \
            controls.bounding_box()["height"] - 1
        expect(page.locator(f"{shown} .seq-{layout} .seq-msg .seq-line").first).to_have_css("stroke-width", "3.5px")


PAGES = [
    "/", LESSON, "/lessons/build-the-checks", "/playground", "/quiz/when-the-server-needs-input",
    "/check", "/demo", "/demo/step/4", "/embed/quiz/when-the-server-needs-input",
]


@pytest.mark.parametrize("path", PAGES)
def test_no_page_scrolls_sideways_on_a_phone(page: Page, path: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(path)
    expect(page.locator("body")).to_be_visible()
    page.wait_for_load_state("networkidle")
    wide = page.evaluate("document.scrollingElement.scrollWidth")
    culprits = page.evaluate("""() => [...document.querySelectorAll('body *')].filter(e => {
        const r = e.getBoundingClientRect(); return r.width && r.right > innerWidth + 1
          && getComputedStyle(e).position !== 'fixed' && !e.closest('pre, .table-scroll, [data-scroll-x]');
      }).slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""")
    assert wide <= 390, f"{path} is {wide} px wide at 390 px: {culprits}"


def test_home_progress_counts_the_build_steps_the_checker_verified(page: Page) -> None:
    from web.build.routes import load_build
    from web.site.content import load_course

    lesson = next(le for le in load_course().lessons if le.slug == "build-the-checks")
    build = load_build(lesson.directory)
    assert build is not None
    ids = [s.id for s in lesson.sections]
    steps = [s.id for s in build.steps]
    page.goto("/")
    path = page.locator(f"[data-path-step='lesson'][data-lesson='{lesson.slug}']")
    expect(path.locator("[data-path-text]")).to_contain_text(f"0 of {len(steps)} build steps verified by the checker")
    # every section read, but no step verified: the lesson is not done
    page.evaluate("""([slug, ids, done]) => localStorage.setItem("mrtr-lab:progress", JSON.stringify({v: 1, data: {
        sections: {[slug]: ids}, moves: {}, quiz: {}, quizTokens: {}, steps: {[slug]: done}}}))""",
                  [lesson.slug, ids, steps[:2]])
    page.reload()
    expect(path.locator("[data-path-text]")).to_contain_text(f"2 of {len(steps)} build steps verified by the checker")
    expect(path).to_have_attribute("data-path-state", "started")
    expect(path.locator("progress")).to_have_attribute("max", str(len(ids) + len(steps)))
    page.evaluate("""([slug, ids, done]) => localStorage.setItem("mrtr-lab:progress", JSON.stringify({v: 1, data: {
        sections: {[slug]: ids}, moves: {}, quiz: {}, quizTokens: {}, steps: {[slug]: done}}}))""",
                  [lesson.slug, ids, steps])
    page.reload()
    expect(path).to_have_attribute("data-path-state", "done")


def test_a_switch_change_says_beside_the_switch_that_the_move_was_played_again(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto("/playground?move=twice")
    switch = page.locator("#pg-single-use")
    switch.scroll_into_view_if_needed()
    switch.uncheck()
    replayed = page.locator("#pg-replayed")
    expect(replayed).to_contain_text("“Send it twice” played again under these switches")
    expect(replayed).to_be_in_viewport()
    expect(page.locator("#pg-single-use")).to_be_focused()


def test_copied_is_said_in_words(page: Page) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(LESSON)
    button = page.locator("#round-trip ~ * .copy, .anatomy .copy").first
    button.click()
    expect(button).to_have_attribute("data-copied", "true")
    assert "copied" in button.evaluate("b => getComputedStyle(b, '::after').content")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_ticket_claims_never_break_a_short_value_on_a_phone(page: Page, theme: str) -> None:
    page.emulate_media(color_scheme=theme)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(LESSON)
    codes = page.locator(".anatomy table.claims td code")
    expect(codes.first).to_be_visible()
    for i in range(codes.count()):
        code = codes.nth(i)
        text = code.inner_text()
        if len(text) <= 30:  # a short value sits on one line
            assert code.evaluate("e => e.getClientRects().length") == 1, text


AXE_PAGES = [
    ("/", None),
    (LESSON, "document.querySelector('figure.roundtrip [data-step-next]').click()"),
    ("/lessons/build-the-checks", None),
    ("/quiz/when-the-server-needs-input", None),
    ("/playground?move=twice&single_use=0", None),
    ("/check", None),
]


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize(("path", "action"), AXE_PAGES, ids=[p for p, _ in AXE_PAGES])
def test_changed_pages_pass_axe_in_both_themes(page: Page, axe: Axe, path: str, action: str | None,
                                                theme: str) -> None:
    page.emulate_media(color_scheme=theme, reduced_motion="reduce")
    page.goto(path)
    page.wait_for_load_state("networkidle")
    if action:
        page.evaluate(action)
        expect(page.locator("figure.roundtrip [data-step-status]")).to_contain_text("Step 2 of 6")
    expect(page.locator("ol.checks.is-animating")).to_have_count(0)
    assert_no_axe_violations(page, axe)


OVERLAPS_JS = """svg => { const bad = [];
  for (const g of svg.querySelectorAll('.seq-msg')) { const line = g.querySelector('line'); if (!line) continue;
    const y = +line.getAttribute('y1'), x2 = +line.getAttribute('x2');
    for (const t of g.querySelectorAll('text')) { const b = t.getBBox();
      if (b.x < x2 && x2 < b.x + b.width && b.y < y + 5.5 && y - 5.5 < b.y + b.height) bad.push(t.textContent); } }
  return bad; }"""


@pytest.mark.parametrize(("width", "layout"), [(1280, "wide"), (390, "narrow")])
def test_no_label_of_the_diagram_sits_on_an_arrowhead(no_js_page: Page, width: int, layout: str) -> None:
    page = no_js_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(LESSON)
    svg = page.locator(f"{FIGURE} > .seq svg.seq-{layout}")
    expect(svg).to_be_visible()
    assert svg.evaluate(OVERLAPS_JS) == []
    if layout == "wide":
        for step in range(1, 7):
            page.goto(f"/demo/step/{step}")
            assert page.locator("[data-slide]:not([hidden]) svg.seq-wide").evaluate(OVERLAPS_JS) == []
