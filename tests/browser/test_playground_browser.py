"""The playground in a real Chromium: every move, the switches, the custom move, keyboard only,
JavaScript off, and axe after every swap. Playwright's `expect` does all the waiting."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, Route, expect

from moves.catalog import holds
from moves.target import Outcome
from mrtr import CHECK_TITLES, CHECKS
from mrtr.errors import FROZEN_TICKET_MESSAGE
from tests.browser.helpers import assert_no_axe_violations
from tests.web.helpers import honest_move, stopped_move
from web.site.content import load_course

COURSE_MOVES = load_course().moves
MOVES = [m.slug for m in COURSE_MOVES]
BY_SLUG = {m.slug: m for m in COURSE_MOVES}
#: the check each move fails first with the default switches (None: no check fails), from moves.toml
STOPS_AT = {m.slug: m.stops_at or None for m in COURSE_MOVES}
HONEST = honest_move(COURSE_MOVES)
EDITED = stopped_move("signature", COURSE_MOVES)
STOLEN = stopped_move("principal", COURSE_MOVES)
LATE = stopped_move("expiry", COURSE_MOVES)
REPLAY = stopped_move("single-use", COURSE_MOVES)


def expected(stops_at: str | None) -> dict[str, str]:
    out, reached = {}, True
    for name in CHECKS:
        out[name] = "pass" if reached and name != stops_at else ("fail" if reached else "skipped")
        reached = reached and name != stops_at
    return out


def settled(page: Page) -> None:
    """Wait until the checks have finished lighting up (axe must see the final colours)."""
    expect(page.locator("ol.checks.is-animating")).to_have_count(0)


def assert_checks(page: Page, outcomes: dict[str, str]) -> None:
    for name, outcome in outcomes.items():
        expect(page.locator(f"#pg-result ol.checks li[data-check='{name}']")).to_have_attribute(
            "data-outcome", outcome)


def play(page: Page, slug: str) -> None:
    page.locator(f"[data-move='{slug}']").click()
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", slug)
    expect(page.locator("#pg-verdict")).to_be_focused()


@pytest.fixture
def playground(page: Page, axe: Axe) -> Iterator[Page]:
    page.goto("/playground")
    expect(page.locator("[data-move]")).to_have_count(len(MOVES))
    assert_no_axe_violations(page, axe)
    yield page


def test_every_move_lights_up_the_right_checks(playground: Page, axe: Axe) -> None:
    page = playground
    for slug in MOVES:
        play(page, slug)
        verdict = page.locator("#pg-result [data-verdict]").get_attribute("data-verdict") or ""
        # the engine's verdict is one a sound server may give ("not-done" moves: a refusal or a fresh question)
        assert holds(BY_SLUG[slug].expect, Outcome(verdict))[0], (slug, verdict)
        assert_checks(page, expected(STOPS_AT[slug] if verdict in ("refused", "asked-again") else None))
        if STOPS_AT[slug] and verdict == "refused":
            expect(page.locator("#pg-verdict")).to_contain_text(f"refused at {CHECK_TITLES[STOPS_AT[slug]]}")
            # a ticket failure is the frozen error; an answer that does not fit its question names the key
            wire = "Invalid inputResponses: 'confirm'" if STOPS_AT[slug] == "answer" else FROZEN_TICKET_MESSAGE
            expect(page.locator(".pg-answer pre")).to_contain_text(wire)
        expect(page.locator("#pg-status")).to_contain_text(page.locator("#pg-verdict strong").inner_text())
        expect(page.locator(f"[data-note='{slug}']")).to_be_visible()
        expect(page).to_have_url(re.compile(rf"/playground\?.*move={slug}$"))
        settled(page)
        assert_no_axe_violations(page, axe)


def test_stolen_move_shows_alices_token_and_the_reason(playground: Page) -> None:
    play(playground, STOLEN.slug)
    expect(playground.locator(".pg-sent .pg-bearer")).to_have_text("Authorization: Bearer alice-token")
    expect(playground.locator("[data-first-failure='principal']")).to_contain_text("caller is 'alice'")
    expect(playground.locator(".pg-log")).to_contain_text("requestState rejected at “Principal is the caller”")


def test_single_use_off_lets_a_replay_through(playground: Page, axe: Axe) -> None:
    page = playground
    page.get_by_label("Single use").uncheck()
    expect(page).to_have_url(re.compile(r"single_use=0"))
    expect(page.get_by_label("Single use")).not_to_be_checked()
    assert_no_axe_violations(page, axe)
    play(page, REPLAY.slug)
    expect(page.locator("#pg-verdict")).to_contain_text("deployed to staging")
    assert_checks(page, {**expected(None), "single-use": "skipped"})
    settled(page)
    assert_no_axe_violations(page, axe)


def test_switching_keeps_the_current_move_and_replays_it(playground: Page) -> None:
    page = playground
    play(page, REPLAY.slug)
    expect(page.locator("#pg-result [data-verdict]")).to_have_attribute("data-verdict", "refused")
    page.get_by_label("Single use").uncheck()
    expect(page.locator("#pg-result [data-verdict]")).to_have_attribute("data-verdict", "completed")
    expect(page).to_have_url(re.compile(rf"single_use=0.*move={REPLAY.slug}"))


def test_sealed_mode_hides_the_payload(playground: Page, axe: Axe) -> None:
    page = playground
    expect(page.locator(".pg-round-one [data-payload='decoded']")).to_be_visible()
    page.get_by_label("Sealed tickets").check()
    expect(page.locator(".pg-round-one .pg-token")).to_have_text(re.compile(r"^s1\."))
    expect(page.locator("[data-payload='decoded']")).to_have_count(0)
    expect(page.locator(".pg-round-one [data-payload='sealed']")).to_be_visible()
    assert_no_axe_violations(page, axe)
    play(page, EDITED.slug)
    assert_checks(page, expected("signature"))
    expect(page.locator("li[data-check='signature'] .check-detail")).to_contain_text("authentication tag")
    expect(page.locator("#pg-result [data-payload='decoded']")).to_have_count(0)
    settled(page)
    assert_no_axe_violations(page, axe)


def test_removing_the_signature_check_lets_an_edited_ticket_through(playground: Page, axe: Axe) -> None:
    page = playground
    page.get_by_label("Remove the signature check").check()
    expect(page).to_have_url(re.compile(r"no_signature=1"))
    play(page, EDITED.slug)
    expect(page.locator("#pg-verdict")).to_contain_text(f"deployed to {EDITED.edit_value}")
    assert_checks(page, {**expected(None), "signature": "skipped"})
    settled(page)
    assert_no_axe_violations(page, axe)


def test_clock_offset_expires_the_honest_retry(playground: Page) -> None:
    page = playground
    page.get_by_label("Clock offset (seconds)").fill("150")
    page.get_by_role("button", name="Apply switches").click()
    expect(page).to_have_url(re.compile(r"offset=150"))
    play(page, HONEST.slug)
    assert_checks(page, expected("expiry"))


def test_custom_move(playground: Page, axe: Axe) -> None:
    page = playground
    ticket = page.locator(".pg-round-one .pg-token").inner_text()
    expect(page.get_by_label("Ticket (requestState)")).to_have_value(ticket)
    # bad JSON: a specific message in place, focused, and nothing sent
    page.get_by_label("Arguments (JSON)").fill('{"env": "staging"')
    page.get_by_role("button", name="Send my retry").click()
    error = page.locator("#pg-result [data-error]")
    expect(error).to_contain_text("Arguments is not valid JSON")
    expect(error).to_be_focused()
    assert_no_axe_violations(page, axe)
    # a hostile env, sent with alice's token: shown escaped, refused at the principal check
    page.get_by_label("Arguments (JSON)").fill('{"env": "<img src=x onerror=alert(1)>"}')
    page.get_by_label("Token", exact=True).select_option("alice-token")
    page.get_by_role("button", name="Send my retry").click()
    expect(page.locator("#pg-result [data-result='custom']")).to_be_visible()
    expect(page.locator("#pg-verdict")).to_be_focused()
    assert_checks(page, expected("principal"))
    expect(page.locator("#pg-sent-json")).to_contain_text("<img src=x onerror=alert(1)>")
    expect(page.locator("#pg-result img")).to_have_count(0)
    settled(page)
    assert_no_axe_violations(page, axe)
    # bob, in time, with the prefilled ticket and arguments: deployed
    page.get_by_label("Arguments (JSON)").fill('{"env": "staging"}')
    page.get_by_label("Token", exact=True).select_option("bob-token")
    page.get_by_label("Time (seconds after minting)").fill("30")
    page.get_by_role("button", name="Send my retry").click()
    expect(page.locator("#pg-verdict")).to_contain_text("deployed to staging")
    assert_checks(page, expected(None))


def test_keyboard_only(playground: Page) -> None:
    page = playground
    for _ in range(80):  # Tab through the page until the first move button has focus
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.dataset.move") == HONEST.slug:
            break
    else:
        pytest.fail("Tab never reached the honest move button")
    page.keyboard.press("Enter")
    expect(page.locator("#pg-verdict")).to_be_focused()
    expect(page.locator("#pg-verdict")).to_contain_text("deployed to staging")
    # a switch, with the keyboard: focus stays on it after the widget is swapped
    page.get_by_label("Sealed tickets").focus()
    page.keyboard.press("Space")
    expect(page).to_have_url(re.compile(r"sealed=1"))
    expect(page.get_by_label("Sealed tickets")).to_be_focused()
    # a move pressed while a switch change is still in flight waits for it: the switch's answer is held
    # back until the move has been pressed, so the race the learner could hit happens every time
    held: list[Route] = []
    switched_off = re.compile(r"/playground\?.*single_use=0&sealed=")  # the checkbox sends no "1" after the "0"
    page.route(switched_off, lambda route: held.append(route))
    page.evaluate("window.mrtrSameDocument = true")
    page.get_by_label("Single use").focus()
    with page.expect_request(switched_off):
        page.keyboard.press("Space")
    expect(page.locator("#pg-widget")).to_have_attribute("aria-busy", "true")
    page.locator(f"[data-move='{REPLAY.slug}']").focus()
    page.keyboard.press("Space")
    expect(page.locator("#pg-widget")).to_have_attribute("data-queued", REPLAY.slug)
    assert len(held) == 1, "the switch request was not held back"
    held[0].continue_()
    expect(page.locator("#pg-result [data-result]")).to_have_attribute("data-result", REPLAY.slug)
    expect(page.locator("#pg-verdict")).to_be_focused()
    expect(page.locator("#pg-verdict")).to_contain_text("deployed to staging")  # single use off: not stale
    expect(page.locator("#pg-widget")).not_to_have_attribute("aria-busy", "true")
    assert page.evaluate("window.mrtrSameDocument === true"), "the move navigated the whole page"
    expect(page).to_have_url(re.compile(rf"single_use=0.*move={REPLAY.slug}"))


def test_a_switch_flipped_the_moment_the_widget_is_swapped_still_reaches_the_server(page: Page) -> None:
    """Two switches flipped back to back: the second lands in the widget the first one's answer swapped in,
    before htmx would settle it. htmx wires up swapped-in forms at settle; widened here from 20 ms to a
    minute, a widget that settled late would show the second switch flipped and never send it."""
    page.goto("/playground")
    expect(page.locator("[data-move]")).to_have_count(len(MOVES))
    page.evaluate("() => { window.htmx.config.defaultSettleDelay = 60000; }")
    page.get_by_label("Sealed tickets").check()
    expect(page).to_have_url(re.compile(r"sealed=1"))
    with page.expect_response(re.compile(r"/playground\?.*single_use=0")) as switched:
        page.get_by_label("Single use").uncheck()
    assert switched.value.ok
    expect(page).to_have_url(re.compile(r"single_use=0.*sealed=1|sealed=1.*single_use=0"))
    expect(page.get_by_label("Sealed tickets")).to_be_checked()
    expect(page.get_by_label("Single use")).not_to_be_checked()


def test_reduced_motion_shows_the_checks_at_once(browser: Browser, base_url: str) -> None:
    context = browser.new_context(base_url=base_url, reduced_motion="reduce")
    try:
        page = context.new_page()
        page.goto("/playground")
        page.locator(f"[data-move='{LATE.slug}']").click()
        expect(page.locator("#pg-verdict")).to_be_focused()
        expect(page.locator("ol.checks.is-animating")).to_have_count(0)
        assert_checks(page, expected("expiry"))
    finally:
        context.close()


def test_works_without_javascript(browser: Browser, base_url: str) -> None:
    context = browser.new_context(base_url=base_url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/playground")
        expect(page.locator("button.copy")).to_have_count(2)
        expect(page.locator("button.copy:visible")).to_have_count(0)  # copy needs JavaScript: hidden
        page.locator(f"[data-move='{STOLEN.slug}']").click()
        expect(page).to_have_url(re.compile(rf"/playground/moves/{STOLEN.slug}\?.*#pg-result$"))
        assert_checks(page, expected("principal"))
        expect(page.locator("#pg-verdict")).to_contain_text("refused at Principal is the caller")
        # switches are a plain GET form
        page.get_by_label("Single use").uncheck()
        page.get_by_role("button", name="Apply switches").click()
        expect(page).to_have_url(re.compile(r"single_use=0"))
        page.locator(f"[data-move='{REPLAY.slug}']").click()
        expect(page.locator("#pg-verdict")).to_contain_text("deployed to staging")
        # the custom move, bad JSON: a 400 page that keeps what the learner typed
        page.get_by_label("Arguments (JSON)").fill("{oops")
        page.get_by_role("button", name="Send my retry").click()
        expect(page.locator("#pg-result [data-error]")).to_contain_text("Arguments is not valid JSON")
        expect(page.get_by_label("Arguments (JSON)")).to_have_value("{oops")
        # (no axe here: axe is a script, and this page has scripts switched off)
    finally:
        context.close()


def test_the_lesson_links_to_the_playground_which_plays_with_its_switches(page: Page) -> None:
    """The lesson no longer embeds the playground (it made the lesson 83,587 px long on a phone): its section
    links to the playground's own page, where a switch and a move work as they did in the lesson."""
    page.set_viewport_size({"width": 390, "height": 844})
    lesson = "/lessons/when-the-server-needs-input"
    page.goto(lesson + "#playground")
    expect(page.locator("#playground [data-playground]")).to_have_count(0)
    page.locator("#playground").get_by_role("link", name="Open the playground").click()
    expect(page).to_have_url(re.compile(r"/playground$"))
    widget = page.locator("[data-playground]")
    widget.get_by_label("Remove the signature check").check()
    expect(widget.locator(f"#move-{EDITED.slug} input[name='no_signature']")).to_have_value("1")
    expect(widget.get_by_label("Remove the signature check")).to_be_checked()
    widget.locator(f"[data-move='{EDITED.slug}']").click()
    expect(page.locator("#pg-verdict")).to_be_focused()
    expect(page.locator("#pg-verdict")).to_contain_text(f"deployed to {EDITED.edit_value}")
