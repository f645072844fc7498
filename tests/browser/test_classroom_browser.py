"""A live class in real browsers: a presenter and three learners, each in its own browser context.

The presenter starts the class from /demo, learners join on 390 px phones, the quiz question
reaches every phone and the tally, the heatmap and the first replay reach the presenter's screen
without a reload (a marker set on the page's window would vanish with one). The phone flow also
works with JavaScript switched off, and axe finds nothing on any of the pages.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from moves.catalog import load_moves
from tests.browser.conftest import BROWSER_TEST_CONFIG
from tests.browser.helpers import LiveServer, assert_no_axe_violations, serve
from tests.web.helpers import stopped_move

MOVES = load_moves()
STOLEN, EDITED, LATE = (stopped_move(check, MOVES) for check in ("principal", "signature", "expiry"))
REPLAY = stopped_move("single-use", MOVES)

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def class_server() -> Iterator[LiveServer]:
    from app import create_app

    with tempfile.TemporaryDirectory(prefix="mrtr-class-browser-") as tmp:
        config = {**BROWSER_TEST_CONFIG, "MRTR_CLASS_DB": str(Path(tmp) / "classroom.sqlite3"),
                  "MRTR_CLASS_STREAM_SECONDS": 20}
        with serve(create_app(config)) as live:
            yield live


@pytest.fixture
def contexts() -> Iterator[list[BrowserContext]]:
    """The browser contexts a test opened (one per person), closed at the end."""
    made: list[BrowserContext] = []
    yield made
    for context in made:
        context.close()


def open_context(browser: Browser, server: LiveServer, made: list[BrowserContext], **kwargs: object) -> Page:
    context = browser.new_context(base_url=server.url, reduced_motion="reduce", **kwargs)  # type: ignore[arg-type]
    made.append(context)
    return context.new_page()


def start_class(presenter: Page) -> str:
    presenter.goto("/demo")
    expect(presenter.locator('[data-action="start-class"]')).to_be_in_viewport()  # not inside a closed panel
    presenter.locator('[data-action="start-class"]').click()
    code = presenter.locator("[data-join-code]").first.get_attribute("data-join-code") or ""
    assert len(code) == 6
    expect(presenter.locator("[data-control-link]")).to_contain_text(f"/class/{code}/control/")
    presenter.locator('[data-action="open-host"]').click()
    expect(presenter.locator("[data-join-code]")).to_have_text(code)
    expect(presenter.locator("[data-control-link]")).to_have_count(0)  # shown once
    return code


BROKEN_WORDS_JS = """() => { const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el.getClientRects().length || el.closest('.visually-hidden, pre, code, noscript')) continue;
    for (const m of node.textContent.matchAll(/[^\\s/-]+[/-]?/g)) {  // a line may break after a hyphen or a slash
      const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
      const tops = new Set([...r.getClientRects()].filter(b => b.width > 0).map(b => Math.round(b.top)));
      if (tops.size > 1) out.push(el.tagName + ': ' + m[0]); } }
  return out; }"""


def broken_words(page: Page) -> list[str]:
    """Every word on the page that a line break cuts in two, as a person would see it."""
    return page.evaluate(BROKEN_WORDS_JS)


def mark(page: Page) -> None:
    """Tag the window: a reload would drop the tag."""
    page.evaluate("() => { window.__noReload = 'still here'; }")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("() => window.__noReload") == "still here"


def join(page: Page, code: str, nickname: str) -> None:
    page.goto(f"/j/{code}")
    expect(page.locator('input[name="code"]')).to_have_value(code)
    page.locator('input[name="nickname"]').fill(nickname)
    page.locator('[data-action="join"]').click()
    expect(page.locator("[data-nickname]")).to_have_text(nickname)


def test_a_live_class_from_start_to_attack_round(browser: Browser, class_server: LiveServer,
                                                 contexts: list[BrowserContext], axe: Axe) -> None:
    presenter = open_context(browser, class_server, contexts, viewport={"width": 1280, "height": 800})
    code = start_class(presenter)
    expect(presenter.locator("svg.qr")).to_be_visible()
    mark(presenter)

    names = ["Ada", "Grace", "Linus"]
    phones = [open_context(browser, class_server, contexts, viewport=PHONE) for _ in names]
    phones[0].goto(f"/j/{code}")
    assert_no_axe_violations(phones[0], axe)  # the join form
    for phone, name in zip(phones, names, strict=True):
        join(phone, code, name)
        expect(phone.locator("[data-waiting]")).to_be_visible()
        mark(phone)
    expect(presenter.locator("[data-learner-count]")).to_have_text("3")  # roster over SSE
    assert_not_reloaded(presenter)
    assert_no_axe_violations(phones[0], axe)

    # The quiz: the question reaches every phone without a reload.
    presenter.locator('[data-action="push-question"]').click()
    expect(presenter.locator("[data-tally] > li")).to_have_count(4)
    expect(presenter.locator('[data-action="push-question"]')).to_contain_text("Next question (2 of")
    expect(presenter.locator('[data-action="push-question"]')).to_be_focused()  # htmx kept the focus
    assert_not_reloaded(presenter)
    for phone in phones:
        expect(phone.locator("button[data-option]")).to_have_count(4)
        assert_not_reloaded(phone)
    for phone, option in zip(phones, ["c", "c", "a"], strict=True):
        phone.locator(f'button[data-option="{option}"]').click()
        expect(phone.locator("[data-my-answer]")).to_have_attribute("data-my-answer", option)
    tally = presenter.locator("[data-tally]")
    expect(presenter.locator("[data-answered]")).to_have_attribute("data-answered", "3")
    # the room sees how many answered, not the split: nobody follows the crowd before the reveal
    expect(tally.locator("[data-count]")).to_have_count(0)
    expect(tally.locator("progress")).to_have_count(0)
    assert_not_reloaded(presenter)
    assert phones[2].locator("[data-count]").count() == 0  # no one's tally on a phone before the reveal
    assert phones[2].evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert_no_axe_violations(presenter, axe)
    assert_no_axe_violations(phones[1], axe)

    presenter.locator('[data-action="reveal"]').click()
    expect(presenter.locator('[data-tally] [data-correct="true"]')).to_have_attribute("data-option", "c")
    expect(tally.locator('[data-option="c"]')).to_have_attribute("data-count", "2")
    expect(tally.locator('[data-option="a"]')).to_have_attribute("data-count", "1")
    expect(tally.locator('[data-option="b"]')).to_have_attribute("data-count", "0")
    assert_not_reloaded(presenter)  # the controls post with htmx: the live stream stays up
    for phone in phones:
        expect(phone.locator("[data-revealed]")).to_contain_text("The answer: C.")
    expect(phones[0].locator("[data-revealed]")).to_contain_text("right")
    expect(phones[2].locator("[data-revealed]")).to_contain_text("not this time")
    # a wrong answer is not drawn in the success colour
    ok = phones[0].locator(".mine-right").evaluate("e => getComputedStyle(e).color")
    wrong = phones[2].locator(".mine-wrong").evaluate("e => getComputedStyle(e).color")
    assert ok != wrong
    assert wrong == phones[2].locator(".mine-wrong").evaluate(
        "e => { const p = document.createElement('b'); p.style.color = 'var(--bad)'; document.body.append(p);"
        " const c = getComputedStyle(p).color; p.remove(); return c; }")

    # The attack round: moves from the phones, the heatmap live on the screen.
    presenter.locator('[data-action="open-round"]').click()
    mark(presenter)
    for phone in phones:
        expect(phone.locator("button[data-move]")).to_have_count(len(MOVES))
    heat = presenter.locator("[data-heatmap]")
    for phone, move in zip(phones, (STOLEN, EDITED, REPLAY), strict=True):
        phone.locator(f'button[data-move="{move.slug}"]').click()
        expect(phone.locator("[data-stopped-at]")).to_have_attribute("data-stopped-at", move.stops_at)
        expect(phone.locator("#attempt-title")).to_contain_text(move.title)
        expect(phone.locator("#attempt-title")).to_be_in_viewport()  # not below the list of moves
        expect(heat.locator(f'td[data-move="{move.slug}"][data-check="{move.stops_at}"]')).to_have_attribute(
            "data-count", "1")
    assert_not_reloaded(presenter)
    for phone in phones:  # the round on a phone: no word cut in two, no sideways scroll
        assert broken_words(phone) == []
        assert phone.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    assert_no_axe_violations(presenter, axe)
    assert_no_axe_violations(phones[2], axe)

    presenter.locator('[data-action="single-use-off"]').click()
    mark(presenter)
    expect(phones[1].locator(".my-round")).to_contain_text("Single use is off")
    phones[1].locator(f'button[data-move="{REPLAY.slug}"]').click()
    expect(phones[1].locator("[data-first-replay-me]")).to_be_visible()
    expect(presenter.locator("[data-first-replay]")).to_have_attribute("data-first-replay", "Grace")
    expect(heat.locator(f'td[data-move="{REPLAY.slug}"][data-check="through"]')).to_have_attribute("data-count", "1")
    assert_not_reloaded(presenter)


def _no_scripts(route: Route) -> None:
    route.abort()


def test_the_phone_works_without_javascript_at_390px(browser: Browser, class_server: LiveServer,
                                                     contexts: list[BrowserContext], axe: Axe) -> None:
    presenter = open_context(browser, class_server, contexts)
    code = start_class(presenter)
    phone = open_context(browser, class_server, contexts, viewport=PHONE, java_script_enabled=False)
    join(phone, code, "Nojs")
    expect(phone.locator("[data-waiting]")).to_be_visible()
    presenter.locator('[data-action="push-question"]').click()
    phone.get_by_role("link", name="Check for the next step").click()
    phone.locator('button[data-option="b"]').click()
    expect(phone.locator("[data-my-answer]")).to_have_attribute("data-my-answer", "b")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    presenter.reload()
    expect(presenter.locator("[data-answered]")).to_have_attribute("data-answered", "1")
    presenter.locator('[data-action="open-round"]').click()
    phone.reload()
    phone.locator(f'button[data-move="{LATE.slug}"]').click()
    expect(phone.locator("[data-stopped-at]")).to_have_attribute("data-stopped-at", "expiry")

    # The same pages as a no-JS browser renders them, checked by axe (scripts refused, axe injected).
    checked = open_context(browser, class_server, contexts, viewport=PHONE)
    checked.context.route("**/*.js", _no_scripts)
    checked.goto(f"/join?code={code}")
    assert_no_axe_violations(checked, axe)
    checked.locator('input[name="nickname"]').fill("Checked")
    checked.locator('[data-action="join"]').click()
    expect(checked.locator("button[data-option]")).to_have_count(4)  # the open question
    expect(checked.locator("button[data-move]")).to_have_count(len(MOVES))  # and the open round
    assert checked.evaluate("() => typeof window.htmx") == "undefined"
    assert checked.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert_no_axe_violations(checked, axe)


def test_the_presenters_screen_fits_a_projector_without_scrolling(browser: Browser, class_server: LiveServer,
                                                                  contexts: list[BrowserContext], axe: Axe) -> None:
    presenter = open_context(browser, class_server, contexts, viewport={"width": 1280, "height": 720})
    code = start_class(presenter)
    phones = [open_context(browser, class_server, contexts, viewport=PHONE) for _ in range(2)]
    for phone, name in zip(phones, ["Ada", "Grace"], strict=True):
        join(phone, code, name)
    presenter.locator('[data-action="push-question"]').click()
    for phone in phones:
        phone.locator('button[data-option="a"]').click()
    presenter.locator('[data-action="reveal"]').click()
    presenter.locator('[data-action="open-round"]').click()
    for phone in phones:  # every move once, so every row of the heatmap holds a number
        expect(phone.locator("button[data-move]")).to_have_count(len(MOVES))
    for i, move in enumerate(MOVES):
        phone = phones[i % 2]
        phone.locator(f'button[data-move="{move.slug}"]').click()
        expect(phone.locator("#attempt-result [data-attempt]")).to_have_attribute("data-attempt", move.slug)
    heat = presenter.locator("[data-heatmap]")
    expect(heat).to_have_attribute("data-total", str(len(MOVES)))
    expect(presenter.locator("#manage")).not_to_have_attribute("open", "")  # "Manage learners" stays collapsed
    for what in ("[data-heatmap]", "[data-tally]", '[data-action="end-class"]', "text=Export results (CSV)"):
        expect(presenter.locator(what)).to_be_in_viewport(ratio=1)
    assert presenter.evaluate("document.scrollingElement.scrollHeight") <= 720
    assert presenter.evaluate("document.scrollingElement.scrollWidth") <= 1280
    # the header of each check reads as whole words ("Not expired", never "Not expire / d")
    for th in heat.locator("thead th").all():
        words = th.inner_text().split()
        assert all(th.evaluate("(e, w) => e.scrollWidth <= e.clientWidth + 1", w) for w in words)
    assert broken_words(presenter) == []

    # A 4:3 projector: the round (its controls, the heatmap and who got through) stays on the screen, nothing
    # scrolls sideways, and no word is cut in two, a move's name included ("Hone / st retry" it was).
    presenter.set_viewport_size({"width": 1024, "height": 768})
    for what in ("#round-title", '[data-action="close-round"]', "[data-heatmap]", "[data-first-replay]",
                 "[data-join-code]", "#tally-panel .q-prompt"):
        expect(presenter.locator(what)).to_be_in_viewport(ratio=1)
    assert presenter.evaluate("document.scrollingElement.scrollWidth") <= 1024
    assert broken_words(presenter) == []
    # 1920x1080: the larger type gets a wider quiz column instead of running below the screen
    presenter.set_viewport_size({"width": 1920, "height": 1080})
    expect(presenter.locator('[data-action="end-class"]')).to_be_in_viewport(ratio=1)
    assert presenter.evaluate("document.scrollingElement.scrollHeight") <= 1080
    assert presenter.evaluate("document.scrollingElement.scrollWidth") <= 1920
    assert broken_words(presenter) == []
    presenter.set_viewport_size({"width": 1280, "height": 720})
    assert_no_axe_violations(presenter, axe)
