"""Presenter mode in a real browser: every slide by keyboard alone, deep links, replay, notes, kiosk."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from moves.catalog import load_moves
from tests.browser.helpers import assert_no_axe_violations
from tests.web.helpers import stopped_move
from web.demo.routes import DEPLOY_WORDS, SWITCHES
from web.playground.words import tell

MOVES = load_moves()
MOVE_SLUGS = [m.slug for m in MOVES]
STOLEN = stopped_move("principal", MOVES)
LATE = stopped_move("expiry", MOVES)
REPLAY = stopped_move("single-use", MOVES)

SWITCH_SLUGS = [key for key, *_ in SWITCHES]
ORDER = ([f"step-{n}" for n in range(1, 7)] + [f"move-{slug}" for slug in MOVE_SLUGS]
         + [f"switch-{slug}" for slug in SWITCH_SLUGS])
URLS = ([f"/demo/step/{n}" for n in range(1, 7)] + [f"/demo/move/{slug}" for slug in MOVE_SLUGS]
        + [f"/demo/switch/{slug}" for slug in SWITCH_SLUGS])


def visible_slide(page: Page):  # noqa: ANN201
    return page.locator("[data-slide]:not([hidden])")


def expect_slide(page: Page, anchor: str) -> None:
    expect(visible_slide(page)).to_have_count(1)
    expect(visible_slide(page)).to_have_attribute("id", anchor)


@pytest.fixture
def deck(page: Page) -> Page:
    page.emulate_media(reduced_motion="reduce")
    return page


def test_every_step_and_move_by_keyboard_alone(deck: Page, base_url: str, axe: Axe) -> None:
    deck.goto("/demo")
    expect_slide(deck, "step-1")
    assert_no_axe_violations(deck, axe)
    keys = ["ArrowRight", " ", "PageDown", "ArrowDown"]
    for i, anchor in enumerate(ORDER[1:]):
        deck.keyboard.press(keys[i % len(keys)])
        expect_slide(deck, anchor)
        expect(deck).to_have_url(base_url + URLS[i + 1])
        expect(visible_slide(deck).locator("h2")).to_be_focused()
    assert_no_axe_violations(deck, axe)  # a move slide, with its checks
    deck.keyboard.press("ArrowRight")  # the end: it stays on the last slide
    expect_slide(deck, ORDER[-1])
    for anchor in reversed(ORDER[:-1]):
        deck.keyboard.press("ArrowLeft")
        expect_slide(deck, anchor)
    deck.keyboard.press("Shift+Space")  # already at the start
    expect_slide(deck, "step-1")


def test_number_keys_jump_to_moves_and_reset_goes_home(deck: Page, base_url: str) -> None:
    deck.goto("/demo/step/4")
    for n, slug in enumerate(MOVE_SLUGS[:9], 1):
        deck.keyboard.press(str(n))
        expect_slide(deck, f"move-{slug}")
        expect(deck).to_have_url(f"{base_url}/demo/move/{slug}")
    if len(MOVE_SLUGS) < 9:
        deck.keyboard.press(str(len(MOVE_SLUGS) + 1))  # a number past the last move: nothing happens
        expect_slide(deck, f"move-{MOVE_SLUGS[min(len(MOVE_SLUGS), 9) - 1]}")
    deck.keyboard.press("r")
    expect_slide(deck, "step-1")
    deck.keyboard.press("End")
    expect_slide(deck, ORDER[-1])
    deck.keyboard.press("Home")
    expect_slide(deck, "step-1")
    deck.go_back()  # history follows the slides
    expect_slide(deck, ORDER[-1])


def test_j_reveals_and_hides_the_raw_json(deck: Page, axe: Axe) -> None:
    deck.goto("/demo/step/2")
    raw = visible_slide(deck).locator("details[data-raw]")
    expect(raw).not_to_have_attribute("open", "")
    deck.keyboard.press("j")
    expect(raw).to_have_attribute("open", "")
    expect(visible_slide(deck).locator("pre.json").first).to_be_visible()
    assert_no_axe_violations(deck, axe)
    deck.keyboard.press("ArrowRight")  # it stays revealed on the next slide
    expect(visible_slide(deck).locator("details[data-raw]")).to_have_attribute("open", "")
    deck.keyboard.press("j")
    expect(visible_slide(deck).locator("details[data-raw]")).not_to_have_attribute("open", "")


@pytest.mark.parametrize(("url", "anchor"), [
    ("/demo/step/3", "step-3"), (f"/demo/move/{STOLEN.slug}", f"move-{STOLEN.slug}"),
    ("/demo#step-5", "step-5"), (f"/demo#move-{LATE.slug}", f"move-{LATE.slug}"),
    ("/demo#move-2", f"move-{MOVE_SLUGS[1]}"),
])
def test_deep_links(deck: Page, base_url: str, url: str, anchor: str) -> None:
    deck.goto(url)
    expect_slide(deck, anchor)
    slug = anchor.split("-", 1)
    expect(deck).to_have_url(f"{base_url}/demo/{slug[0]}/{slug[1]}")


def _json(page: Page) -> list[str]:
    return page.locator("[data-slide]:not([hidden]) pre.json").all_text_contents()


@pytest.mark.parametrize("url", ["/demo/step/2", "/demo/step/4", f"/demo/move/{REPLAY.slug}"])
def test_two_loads_show_byte_identical_json(deck: Page, url: str) -> None:
    deck.goto(url)
    deck.keyboard.press("j")
    first = _json(deck)
    assert first and any('"t1.' in block for block in first)  # the real ticket is there
    deck.reload()
    deck.keyboard.press("j")
    expect(visible_slide(deck).locator("details[data-raw]")).to_have_attribute("open", "")
    assert _json(deck) == first


def test_without_javascript_the_deck_is_linked_pages(browser: Browser, base_url: str) -> None:
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    try:
        page = context.new_page()
        page.goto("/demo/step/6")
        expect_slide(page, "step-6")
        visible_slide(page).get_by_role("link", name=re.compile("Next")).click()
        expect_slide(page, f"move-{MOVE_SLUGS[0]}")
        expect(page).to_have_url(f"{base_url}/demo/move/{MOVE_SLUGS[0]}")
        visible_slide(page).get_by_role("link", name=re.compile("Previous")).click()
        expect_slide(page, "step-6")
    finally:
        context.close()


@pytest.fixture
def two_windows(browser: Browser, base_url: str) -> Iterator[tuple[Page, Page]]:
    context = browser.new_context(base_url=base_url, reduced_motion="reduce")
    try:
        yield context.new_page(), context.new_page()
    finally:
        context.close()


def test_speaker_notes_follow_the_deck_and_drive_it(two_windows: tuple[Page, Page], base_url: str,
                                                    axe: Axe) -> None:
    slides, notes = two_windows
    first, third = MOVES[0], MOVES[2]
    slides.goto(f"/demo/move/{first.slug}")
    notes.goto("/demo/notes")
    expect_slide(notes, f"move-{first.slug}")  # the notes asked the deck where it is
    expect(notes).to_have_url(f"{base_url}/demo/notes/move/{first.slug}")
    expect(visible_slide(notes)).to_contain_text(
        tell(first.note_for(first.expect, first.stops_at or None).text, DEPLOY_WORDS))  # told in deploy's words
    assert_no_axe_violations(notes, axe)
    slides.keyboard.press("3")
    expect_slide(notes, f"move-{third.slug}")
    expect(visible_slide(notes)).to_contain_text(tell(third.summary, DEPLOY_WORDS))
    notes.keyboard.press("ArrowLeft")
    expect_slide(slides, f"move-{MOVES[1].slug}")


def test_autoplay_advances_and_pauses(page: Page) -> None:
    page.emulate_media(reduced_motion="no-preference")
    page.clock.install()
    page.goto("/demo?autoplay=5")
    expect_slide(page, "step-1")
    expect(page.locator("[data-autoplay-status]")).to_be_visible()
    page.clock.run_for(5_100)
    expect_slide(page, "step-2")
    page.keyboard.press("p")
    expect(page.locator("[data-deck]")).to_have_attribute("data-autoplay-state", "paused")
    page.clock.run_for(20_000)
    expect_slide(page, "step-2")
    page.keyboard.press("p")
    page.clock.run_for(5_100)
    expect_slide(page, "step-3")


def test_autoplay_starts_paused_with_reduced_motion(deck: Page) -> None:
    deck.clock.install()
    deck.goto("/demo?autoplay=5")
    expect(deck.locator("[data-deck]")).to_have_attribute("data-autoplay-state", "paused")
    expect(deck.locator("[data-autoplay-text]")).to_contain_text("reduced motion")
    deck.clock.run_for(30_000)
    expect_slide(deck, "step-1")
    deck.locator("[data-autoplay-toggle]").click()
    deck.clock.run_for(5_100)
    expect_slide(deck, "step-2")
