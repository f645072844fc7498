"""A drawn question in a live class, in real browsers: a presenter and three 390 px phones (one without
JavaScript), each phone with its own draw, graded on it; axe clean in both themes. Its own module (its own class
server): the class browser tests already open the three classes an address may open in an hour."""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, expect

from tests.browser.helpers import LiveServer, assert_no_axe_violations
from tests.browser.test_classroom_browser import (
    LESSON,
    PHONE,
    class_server,
    contexts,
    join,
    open_context,
    start_class,
)
from web.classroom.services import is_drawn, live_questions

__all__ = ["class_server", "contexts"]  # the fixtures: this module gets its own class server (module scope)


def test_a_drawn_question_gives_each_phone_its_own_draw_and_grades_it(
        browser: Browser, class_server: LiveServer, contexts: list[BrowserContext], axe: Axe) -> None:
    """A drawn item pushed to three 390 px phones (one without JavaScript): each shows its own situation, each
    answer is graded on the phone's own draw, and the presenter's count of right answers agrees with the phones."""
    presenter = open_context(browser, class_server, contexts, viewport={"width": 1280, "height": 800})
    code = start_class(presenter)
    phones = [open_context(browser, class_server, contexts, viewport=PHONE) for _ in range(2)]
    phones.append(open_context(browser, class_server, contexts, viewport=PHONE, java_script_enabled=False))
    for phone, name in zip(phones, ["Ada", "Grace", "Nojs"], strict=True):
        join(phone, code, name)
    questions = live_questions(LESSON)
    drawn = next(q for q in questions if is_drawn(q))
    push = presenter.locator('[data-action="push-question"]')
    for number, question in enumerate(questions[:questions.index(drawn) + 1], 1):
        push.click()
        # the page the push led to (its button names the next number), not the old page the stream updated
        expect(push).to_contain_text(f"({number + 1} of {len(questions)})")
        expect(presenter.locator("[data-tally]")).to_have_attribute("data-question", question.id)
    phones[2].reload()  # without JavaScript the phone is reloaded (it refreshes itself while waiting)
    payloads = []
    for phone in phones:
        expect(phone.locator("[data-draw]")).to_be_visible()
        payloads.append(phone.get_by_label("The ticket's readable payload").inner_text())
        assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert len(set(payloads)) == 3  # a draw per phone
    for theme in ("light", "dark"):
        phones[0].emulate_media(color_scheme=theme)
        assert_no_axe_violations(phones[0], axe)
    picks = ["completed", "refused-expiry", "refused-principal"]
    for phone, pick in zip(phones, picks, strict=True):
        phone.locator(f'button[data-option="{pick}"]').click()
        expect(phone.locator("[data-my-answer]")).to_have_attribute("data-my-answer", pick)
    expect(presenter.locator("[data-answered]")).to_have_attribute("data-answered", "3")
    presenter.locator('[data-action="reveal"]').click()
    phones[2].reload()
    right = 0
    for phone, pick in zip(phones, picks, strict=True):
        revealed = phone.locator("[data-revealed]")
        expect(revealed).to_be_visible()
        was_right = revealed.get_attribute("data-right") == pick
        expect(revealed).to_contain_text("✓ right" if was_right else "✗ not this time")
        right += was_right
    expect(presenter.locator(".tally-total [data-right]")).to_have_attribute("data-right", str(right))
    for pick in picks:
        expect(presenter.locator(f'[data-tally] li[data-option="{pick}"]')).to_have_attribute("data-count", "1")
    for theme in ("light", "dark"):
        phones[1].emulate_media(color_scheme=theme)
        assert_no_axe_violations(phones[1], axe)
        presenter.emulate_media(color_scheme=theme)
        assert_no_axe_violations(presenter, axe)
