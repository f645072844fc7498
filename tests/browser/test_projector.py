"""What the room sees, at the projector sizes (1024x768 and 1280x720) in both colour schemes: the class screen's
join view gives the QR code at least 40% of the screen's height and the address and code at least 32 px, no text
on it is under 16 px, and the presenter's control link is never on it (it lives folded away on the presenter's
own page, which a reload brings back)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.browser.helpers import assert_no_axe_violations, assert_text_at_least

PROJECTORS = {"1024x768": (1024, 768), "1280x720": (1280, 720)}


def start_from_demo(page: Page) -> str:
    page.goto("/demo")
    page.locator("details.all-slides > summary").click()
    page.locator('[data-action="start-class"]').click()
    expect(page.locator("h1")).to_have_text("Your class is open")
    return page.locator("[data-join-code]").get_attribute("data-join-code") or ""


@pytest.mark.parametrize("size", PROJECTORS.values(), ids=PROJECTORS.keys())
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_join_screen_reads_from_the_back_and_hides_the_control_link(
        page: Page, axe: Axe, size: tuple[int, int], scheme: str, tmp_path: Path) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.emulate_media(color_scheme=scheme)
    code = start_from_demo(page)
    # The presenter's own page: the link is there for them, folded away until they ask.
    link = page.locator("[data-control-link]")
    expect(link).to_be_hidden()
    page.get_by_text("Show your control link").click()
    expect(link).to_be_visible()
    expect(link).to_contain_text(f"/class/{code}/control/")
    secret = (link.text_content() or "").rsplit("/", 1)[-1]
    assert_no_axe_violations(page, axe)
    # A reload (the page answered a POST) shows the same page, link and all, and opens no other class.
    page.reload()
    expect(page).to_have_url(f"/class/{code}/presenter")
    page.get_by_text("Show your control link").click()
    expect(page.locator("[data-control-link]")).to_contain_text(secret)

    page.locator('[data-action="open-host"]').click()
    # The presenter page has a [data-join-code] too: wait for the class screen itself, and for its load event, so
    # nothing below reads the page being left or a document whose head stylesheet is still arriving (a browser
    # paints nothing before it, but a script can still measure the unstyled layout).
    expect(page).to_have_url(f"/class/{code}/host")
    page.wait_for_load_state("load")
    expect(page.locator("[data-join-code]")).to_have_text(code)
    assert secret not in page.content() and "/control/" not in page.content()
    qr = page.locator("svg.qr").bounding_box()
    assert qr and qr["height"] >= 0.4 * size[1] and qr["y"] + qr["height"] <= size[1], qr
    for selector in (".short-url", ".big-code strong"):
        px = page.locator(selector).evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert px >= 32, (selector, px)
        expect(page.locator(selector)).to_be_in_viewport()
    assert_text_at_least(page, 16, "main")
    page.screenshot(path=tmp_path / f"class-join-{size[0]}x{size[1]}-{scheme}.png")
    assert_no_axe_violations(page, axe)

    # Once a question is on, the join view steps back; the text stays at 16 px or more.
    page.locator('[data-action="push-question"]').click()
    expect(page.locator("[data-tally]")).to_be_visible()
    page.locator('[data-action="reveal"]').click()
    expect(page.locator("[data-explanation]")).to_be_visible()
    assert_text_at_least(page, 16, "main")
    page.screenshot(path=tmp_path / f"class-question-{size[0]}x{size[1]}-{scheme}.png")
    assert_no_axe_violations(page, axe)


def _join_view_reads_from_the_back(page: Page, size: tuple[int, int], state: str, qr_px: float,
                                   text_px: float) -> None:
    """The QR code is scannable and the address readable from the back of the room, all on screen, the page
    unscrolled; the round's heatmap takes only the width it needs (an empty one once took 780 of 1280 px)."""
    qr = page.locator("svg.qr").bounding_box()
    assert qr and min(qr["width"], qr["height"]) >= qr_px and qr["y"] + qr["height"] <= size[1], (state, qr)
    for selector in (".short-url", ".big-code strong"):
        px = page.locator(selector).evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert px >= text_px, (state, selector, px)
        expect(page.locator(selector)).to_be_in_viewport(ratio=1)
    assert page.evaluate("document.scrollingElement.scrollHeight") <= size[1], state
    heatmap = page.locator(".heatmap").bounding_box()
    assert heatmap and heatmap["width"] <= 0.6 * size[0], (state, heatmap)


