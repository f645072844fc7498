"""The smaller promises of the pages learners use most, in Chromium: the playground's address names the move on
show (a shared link shows that move), a replay that got through with single use off is drawn as the danger it
is, a switch applies as it flips (the clock offset once typing pauses), the quiz's questions stay inside their
boxes on a phone with targets of 24 px, and no page logs a Content-Security-Policy error."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import ConsoleMessage, Page, expect

from tests.browser.helpers import assert_no_axe_violations, assert_targets_at_least, assert_text_at_least
from web.site.content import load_course

COURSE = load_course()
LESSON = COURSE.lessons[0].slug


@pytest.fixture
def console(page: Page) -> Iterator[list[str]]:
    """Every console error and warning the page logs, CSP reports among them."""
    seen: list[str] = []

    def keep(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            seen.append(f"{page.url}: {message.text}")

    page.on("console", keep)
    yield seen


def test_the_address_follows_the_move_on_show_and_a_shared_link_shows_it(page: Page) -> None:
    page.goto("/playground")
    for slug in ("tampered", "stolen", "late", "twice"):
        page.locator(f"[data-move='{slug}']").click()
        expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", slug)
        expect(page).to_have_url(re.compile(rf"[?&]move={slug}(&|$)"))
    shared = page.url
    page.goto("about:blank")
    page.goto(shared)
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", "twice")


def test_a_replay_that_got_through_is_drawn_as_danger_and_switches_apply_as_flipped(page: Page, axe: Axe) -> None:
    page.emulate_media(reduced_motion="reduce")  # the checks light up at once, so axe sees their final colours
    page.goto("/playground")
    page.locator("[data-move='twice']").click()
    verdict = page.locator("#pg-verdict")
    expect(verdict).not_to_have_class("pg-verdict pg-verdict--got-through")
    page.locator("#pg-single-use").click()  # no "Apply": the flip replays the move on show
    expect(page).to_have_url(re.compile(r"single_use=0.*move=twice|move=twice.*single_use=0"))
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-got-through", "true")
    expect(verdict).to_have_class("pg-verdict pg-verdict--got-through")
    expect(page.locator("#pg-result [data-danger]")).to_contain_text("The attack got through")
    expect(page.locator("#pg-replayed")).to_contain_text("the attack got through")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
        assert_no_axe_violations(page, axe)
    # The honest retry completing is a success, not a danger.
    page.locator("[data-move='honest']").click()
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", "honest")
    expect(verdict).to_have_class("pg-verdict pg-verdict--completed")
    # The clock offset applies once typing pauses, without the button.
    page.locator("#pg-offset").fill("130")
    expect(page).to_have_url(re.compile(r"[?&]offset=130(&|$)"))
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-verdict", "refused")


@pytest.mark.parametrize("size", [(390, 844), (390, 450)], ids=["phone", "phone-keyboard"])
def test_the_quiz_fits_its_boxes_on_a_phone(page: Page, axe: Axe, size: tuple[int, int]) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"/quiz/{LESSON}")
    outside = page.evaluate("""() => [...document.querySelectorAll('.question')].flatMap(q => {
      const box = q.querySelector('fieldset').getBoundingClientRect();
      const title = q.querySelector('legend').getBoundingClientRect();
      return title.top < box.top + 1 || title.left < box.left || title.right > box.right
        ? [q.id] : []; })""")
    assert outside == []
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert_targets_at_least(page, 24, ".questions")
    assert_text_at_least(page, 14, ".questions")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_no_axe_violations(page, axe)


PAGES = ["/", f"/lessons/{LESSON}", "/lessons/build-the-checks", "/playground", "/playground?move=twice",
         "/demo", "/demo/notes", "/check", "/join", f"/quiz/{LESSON}", f"/embed/quiz/{LESSON}"]


def test_no_page_logs_a_content_security_policy_error(page: Page, console: list[str]) -> None:
    for path in PAGES:
        page.goto(path)
        page.wait_for_load_state("load")
    page.goto("/playground")  # and after htmx swaps
    page.locator("[data-move='twice']").click()
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", "twice")
    page.locator("#pg-single-use").click()
    expect(page).to_have_url(re.compile(r"[?&]single_use=0(&|$)"))
    page.goto(f"/quiz/{LESSON}")
    first = page.locator(".question").first
    first.locator("input[type=radio]").first.check()
    first.locator("button[type=submit]").click()
    expect(first.locator(".feedback")).not_to_be_empty()
    assert [line for line in console if "Content Security Policy" in line or "Content-Security-Policy" in line] == []
