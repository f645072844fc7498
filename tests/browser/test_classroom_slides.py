"""Slides that fit a projector: every slide at four screen sizes, the numbered checks, the raw JSON.

Each slide is opened by its own URL at 1024x768, 1280x720, 1280x800 and 1920x1080; once demo.js has
chosen its scale (`data-fit` on the deck) the page must not scroll either way, and the whole slide
(its last check and its Previous/Next links) is inside the window.
"""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from moves.catalog import load_moves
from tests.browser.helpers import assert_no_axe_violations
from tests.web.helpers import stopped_move
from web.demo.routes import SWITCHES

SIZES = [(1024, 768), (1280, 720), (1280, 800), (1920, 1080)]
MOVES = [m.slug for m in load_moves()]
REPLAY = stopped_move("single-use")
URLS = ([f"/demo/step/{n}" for n in range(1, 7)] + [f"/demo/move/{slug}" for slug in MOVES]
        + [f"/demo/switch/{key}" for key, *_ in SWITCHES])


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_slide_fits_without_scrolling(browser: Browser, base_url: str, width: int, height: int) -> None:
    context = browser.new_context(base_url=base_url, viewport={"width": width, "height": height},
                                  reduced_motion="reduce")
    try:
        page = context.new_page()
        for url in URLS:
            page.goto(url)
            expect(page.locator("[data-deck]")).to_have_attribute("data-fit", re.compile(r"^[01]\.\d{3}$"))
            size = page.evaluate("""() => ({
                sh: document.documentElement.scrollHeight, sw: document.documentElement.scrollWidth,
                ih: window.innerHeight, iw: window.innerWidth,
                fit: parseFloat(document.querySelector('[data-deck]').dataset.fit),
                bottom: Math.max(...[...document.querySelectorAll('[data-slide]:not([hidden]) .slide-nav, '
                    + '[data-slide]:not([hidden]) .big-checks li')].map(e => e.getBoundingClientRect().bottom)),
            })""")
            assert size["sh"] <= size["ih"] and size["sw"] <= size["iw"], (url, width, height, size)
            assert size["bottom"] <= size["ih"], (url, size)
            assert size["fit"] >= 0.5, f"{url} at {width}x{height} had to shrink to {size['fit']}: unreadable"
    finally:
        context.close()


def test_checks_are_numbered_in_one_column(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"/demo/move/{REPLAY.slug}")
    checks = page.locator("[data-slide]:not([hidden]) .big-checks li")
    expect(checks).to_have_count(6)
    expect(checks.locator(".check-n")).to_have_text([str(n) for n in range(1, 7)])  # the one check drawing (issue 15)
    expect(page.locator("[data-deck]")).to_have_attribute("data-fit", re.compile(r"^[01]\.\d{3}$"))
    boxes = page.evaluate("""() => [...document.querySelectorAll('[data-slide]:not([hidden]) .big-checks li')]
        .map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top]; })""")
    assert len({round(left) for left, _ in boxes}) == 1, "the checks are one column"
    tops = [top for _, top in boxes]
    assert tops == sorted(tops)
    expect(checks.last).to_have_attribute("data-check", "single-use")
    expect(checks.last).to_be_in_viewport()


def test_raw_json_fills_the_screen_and_scrolls_by_keyboard(page: Page, axe: Axe) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"/demo/move/{REPLAY.slug}")
    page.keyboard.press("j")
    body = page.locator("[data-slide]:not([hidden]) [data-raw-body]")
    expect(body).to_be_focused()
    size = float(page.locator("[data-slide]:not([hidden]) pre.json").first.evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)"))
    assert size >= 18, f"raw JSON at {size}px is too small for a projector"
    assert body.evaluate("e => e.scrollHeight > e.clientHeight")
    page.keyboard.press("PageDown")
    page.keyboard.press("ArrowDown")
    expect(page.locator("[data-slide]:not([hidden])")).to_have_attribute("id", f"move-{REPLAY.slug}")  # still here
    page.wait_for_function("() => document.querySelector('[data-slide]:not([hidden]) [data-raw-body]').scrollTop > 0")
    page.keyboard.press("End")
    expect(page.locator("[data-slide]:not([hidden])")).to_have_attribute("id", f"move-{REPLAY.slug}")
    assert_no_axe_violations(page, axe)
    page.keyboard.press("Escape")
    expect(page.locator("[data-slide]:not([hidden]) details[data-raw]")).not_to_have_attribute("open", "")
    page.keyboard.press("ArrowLeft")  # outside the JSON the arrows change slides again
    previous = MOVES[MOVES.index(REPLAY.slug) - 1]
    expect(page.locator("[data-slide]:not([hidden])")).to_have_attribute("id", f"move-{previous}")


def test_arrows_scroll_a_tall_notes_page_before_changing_slide(page: Page) -> None:
    page.set_viewport_size({"width": 1024, "height": 300})
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"/demo/notes/move/{REPLAY.slug}")
    assert page.evaluate("() => document.documentElement.scrollHeight > window.innerHeight")
    page.locator("[data-slide]:not([hidden]) h2").focus()
    page.keyboard.press("ArrowDown")
    page.wait_for_function("() => window.scrollY > 0")
    expect(page.locator("[data-slide]:not([hidden])")).to_have_attribute("id", f"move-{REPLAY.slug}")
    page.keyboard.press("End")  # End still jumps to the last slide
    expect(page.locator("[data-slide]:not([hidden])")).to_have_attribute("id", "switch-signature-off")
