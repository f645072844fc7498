"""Issue 15 in a real browser: the round trip's sequence diagram, the one check component, both themes.

The diagram is walked by mouse and by keyboard at a desktop width and a phone width; its text equivalent is
read with JavaScript off; every page is checked by axe in the light and the dark theme.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from mrtr import CHECK_TITLES
from tests.browser.helpers import LiveServer, assert_no_axe_violations
from tests.web.helpers import honest_move, stopped_move

EDITED = stopped_move("signature")

LESSON = "/lessons/when-the-server-needs-input"
FIGURE = "figure.roundtrip"


def stroke_width(page: Page, selector: str) -> str:
    return page.locator(selector).first.evaluate("e => getComputedStyle(e).strokeWidth")


def expect_current(page: Page, layout: str, step: int, answered: str) -> None:
    """Step `step` is announced and shown with its own arrows drawn strong (no other step's), `answered` marked."""
    figure = page.locator(FIGURE)
    expect(figure.locator("[data-step-status]")).to_contain_text(f"Step {step} of 6")
    expect(figure.locator(f".rt-step[data-step='{step}']")).to_be_visible()
    svg = f"{FIGURE} .rt-step[data-step='{step}'] .seq-{layout}"
    expect(page.locator(f"{svg} .seq-msg[data-seq-step='{step}']").first).to_be_visible()
    assert stroke_width(page, f"{svg} .seq-msg[data-seq-step='{step}'] .seq-line") == "3.5px"
    expect(page.locator(f"{svg} .seq-msg:not([data-seq-step='{step}'])")).to_have_count(0)
    expect(page.locator(f"{FIGURE} > .seq")).to_be_hidden()  # the whole tall diagram is for reading without JS
    assert stroke_width(page, f"{svg} [data-party='{answered}'] .seq-box") == "4px"


@pytest.fixture(params=[(1280, "wide", "narrow"), (390, "narrow", "wide")], ids=["1280px", "390px"])
def sized(request: pytest.FixtureRequest, page: Page) -> Iterator[tuple[Page, str]]:
    width, shown, hidden = request.param
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(LESSON)
    expect(page.locator(f"{FIGURE} .rt-step[data-step='1'] .seq-{shown}")).to_be_visible()
    expect(page.locator(f"{FIGURE} .rt-step[data-step='1'] .seq-{hidden}")).to_be_hidden()
    yield page, shown


def test_the_diagram_walks_by_mouse(sized: tuple[Page, str], axe: Axe) -> None:
    page, layout = sized
    figure = page.locator(FIGURE)
    expect_current(page, layout, 1, "A")
    for step, answered in [(2, "A"), (3, "client"), (4, "B"), (5, "B"), (6, "B")]:
        figure.get_by_role("button", name="Next step").click()
        expect_current(page, layout, step, answered)
    figure.get_by_role("button", name="Previous step").click()
    expect_current(page, layout, 5, "B")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= page.viewport_size["width"]
    expect(page.locator("ol.checks.is-animating")).to_have_count(0)  # axe must see the final colours
    assert_no_axe_violations(page, axe)


def test_the_diagram_walks_by_keyboard(sized: tuple[Page, str]) -> None:
    page, layout = sized
    figure = page.locator(FIGURE)
    figure.get_by_role("button", name="Next step").focus()
    page.keyboard.press("Enter")
    expect_current(page, layout, 2, "A")
    page.keyboard.press("ArrowRight")
    expect_current(page, layout, 3, "client")
    page.keyboard.press("End")
    expect_current(page, layout, 6, "B")
    page.keyboard.press("Home")
    expect_current(page, layout, 1, "A")
    expect(figure.locator("[data-step-status]")).to_have_attribute("aria-live", "polite")


def test_the_diagram_in_words_without_javascript(no_js_page: Page) -> None:
    page = no_js_page
    page.goto(LESSON)
    arrows = page.locator(f"{FIGURE} > .seq ol.seq-text > li")
    drawn = page.locator(f"{FIGURE} > .seq .seq-wide .seq-msg")
    expect(arrows).to_have_count(drawn.count())
    expect(arrows).to_have_count(10)
    expect(arrows.nth(0)).to_have_text(
        "Step 1: Client (bob) to Replica A via the load balancer: tools/call deploy · id 2. through the load balancer")
    expect(arrows.nth(1)).to_contain_text("result: input_required · id 2 (carries the new ticket)")
    expect(arrows.nth(4)).to_contain_text("tools/call deploy · id 3 (carries the ticket)")
    expect(arrows.filter(has_text="Replica B to Redeemed store")).to_have_count(1)
    expect(arrows.nth(8)).to_contain_text("id 4 (carries an edited ticket)")
    expect(arrows.nth(9)).to_contain_text("error -32602 · id 4")
    # every step of the figure is shown at once, and the svg is decoration for the list
    expect(page.locator(f"{FIGURE} .rt-step")).to_have_count(6)
    expect(page.locator(f"{FIGURE} > .seq .seq-wide")).to_have_attribute("aria-hidden", "true")
    expect(page.locator(f"{FIGURE} .rt-step-seq").first).to_be_hidden()  # the per-step drawings are for stepping


@pytest.mark.parametrize("motion", ["reduce", "no-preference"])
def test_the_ticket_travels_only_without_reduced_motion(browser: Browser, base_url: str, motion: str) -> None:
    context = browser.new_context(base_url=base_url, reduced_motion=motion, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(LESSON)
        page.locator(FIGURE).get_by_role("button", name="Next step").click()
        travel = page.locator(f"{FIGURE} .rt-step[data-step='2'] .seq-wide .seq-msg[data-seq-step='2'] .seq-travel")
        expect(travel).to_have_count(1)
        name = travel.evaluate("e => getComputedStyle(e).animationName")
        assert name == ("none" if motion == "reduce" else "seq-travel")
    finally:
        context.close()


def test_the_deck_draws_the_same_diagram(page: Page, axe: Axe) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto("/demo/step/5")
    slide = page.locator("[data-slide]:not([hidden])")
    expect(slide.locator(".seq")).to_have_attribute("data-current-step", "5")
    expect(slide.locator(".seq")).to_have_attribute("data-answered", "B")
    assert stroke_width(page, "[data-slide]:not([hidden]) .seq-wide [data-seq-step='5'] .seq-line") == "3.5px"
    expect(slide.locator("ol.seq-text li[aria-current='step']")).to_have_count(3)
    assert_no_axe_violations(page, axe)


def expect_one_check_drawing(page: Page, scope: str) -> None:
    """The six checks in CHECK_TITLES order, numbered 1..6, each with an icon and a word."""
    items = page.locator(f"{scope} li.check")
    expect(items).to_have_count(6)
    expect(items.locator(".check-n")).to_have_text([str(n) for n in range(1, 7)])
    expect(items.locator(".check-title")).to_have_text(list(CHECK_TITLES.values()))
    expect(items.locator("svg.check-icon")).to_have_count(6)
    for word in items.locator(".check-word").all_inner_texts():
        assert word.strip()


def test_one_check_drawing_on_every_page(page: Page) -> None:
    page.goto(LESSON)
    expect_one_check_drawing(page, f"{FIGURE} .rt-step[data-step='5']")
    cells = page.locator("table.matrix td.cell[data-state]")
    expect(cells.first.locator("svg.check-icon")).to_have_count(1)
    page.goto("/playground")
    page.locator(f"[data-move='{EDITED.slug}']").click()
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", EDITED.slug)
    expect_one_check_drawing(page, "#pg-result")
    expect(page.locator("#pg-result li.check[data-check='signature']")).to_have_attribute("data-state", "fail")
    page.goto("/demo/step/6")
    expect_one_check_drawing(page, "[data-slide]:not([hidden])")


PAGES = [LESSON, "/playground", "/demo/step/4", "/", "/check", "/join"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", PAGES)
def test_axe_in_both_themes(browser: Browser, base_url: str, axe: Axe, scheme: str, path: str) -> None:
    context = browser.new_context(base_url=base_url, color_scheme=scheme, reduced_motion="reduce")
    try:
        page = context.new_page()
        page.goto(path)
        expect(page.locator("main, [data-slide]").first).to_be_visible()
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        if path.startswith(("/demo", "/join")):
            assert background == "rgb(10, 10, 10)"  # the stage is dark in both themes
        else:
            assert background == ("rgb(18, 20, 24)" if scheme == "dark" else "rgb(255, 255, 255)")
        assert_no_axe_violations(page, axe)
    finally:
        context.close()


def test_the_home_page_shows_the_path_without_progress_when_javascript_is_off(no_js_page: Page,
                                                                               live_server: LiveServer) -> None:
    from web.site.content import get_content

    with live_server.app.app_context():
        lessons = get_content().lessons
    page = no_js_page
    page.goto("/")
    steps = page.locator("ol.path-steps > li.path-step")
    expect(steps).to_have_count(len(lessons) + 3)
    expect(steps.first.locator("[data-path-start]")).to_have_text("Start here")
    expect(page.locator("[data-path-progress]").first).to_be_hidden()
    expect(steps.locator("h3")).to_contain_text([lesson.title for lesson in lessons]
                                                + ["Break the ticket", "Check your own server", "Teach it"])


def test_the_home_page_shows_each_steps_progress(page: Page, live_server: LiveServer, axe: Axe) -> None:
    from web.site.content import get_content

    with live_server.app.app_context():
        first = get_content().lessons[0]
        ids = [s.id for s in first.sections]
    page.goto("/")
    expect(page.locator("[data-path-step='lesson']").first.locator("[data-path-text]")).to_have_text(
        f"0 of {len(ids)} sections read; quick check 0 correct of 0 answered")
    page.evaluate("""([slug, ids, move]) => localStorage.setItem("mrtr-lab:progress", JSON.stringify({v: 1, data: {
        sections: {[slug]: ids}, moves: {[move]: "completed"}, quiz: {}, quizTokens: {}}}))""",
                  [first.slug, ids, honest_move().slug])
    page.reload()
    lesson = page.locator(f"[data-path-step='lesson'][data-lesson='{first.slug}']")
    expect(lesson).to_have_attribute("data-path-state", "done")
    expect(lesson.locator("progress")).to_have_attribute("max", str(len(ids)))
    playground = page.locator("[data-path-step='playground']")
    expect(playground).to_have_attribute("data-path-state", "started")
    expect(playground.locator("[data-path-text]")).to_contain_text("1 of ")
    # "Start here" has moved on from the finished lesson to the first step not yet done
    expect(page.locator("[data-path-start]")).to_have_text("Carry on here")
    expect(lesson.locator("[data-path-start]")).to_have_count(0)
    expect(page.locator("[data-path-step]:not([data-path-state='done'])").first.locator("[data-path-start]")).to_be_visible()
    assert_no_axe_violations(page, axe)
