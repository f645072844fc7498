"""The lesson in a real browser: the round-trip figure by mouse and by keyboard, with and without JS."""

from __future__ import annotations

import re

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Locator, Page, expect

from moves.catalog import load_moves
from tests.browser.helpers import assert_no_axe_violations
from tests.browser.nojs import assert_no_js_page_accessible

LESSON = "/lessons/when-the-server-needs-input"


def visible_step(page: Page):  # noqa: ANN201
    return page.locator("#round-trip .rt-step:visible")


def test_home_and_lesson_pass_axe(page: Page, axe: Axe) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto("/")
    expect(page.get_by_role("heading", level=1)).to_have_text("MRTR Lab")
    assert_no_axe_violations(page, axe)
    page.get_by_role("link", name="When the server needs input").first.click()
    expect(page).to_have_url(re.compile(LESSON + "$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("When the server needs input")
    # The card link is boosted: htmx swapped the body in, so app.js must have set the page up again.
    expect(page.locator("#main")).to_be_focused()
    expect(page.locator("#round-trip [data-stepper-controls]")).to_be_visible()
    assert_no_axe_violations(page, axe)


def test_round_trip_steps_with_the_mouse(page: Page, axe: Axe) -> None:
    # Reduced motion: the checks appear at once, so axe sees them at full contrast, never mid-fade.
    page.emulate_media(reduced_motion="reduce")
    page.goto(LESSON + "#round-trip")
    figure = page.locator("#round-trip figure.roundtrip")
    status = figure.locator("[data-step-status]")
    expect(figure.locator("[data-stepper-controls]")).to_be_visible()
    expect(visible_step(page)).to_have_count(1)
    expect(status).to_have_text(re.compile(r"^Step 1 of 6: bob calls deploy"))
    expect(figure).to_have_attribute("data-active-replica", "A")
    next_button = figure.get_by_role("button", name="Next step")
    for n, replica in ((2, "A"), (3, "client"), (4, "B"), (5, "B"), (6, "B")):
        next_button.click()
        expect(status).to_contain_text(f"Step {n} of 6")
        expect(visible_step(page)).to_have_attribute("data-step", str(n))
        expect(figure).to_have_attribute("data-active-replica", replica)
    expect(next_button).to_have_attribute("aria-disabled", "true")
    expect(visible_step(page).locator("ol.checks li[data-check=signature]")).to_have_attribute("data-outcome", "fail")
    figure.get_by_role("button", name="Previous step").click()
    expect(status).to_contain_text("Step 5 of 6")
    expect(visible_step(page).locator("ol.checks li[data-outcome=pass]")).to_have_count(6)
    assert_no_axe_violations(page, axe)


def step_to_replica_b(page: Page, motion: str) -> Locator:
    """Open the round trip and walk it by keyboard to step 5 (B checks the ticket); its checks."""
    page.emulate_media(reduced_motion=motion)
    page.goto(LESSON + "#round-trip")
    page.locator("#round-trip figure.roundtrip").get_by_role("button", name="Next step").focus()
    for _ in range(4):
        page.keyboard.press("Enter")
    return visible_step(page).locator("ol.checks")


def test_checks_light_up_one_by_one_and_a_key_skips_it(page: Page) -> None:
    page.clock.install()  # the page's timers run on a clock this test can stop
    checks = step_to_replica_b(page, "no-preference")
    expect(checks).to_have_class(re.compile("is-animating"))  # lighting up one after another
    expect(checks.locator("li.is-lit")).to_have_count(6)
    expect(checks).not_to_have_class(re.compile("is-animating"))
    page.clock.pause_at(page.evaluate("Date.now()") + 1)  # from here on, only a key can finish an animation
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowRight")  # back on step 5: the checks light up again...
    again = visible_step(page).locator("ol.checks")
    expect(again).to_have_class(re.compile("is-animating"))
    page.keyboard.press("Shift")  # ...and any key finishes the animation at once
    # the clock is stopped, so the animation cannot have finished on its own
    expect(again).not_to_have_class(re.compile("is-animating"))
    expect(again.locator("li.is-lit")).to_have_count(6)


def test_reduced_motion_shows_the_checks_at_once(page: Page) -> None:
    checks = step_to_replica_b(page, "reduce")
    assert "is-animating" not in (checks.get_attribute("class") or "")
    assert checks.locator("li.is-lit").count() == 6


def test_round_trip_steps_with_the_keyboard_only(page: Page) -> None:
    page.goto(LESSON + "#round-trip")
    figure = page.locator("#round-trip figure.roundtrip")
    next_button = figure.get_by_role("button", name="Next step")
    status = figure.locator("[data-step-status]")
    expect(status).to_have_attribute("aria-live", "polite")
    next_button.focus()
    page.keyboard.press("Enter")
    expect(status).to_contain_text("Step 2 of 6")
    page.keyboard.press("Space")
    expect(status).to_contain_text("Step 3 of 6")
    page.keyboard.press("ArrowRight")
    expect(status).to_contain_text("Step 4 of 6")
    page.keyboard.press("End")
    expect(status).to_contain_text("Step 6 of 6")
    page.keyboard.press("Home")
    expect(status).to_contain_text("Step 1 of 6")
    page.keyboard.press("Shift+Tab")  # back to "Previous step", still inside the figure
    expect(figure.get_by_role("button", name="Previous step")).to_be_focused()
    page.keyboard.press("ArrowLeft")  # already at the start: stays there
    expect(status).to_contain_text("Step 1 of 6")


def test_the_skip_link_moves_focus_to_the_content(page: Page) -> None:
    page.goto(LESSON)
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile("#main$"))


def test_minting_a_fresh_ticket_swaps_the_figure_in_place(page: Page, axe: Axe) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto(LESSON + "#ticket-anatomy")
    payload = page.locator("#figure-ticket-anatomy .tok-payload").first
    before = payload.inner_text()
    page.get_by_role("link", name="Mint a fresh ticket").click()
    expect(payload).not_to_have_text(before)
    expect(page).to_have_url(re.compile(LESSON))  # swapped in place, no navigation
    expect(page.get_by_role("link", name="Mint a fresh ticket")).to_be_focused()
    expect(page.locator("#announcer")).to_contain_text("Updated")
    assert_no_axe_violations(page, axe)


def test_copy_buttons_appear_with_javascript(page: Page) -> None:
    page.goto(LESSON + "#run-it-raw")
    button = page.locator("#run-it-raw button.copy").first
    expect(button).to_be_visible()


def test_without_javascript_every_step_is_listed(no_js_page: Page, browser: Browser, axe: Axe) -> None:
    page = no_js_page
    page.goto(LESSON)
    steps = page.locator("#round-trip .rt-step")
    expect(steps).to_have_count(6)
    for i in range(6):
        expect(steps.nth(i)).to_be_visible()
    expect(page.locator("#round-trip [data-stepper-controls]")).to_be_hidden()
    expect(page.locator("#run-it-raw button.copy").first).to_be_hidden()
    expect(page.locator("#checks-and-clock table.matrix tbody tr")).to_have_count(len(load_moves()))
    # The "fresh ticket" control is a plain link to the figure's own page.
    page.get_by_role("link", name="Mint a fresh ticket").click()
    expect(page).to_have_url(re.compile(r"/figures/ticket-anatomy$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Inside the ticket")
    assert_no_js_page_accessible(browser, page.url, axe)
    assert_no_js_page_accessible(browser, page.url.split("/figures/")[0], axe)


def test_error_page_passes_axe(page: Page, axe: Axe) -> None:
    response = page.goto("/no/such/page")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    assert_no_axe_violations(page, axe)


def test_the_check_matrix_shows_its_last_column_at_1280_px_without_side_scrolling(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(LESSON + "#checks-and-clock")
    wrap = page.locator("#checks-and-clock .table-wrap")
    last = wrap.locator("table.matrix thead th").last
    expect(last).to_have_text("Outcome")
    expect(wrap.locator("table.matrix thead th").nth(6)).to_have_text("Not already redeemed")
    sizes = wrap.evaluate("w => [w.scrollWidth, w.clientWidth]")
    assert sizes[0] <= sizes[1], f"the matrix scrolls sideways: {sizes}"
    box, frame = last.bounding_box(), wrap.bounding_box()
    assert box and frame and box["x"] + box["width"] <= frame["x"] + frame["width"] + 1
    for header in wrap.locator("table.matrix thead th").all():  # no header spills out of its cell
        assert header.evaluate("th => th.scrollWidth <= th.clientWidth")


def test_the_step_buttons_stay_in_view_at_every_step_and_the_live_caption_is_hidden(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.emulate_media(reduced_motion="reduce")
    page.goto(LESSON + "#round-trip")
    figure = page.locator("#round-trip figure.roundtrip")
    next_button = figure.get_by_role("button", name="Next step")
    previous = figure.get_by_role("button", name="Previous step")
    next_button.scroll_into_view_if_needed()
    status = figure.locator("[data-step-status]")
    for n in range(2, 7):
        next_button.click()
        expect(status).to_contain_text(f"Step {n} of 6")
        expect(next_button).to_be_in_viewport()
        expect(previous).to_be_in_viewport()
    # The live region speaks for screen readers only: it takes no room on screen.
    box = status.bounding_box()
    assert box is not None and box["width"] <= 1 and box["height"] <= 1
    expect(figure.locator("[data-step-count]")).to_have_text("Step 6 of 6")


def test_each_field_opens_its_explanation_by_pointer_and_keyboard(page: Page, axe: Axe) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto(LESSON + "#round-trip")
    step = visible_step(page)
    key = step.locator('pre.json a.field-key:text-is("\\"_meta\\"")')
    note = page.locator("#" + key.get_attribute("data-field-note"))
    expect(note).to_be_hidden()  # with JavaScript the notes wait to be opened
    key.click()
    expect(note).to_be_visible()
    expect(note).to_be_focused()
    expect(note).to_contain_text("Metadata for this one request")
    expect(key).to_have_attribute("aria-expanded", "true")
    assert_no_axe_violations(page, axe)
    page.keyboard.press("Escape")
    expect(note).to_be_hidden()
    expect(key).to_be_focused()
    # Keyboard only: the Authorization header explains where the principal comes from.
    header = step.locator("pre.http a.field-key")
    header.focus()
    page.keyboard.press("Enter")
    header_note = page.locator("#" + header.get_attribute("data-field-note"))
    expect(header_note).to_be_focused()
    expect(header_note).to_contain_text("Principal is the caller")
    header_note.get_by_role("button", name=re.compile("Close the note")).click()
    expect(header_note).to_be_hidden()


def test_the_replay_switch_lets_the_repeat_through_when_each_replica_keeps_its_own_store(page: Page) -> None:
    page.emulate_media(reduced_motion="reduce")
    page.goto(LESSON + "#round-trip")
    replay = page.locator("#round-trip .replay")
    expect(replay.locator(".replay-step").last).to_have_attribute("data-verdict", "refused")
    replay.get_by_label("Each replica keeps its own store").check()
    replay.get_by_role("button", name="Replay the retry").click()
    expect(replay.locator(".replay-step").last).to_have_attribute("data-verdict", "deployed")
    expect(replay.locator(".verdict")).to_contain_text("Deployed twice")
    expect(page).to_have_url(re.compile(LESSON + "#round-trip$"))  # swapped in place
    expect(replay.get_by_role("button", name="Replay the retry")).to_be_focused()


def test_without_javascript_the_fields_read_as_a_definition_list(no_js_page: Page) -> None:
    page = no_js_page
    # The field link below is a fragment jump, which site.css scrolls smoothly; a click on the replay
    # switch while that scroll still runs can land where the radio used to be. Reduced motion makes the
    # jump instant (site.css honours it), so the next click meets a page at rest, every run.
    page.emulate_media(reduced_motion="reduce")
    page.goto(LESSON)
    notes = page.locator("#rt-round-trip-step-2 dl.field-notes")
    expect(notes.locator("dt", has_text="resultType")).to_be_visible()
    expect(notes.locator("dd").first).to_be_visible()
    page.locator("#rt-round-trip-step-2 pre.json a.field-key", has_text="requestState").click()
    expect(page).to_have_url(re.compile(r"#rt-note-f2-1-\d+$"))
    page.locator("#rt-round-trip-replay").get_by_label("Each replica keeps its own store").check()
    page.locator("#rt-round-trip-replay").get_by_role("button", name="Replay the retry").click()
    expect(page).to_have_url(re.compile(r"/figures/round-trip\?stores=own#rt-round-trip-replay$"))
    expect(page.locator(".replay-step").last).to_have_attribute("data-verdict", "deployed")
