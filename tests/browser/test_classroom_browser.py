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
from web.classroom.services import live_questions, room_options
from web.site.content import Question, load_course

MOVES = load_moves()
LESSON = load_course().lessons[0]  # the lesson a class is started on
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
    expect(presenter).to_have_url(f"/class/{code}/host")  # the presenter page left behind has a join code too
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
      const across = !getComputedStyle(el).writingMode.startsWith('vertical');  // else a line is a column
      const lines = new Set([...r.getClientRects()].filter(b => b.width > 0 && b.height > 0)
        .map(b => Math.round(across ? b.top : b.left)));
      if (lines.size > 1) out.push(el.tagName + ': ' + m[0]); } }
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


#: Screens a class is projected on: 4:3, 16:9 and 16:10, from 1024 to 1920 px wide.
PROJECTORS = [(1024, 768), (1280, 720), (1280, 800), (1440, 900), (1920, 1080)]
#: What the presenter needs on the screen without scrolling: the join code, the question with its answers and
#: explanation, the heatmap with who got through, and every control.
ON_SCREEN = ["[data-join-code]", "#tally-panel .q-prompt", "[data-tally]", "[data-explanation]",
             '[data-action="push-question"]', '[data-action="reveal"]', '[data-action="close-round"]',
             '[data-action="single-use-off"]', "[data-heatmap]", "[data-first-replay]", "#manage > summary",
             "a[download]", '[data-action="end-class"]']
#: The smallest type on the class screen, in CSS px.
SCREEN_MIN_PX = 16

FIT_JS = """([selectors, minPx]) => {
  const off = selectors.filter(s => { const e = document.querySelector(s); const r = e && e.getBoundingClientRect();
    return !r || !r.width || r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth; });
  const small = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!node.textContent.trim() || !el.getClientRects().length || el.closest('.visually-hidden, noscript')) continue;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < minPx) small.push(node.textContent.trim().slice(0, 40) + ' ' + px); }
  const se = document.scrollingElement;
  return {width: se.scrollWidth, height: se.scrollHeight, off, small}; }"""


def text_length(question: Question) -> int:
    return len(question.prompt) + sum(len(text) for _, text in room_options(question)) + len(question.explanation)


def test_the_presenters_screen_fits_every_projector_in_the_worst_case(
        browser: Browser, class_server: LiveServer, contexts: list[BrowserContext], axe: Axe) -> None:
    """Every question revealed with its explanation while the round is open and every move is in the heatmap:
    at each projector size the class screen scrolls neither way, everything in ON_SCREEN is inside the window
    and no text is under 16 px."""
    presenter = open_context(browser, class_server, contexts, viewport={"width": 1024, "height": 768})
    code = start_class(presenter)
    phones = [open_context(browser, class_server, contexts, viewport=PHONE) for _ in range(2)]
    for phone, name in zip(phones, ["Ada", "Grace"], strict=True):
        join(phone, code, name)
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

    questions = live_questions(LESSON)
    longest = max(questions, key=text_length)
    push, reveal = presenter.locator('[data-action="push-question"]'), presenter.locator('[data-action="reveal"]')
    for number, question in enumerate(questions, 1):
        presenter.set_viewport_size({"width": 1024, "height": 768})
        push.click()
        expect(presenter.locator("[data-tally]")).to_have_attribute("data-question", question.id)
        reveal.click()
        expect(reveal).to_be_disabled()
        expect(presenter.locator("[data-explanation]")).to_have_text(question.explanation)
        for width, height in PROJECTORS:
            presenter.set_viewport_size({"width": width, "height": height})
            fit = presenter.evaluate(FIT_JS, [ON_SCREEN, SCREEN_MIN_PX])
            assert fit == {"width": width, "height": height, "off": [], "small": []}, \
                f"question {number} ({question.id}) at {width}x{height}"
            if question is longest:
                assert broken_words(presenter) == [], f"{width}x{height}"
                # a check's title (read upwards) keeps whole words inside its header cell
                for th in heat.locator("thead th").all():
                    assert th.evaluate("e => e.scrollWidth <= e.clientWidth + 1"
                                       " && e.scrollHeight <= e.clientHeight + 1"), th.inner_text()
        if question is longest:
            assert number > 1
            presenter.set_viewport_size({"width": 1024, "height": 768})
            # from the keyboard: every stop of the tab order, round and round, is on the screen, and nothing
            # scrolls to show it
            reached = set()
            for _ in range(24):
                presenter.keyboard.press("Tab")
                stop = presenter.evaluate("""() => { const e = document.activeElement;
                  return e === document.body ? null : e.dataset.action || e.textContent.trim(); }""")
                if stop:
                    reached.add(stop)
                    expect(presenter.locator(":focus")).to_be_in_viewport(ratio=1)
            assert reached >= {"push-question", "close-round", "single-use-off", "Export results (CSV)",
                               "Manage learners", "end-class"}, reached
            assert presenter.evaluate("scrollX === 0 && scrollY === 0")
            for theme in ("light", "dark"):
                presenter.emulate_media(color_scheme=theme)
                assert_no_axe_violations(presenter, axe)