@pytest.mark.parametrize("size", PROJECTORS.values(), ids=PROJECTORS.keys())
def test_the_qr_and_address_stay_large_during_a_question_a_reveal_and_a_round(
        page: Page, axe: Axe, size: tuple[int, int], tmp_path: Path) -> None:
    """Late joiners scan from the back of the room whatever the class is doing: the QR once fell from 302 px to
    76 px and the address to 16 px as soon as a question, a reveal or an attack round was on. Now it keeps 160 px
    (1024x768) or 180 px (1280x720) and the address 24 px; only a question and the round on at once, at 1024x768,
    where the longest explanation and a full heatmap leave no height (tests/browser/test_classroom_browser.py's
    worst case), brings them to 88 px and 18 px, still above the 76 px and 16 px of before."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    code = start_from_demo(page)
    page.locator('[data-action="open-host"]').click()
    expect(page).to_have_url(f"/class/{code}/host")
    page.wait_for_load_state("load")
    one = (160, 24) if size[0] < 1120 else (180, 24)
    both = (88, 18) if size[0] < 1120 else (180, 24)
    _join_view_reads_from_the_back(page, size, "idle", 0.4 * size[1], 32)
    page.locator('[data-action="open-round"]').click()
    expect(page.locator('[data-action="close-round"]')).to_be_visible()
    _join_view_reads_from_the_back(page, size, "round", *one)
    page.locator('[data-action="close-round"]').click()
    expect(page.locator('[data-action="open-round"]')).to_be_visible()
    page.locator('[data-action="push-question"]').click()
    expect(page.locator("[data-tally]")).to_be_visible()
    _join_view_reads_from_the_back(page, size, "question", *one)
    page.locator('[data-action="reveal"]').click()
    expect(page.locator("[data-explanation]")).to_be_visible()
    _join_view_reads_from_the_back(page, size, "reveal", *one)
    page.locator('[data-action="open-round"]').click()
    expect(page.locator('[data-action="close-round"]')).to_be_visible()
    _join_view_reads_from_the_back(page, size, "question and round", *both)
    assert_text_at_least(page, 16, "main")
    page.screenshot(path=tmp_path / f"class-round-{size[0]}x{size[1]}.png")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)


@pytest.mark.parametrize("size", PROJECTORS.values(), ids=PROJECTORS.keys())
def test_every_deck_slide_reads_at_16px_and_move_slides_use_the_width(
        page: Page, axe: Axe, size: tuple[int, int], tmp_path: Path) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto("/demo")
    deck = page.locator("[data-deck]")
    count = int(deck.get_attribute("data-count") or 0)
    for n in range(count):
        slide = page.locator(f'[data-slide="{n}"]')
        expect(slide).to_be_visible()
        expect(deck).to_have_attribute("data-fit", re.compile(r"\d"))
        assert_text_at_least(page, 16, "main")
        kind = slide.get_attribute("data-kind")
        if kind in ("move", "switch"):
            checks = slide.locator(".big-checks").bounding_box()
            assert checks and checks["x"] + checks["width"] > 0.85 * size[0], (n, checks)  # not the left 60% only
        page.keyboard.press("j")  # the raw JSON, read at the same size
        expect(slide.locator("details[data-raw]")).to_have_attribute("open", "")
        assert_text_at_least(page, 16, "main")
        if n == 8:
            page.screenshot(path=tmp_path / f"deck-raw-{size[0]}x{size[1]}.png")
        page.keyboard.press("j")
        expect(slide.locator("details[data-raw]")).not_to_have_attribute("open", "")
        if n in (0, 8):
            page.screenshot(path=tmp_path / f"deck-{n}-{size[0]}x{size[1]}.png")
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)
                assert_no_axe_violations(page, axe)
        page.keyboard.press("ArrowRight")
